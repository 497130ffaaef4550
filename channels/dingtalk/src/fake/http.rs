//! The fake's token, connection-open, robot-send and session-webhook routes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::records::{EmotionRecord, Fault, OpenRecord, SentRecord};
use super::state::{Refusal, Shared, api_error, errcode, fault_response, ok};
use crate::call::Call;

type S = State<Arc<Shared>>;

/// `msgKey`s and the `msgParam` fields each requires (spec §4.3).
const MSG_KEYS: &[(&str, &[&str])] = &[
    ("sampleText", &["content"]),
    ("sampleMarkdown", &["title", "text"]),
    ("sampleImageMsg", &["photoURL"]),
    ("sampleLink", &["text", "title", "messageUrl"]),
    (
        "sampleActionCard",
        &["title", "text", "singleTitle", "singleURL"],
    ),
    (
        "sampleActionCard2",
        &[
            "title",
            "text",
            "actionTitle1",
            "actionURL1",
            "actionTitle2",
            "actionURL2",
        ],
    ),
    ("sampleFile", &["mediaId", "fileName", "fileType"]),
    ("sampleAudio", &["mediaId", "duration"]),
    (
        "sampleVideo",
        &["videoMediaId", "videoType", "picMediaId", "duration"],
    ),
];

/// Group `msgParam` limit in bytes (spec §4.3).
const GROUP_PARAM_MAX: usize = 15_000;

/// True when the request carries a live access token.
pub(crate) fn token_ok(sh: &Shared, headers: &HeaderMap) -> bool {
    let t = headers
        .get("x-acs-dingtalk-access-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let st = sh.lock();
    st.tokens.get(t).is_some_and(|exp| Instant::now() < *exp)
}

/// 401 `InvalidAuthentication` (spec §5, §7.17).
pub(crate) fn bad_token() -> Response {
    api_error(401, "InvalidAuthentication", "不合法的access_token")
}

/// The common opening of a `/v1.0` route: token, then a set fault, then the QPS window.
/// `Err` is the response to send; `Ok` carries a fault the route handles itself.
pub(crate) async fn gate(
    sh: &Shared,
    headers: &HeaderMap,
    call: Call,
) -> Result<Option<Fault>, Response> {
    sh.lock().count(call);
    if !token_ok(sh, headers) {
        return Err(bad_token());
    }
    let fault = sh.lock().fault(call);
    if let Some(f) = &fault
        && let Some(r) = fault_response(f).await
    {
        return Err(r);
    }
    if sh.lock().over_qps(call, sh.config.qps) {
        return Err(api_error(
            403,
            "Forbidden.AccessDenied.QpsLimitForApi",
            "api qps limit exceeded, retry after 1s",
        ));
    }
    Ok(fault)
}

/// `POST /v1.0/oauth2/accessToken`: JSON only; the same token while it is valid.
pub(crate) async fn token(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    let v: Option<Value> = serde_json::from_slice(&body).ok();
    let fault = {
        let mut st = sh.lock();
        st.token_requests += 1;
        st.count(Call::Token);
        st.fault(Call::Token)
    };
    let Some(v) = v.filter(|_| json_body) else {
        return api_error(400, "MissingBody", "body is mandatory");
    };
    if let Some(f) = fault {
        return fault_response(&f).await.unwrap_or_else(bad_token);
    }
    let mut st = sh.lock();
    let c = &sh.config;
    if v["appKey"] != c.client_id.as_str() || v["appSecret"] != c.client_secret.as_str() {
        return api_error(
            400,
            "invalidClientIdOrSecret",
            "无效的clientId或者clientSecret",
        );
    }
    let now = Instant::now();
    let (tok, exp) = match st.current_token.clone().filter(|(_, e)| now < *e) {
        // Asking again while valid returns the same token and extends it (spec §1.2).
        Some((t, _)) => (t, now + c.token_lifetime),
        None => (
            format!("tok-{}-{:08x}", st.next(), rand::random::<u32>()),
            now + c.token_lifetime,
        ),
    };
    st.tokens.insert(tok.clone(), exp);
    st.current_token = Some((tok.clone(), exp));
    ok(json!({"accessToken": tok, "expireIn": c.token_lifetime.as_secs()}))
}

/// `POST /v1.0/gateway/connections/open`: credentials in the body, XML without the Accept
/// header, a one-time ticket out.
pub(crate) async fn open(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    let accept_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"));
    if !accept_json {
        // The server's default answer is XML (Node SDK note, spec §1.3).
        let xml = "<?xml version=\"1.0\"?><result><endpoint/><ticket/></result>";
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/xml")],
            xml,
        )
            .into_response();
    }
    let fault = {
        let mut st = sh.lock();
        st.count(Call::OpenConnection);
        st.fault(Call::OpenConnection)
    };
    if let Some(f) = &fault
        && let Some(r) = fault_response(f).await
    {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let c = &sh.config;
    if v["clientId"] != c.client_id.as_str() || v["clientSecret"] != c.client_secret.as_str() {
        return api_error(401, "authFailed", "鉴权失败");
    }
    let Some(subs) = subscriptions(&v) else {
        return api_error(400, "invalidParameter", "subscriptions is invalid");
    };
    let mut st = sh.lock();
    st.opens.push(OpenRecord {
        ua: v["ua"].as_str().unwrap_or_default().to_string(),
        local_ip: v["localIp"].as_str().map(str::to_string),
        subscriptions: subs.clone(),
        accept_json,
    });
    let ticket = format!("tk-{}-{:016x}", st.next(), rand::random::<u64>());
    let topics = subs.into_iter().map(|(_, t)| t).collect();
    st.tickets
        .insert(ticket.clone(), (Instant::now(), false, topics));
    let endpoint = format!("{}/connect", sh.base_url.replacen("http", "ws", 1));
    ok(json!({"endpoint": endpoint, "ticket": ticket}))
}

/// `(type, topic)` pairs, or `None` when missing, empty or malformed (EVENT only with `*`).
fn subscriptions(v: &Value) -> Option<Vec<(String, String)>> {
    let list = v.get("subscriptions")?.as_array()?;
    let mut out = Vec::new();
    for s in list {
        let kind = s.get("type")?.as_str()?;
        let topic = s.get("topic")?.as_str()?;
        let valid = match kind {
            "CALLBACK" => !topic.is_empty(),
            "EVENT" => topic == "*",
            "SYSTEM" => true,
            _ => false,
        };
        if !valid {
            return None;
        }
        out.push((kind.to_string(), topic.to_string()));
    }
    (!out.is_empty()).then_some(out)
}

/// Checks `msgKey` and `msgParam` (a string of JSON with the key's fields); the parsed param.
fn check_param(v: &Value) -> Result<Value, Refusal> {
    let key = v["msgKey"].as_str().unwrap_or_default();
    let Some((_, fields)) = MSG_KEYS.iter().find(|(k, _)| *k == key) else {
        return Err(Refusal(
            400,
            "invalidParameter.msgKey.invalid",
            "msgKey is invalid",
        ));
    };
    let filled = |p: &Value| {
        fields.iter().all(|f| {
            p.get(*f)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        })
    };
    v["msgParam"]
        .as_str()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .filter(filled)
        .ok_or(Refusal(
            400,
            "invalidParameter.msgParam.invalid",
            "msgParam is invalid",
        ))
}

fn check_robot(sh: &Shared, v: &Value) -> Result<(), Refusal> {
    match v["robotCode"].as_str() {
        None | Some("") => Err(Refusal(
            400,
            "invalidParameter.robotCode.empty",
            "robotCode is empty",
        )),
        Some(r) if r != sh.config.client_id => {
            Err(Refusal(400, "resource.not.found", "robot 不存在"))
        }
        Some(_) => Ok(()),
    }
}

/// Counts a paid call; `Err` once the monthly quota knob is spent (its code is unconfirmed).
pub(crate) fn spend_quota(sh: &Shared) -> Result<(), Refusal> {
    let mut st = sh.lock();
    match st.quota_left.as_mut() {
        Some(0) => Err(Refusal(
            403,
            "Forbidden.ExceedQuota",
            "api call quota exceeded this month",
        )),
        Some(n) => {
            *n -= 1;
            Ok(())
        }
        None => Ok(()),
    }
}

/// `POST /v1.0/robot/oToMessages/batchSend`.
pub(crate) async fn batch_send(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    let fault = match gate(&sh, &headers, Call::BatchSend).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let checked = check_robot(&sh, &v).and_then(|_| check_param(&v));
    let param = match checked {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let users: Vec<String> = v["userIds"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if users.is_empty() || users.len() > 20 {
        return api_error(
            400,
            "invalidParameter.userIds.size",
            "userIds must hold 1 to 20 ids",
        );
    }
    if let Err(r) = spend_quota(&sh) {
        return r.into_response();
    }
    let (valid, invalid): (Vec<String>, Vec<String>) =
        users.into_iter().partition(|u| sh.config.staff.contains(u));
    let flow = if fault == Some(Fault::FlowControlled) {
        valid.clone()
    } else {
        vec![]
    };
    let mut st = sh.lock();
    let key = format!("pqk-{}", st.next());
    let delivered: Vec<String> = valid.into_iter().filter(|u| !flow.contains(u)).collect();
    if !delivered.is_empty() {
        st.sent.push(SentRecord {
            call: Call::BatchSend,
            target: delivered,
            msg_key: v["msgKey"].as_str().unwrap_or_default().to_string(),
            param,
            process_query_key: key.clone(),
        });
    }
    ok(
        json!({"processQueryKey": key, "invalidStaffIdList": invalid,
              "flowControlledStaffIdList": flow, "filteredStaffIdList": []}),
    )
}

/// `POST /v1.0/robot/groupMessages/send`.
pub(crate) async fn group_send(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = gate(&sh, &headers, Call::GroupSend).await {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let param = match check_robot(&sh, &v).and_then(|_| check_param(&v)) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let group = v["openConversationId"].as_str().unwrap_or_default();
    if !sh.config.groups.iter().any(|g| g == group) {
        return api_error(
            400,
            "invalidParameter.openConversationId.invalid",
            "openConversationId is invalid",
        );
    }
    if v["msgParam"].as_str().map_or(0, str::len) > GROUP_PARAM_MAX {
        return api_error(
            400,
            "invalidParameter.msgParam.length",
            "msgParam is too long",
        );
    }
    if let Err(r) = spend_quota(&sh) {
        return r.into_response();
    }
    let mut st = sh.lock();
    let key = format!("pqk-{}", st.next());
    st.sent.push(SentRecord {
        call: Call::GroupSend,
        target: vec![group.to_string()],
        msg_key: v["msgKey"].as_str().unwrap_or_default().to_string(),
        param,
        process_query_key: key.clone(),
    });
    ok(json!({"processQueryKey": key}))
}

/// `POST /robot/sendBySession?session=…`: text and markdown only, 300001 once expired.
pub(crate) async fn webhook(
    State(sh): S,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let session = q.get("session").cloned().unwrap_or_default();
    let fault = {
        let mut st = sh.lock();
        st.count(Call::SessionWebhook);
        st.fault(Call::SessionWebhook)
    };
    if let Some(f) = &fault
        && let Some(r) = fault_response(f).await
    {
        return r;
    }
    let live = sh
        .lock()
        .webhooks
        .get(&session)
        .is_some_and(|e| Instant::now() < *e);
    if !live {
        return errcode(300001, "session 不存在");
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let msgtype = v["msgtype"].as_str().unwrap_or_default();
    let valid = match msgtype {
        "text" => v
            .pointer("/text/content")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty()),
        "markdown" => ["/markdown/title", "/markdown/text"].iter().all(|p| {
            v.pointer(p)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        }),
        // Cards and media cannot go through a session webhook (spec §4.1); code unconfirmed.
        _ => false,
    };
    if !valid {
        return errcode(40035, "不合法的参数");
    }
    sh.lock().sent.push(SentRecord {
        call: Call::SessionWebhook,
        target: vec![session],
        msg_key: msgtype.to_string(),
        param: v,
        process_query_key: String::new(),
    });
    ok(json!({"errcode": 0, "errmsg": "ok"}))
}

/// `POST /v1.0/robot/emotion/reply` and `/recall`: accepted and recorded (spec §7.16).
async fn emotion(sh: &Shared, headers: &HeaderMap, body: &[u8], recall: bool) -> Response {
    if let Err(r) = gate(sh, headers, Call::Emotion).await {
        return r;
    }
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if let Err(r) = check_robot(sh, &v) {
        return r.into_response();
    }
    let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    let (msg_id, conversation_id, name) = (
        field("openMsgId"),
        field("openConversationId"),
        field("emotionName"),
    );
    if msg_id.is_empty() || conversation_id.is_empty() || name.is_empty() {
        return api_error(
            400,
            "invalidParameter",
            "openMsgId, openConversationId and emotionName are required",
        );
    }
    sh.lock().emotions.push(EmotionRecord {
        recall,
        msg_id,
        conversation_id,
        name,
    });
    ok(json!({"success": true, "result": true}))
}

/// Puts a reaction.
pub(crate) async fn emotion_reply(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    emotion(&sh, &headers, &body, false).await
}

/// Recalls a reaction.
pub(crate) async fn emotion_recall(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    emotion(&sh, &headers, &body, true).await
}
