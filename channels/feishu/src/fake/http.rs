//! The fake's HTTP routes: token, endpoint discovery, IM messages, card patch, bot and app info.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::records::{EndpointFailure, PatchRecord, RateLimitStyle, SentRecord};
use super::reply::{Refusal, authorize, err, ok, reply};
use super::state::{Shared, Stored};

type S = State<Arc<Shared>>;

const HALF_HOUR: Duration = Duration::from_secs(1800);
const UUID_TTL: Duration = Duration::from_secs(3600);
/// Only messages sent within this window can be patched.
const PATCH_WINDOW: Duration = Duration::from_secs(14 * 24 * 3600);
/// Patches per message per rate window.
const PATCH_QPS: usize = 5;

pub(crate) async fn token(State(sh): S, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut st = sh.lock();
    st.token_requests += 1;
    if v.get("app_id").and_then(Value::as_str) != Some(sh.config.app_id.as_str()) {
        return err(10003, "invalid param");
    }
    if st.secret_refused
        || v.get("app_secret").and_then(Value::as_str) != Some(sh.config.app_secret.as_str())
    {
        return err(10014, "app secret invalid");
    }
    let now = Instant::now();
    // Same token while more than 30 min are left, as the real server does.
    let reuse = st
        .token
        .as_ref()
        .filter(|(_, exp)| exp.saturating_duration_since(now) >= HALF_HOUR);
    let (tok, exp) = match reuse {
        Some((t, e)) => (t.clone(), *e),
        None => {
            let t = format!("t-fake{}", st.next());
            let e = now + sh.config.token_expire;
            st.valid_tokens.insert(t.clone(), e);
            st.token = Some((t.clone(), e));
            (t, e)
        }
    };
    let expire = exp.saturating_duration_since(now).as_secs();
    reply(
        StatusCode::OK,
        json!({"code": 0, "msg": "ok", "tenant_access_token": tok, "expire": expire}),
    )
}

pub(crate) async fn endpoint(State(sh): S, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut st = sh.lock();
    st.endpoint_requests += 1;
    match st.endpoint_failure {
        Some(EndpointFailure::Http500) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response();
        }
        Some(EndpointFailure::Code(c)) => {
            return reply(StatusCode::OK, json!({"code": c, "msg": "fake failure"}));
        }
        None => {}
    }
    let creds_ok = v.get("AppID").and_then(Value::as_str) == Some(sh.config.app_id.as_str())
        && v.get("AppSecret").and_then(Value::as_str) == Some(sh.config.app_secret.as_str());
    if !creds_ok {
        return reply(
            StatusCode::OK,
            json!({"code": 1000040345, "msg": "system busy"}),
        );
    }
    let n = st.next();
    let ticket = format!("tk-{n}-{}", rand::random::<u32>());
    st.tickets.insert(ticket.clone(), false);
    let url = format!(
        "{}/ws/v2?device_id=dev-{n}&service_id={}&access_key=ak-{n}&ticket={ticket}&aid=1&fpid=1",
        sh.base_url.replacen("http", "ws", 1),
        sh.config.service_id
    );
    reply(
        StatusCode::OK,
        json!({"code": 0, "msg": "", "data": {"URL": url, "ClientConfig": sh.config.client_config}}),
    )
}

/// Request-size limit of a message type (bytes of the whole request body).
fn size_limit(msg_type: &str) -> usize {
    if msg_type == "text" {
        150 * 1024
    } else {
        30 * 1024
    }
}

struct NewMessage {
    msg_type: String,
    content: Value,
    uuid: Option<String>,
}

/// Validates a send/reply body.
fn parse_new(body: &[u8]) -> Result<(Value, NewMessage), Refusal> {
    let v: Value =
        serde_json::from_slice(body).map_err(|_| (99992402, "field validation failed"))?;
    let msg_type = v
        .get("msg_type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if ![
        "text",
        "post",
        "interactive",
        "image",
        "file",
        "audio",
        "media",
        "share_chat",
        "share_user",
    ]
    .contains(&msg_type.as_str())
    {
        return Err((230001, "invalid msg_type"));
    }
    if body.len() > size_limit(&msg_type) {
        return Err((230025, "message content too long"));
    }
    let content = v
        .get("content")
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .filter(Value::is_object)
        .ok_or((230001, "content must be a JSON object encoded as a string"))?;
    let uuid = v
        .get("uuid")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from);
    Ok((
        v,
        NewMessage {
            msg_type,
            content,
            uuid,
        },
    ))
}

fn rate_limited(sh: &Shared, reset: Duration) -> Response {
    match sh.config.rate_limit {
        RateLimitStyle::Code230020 => err(230020, "frequency limit"),
        RateLimitStyle::Http429 => {
            // Whole seconds on the real server; sub-second windows keep their fraction.
            let secs = format!("{}", (reset.as_secs_f64() * 1000.0).ceil() / 1000.0);
            let mut r = reply(
                StatusCode::TOO_MANY_REQUESTS,
                json!({"code": 99991400, "msg": "request trigger frequency limit"}),
            );
            let h = r.headers_mut();
            h.insert("x-ogw-ratelimit-limit", sh.config.qps_per_receiver.into());
            if let Ok(v) = secs.parse() {
                h.insert("x-ogw-ratelimit-reset", v);
            }
            r
        }
    }
}

/// Stores a new message after dedupe and rate checks; returns the response.
fn store_message(
    sh: &Shared,
    chat_id: String,
    receive: (String, String),
    new: NewMessage,
    reply_to: Option<(String, bool)>,
) -> Response {
    let now = Instant::now();
    let mut st = sh.lock();
    st.uuids.retain(|_, (_, t)| *t + UUID_TTL > now);
    if let Some(u) = &new.uuid
        && let Some((data, _)) = st.uuids.get(u)
    {
        return ok(data.clone());
    }
    if let Err((code, msg)) = super::media::check_content(&st.media, &new.msg_type, &new.content) {
        return err(code, msg);
    }
    if let Err(reset) = st.rate_check(
        &chat_id,
        sh.config.qps_per_receiver,
        sh.config.qps_window,
        now,
    ) {
        drop(st);
        return rate_limited(sh, reset);
    }
    let message_id = format!("om_fake{}", st.next());
    if new.msg_type == "interactive"
        && let Some(card_id) = super::cardkit::entity_of(&new.content)
        && let Err((code, msg)) = st.cardkit.send(card_id, &message_id)
    {
        return err(code, msg);
    }
    let thread_id = reply_to
        .as_ref()
        .filter(|(_, t)| *t)
        .map(|_| format!("omt_{message_id}"));
    let data = json!({
        "message_id": message_id,
        "root_id": reply_to.as_ref().map(|r| r.0.clone()),
        "parent_id": reply_to.as_ref().map(|r| r.0.clone()),
        "thread_id": thread_id,
        "msg_type": new.msg_type,
        "create_time": super::state::now_ms().to_string(),
        "update_time": super::state::now_ms().to_string(),
        "deleted": false,
        "updated": false,
        "chat_id": chat_id,
        "sender": {"id": sh.config.app_id, "id_type": "app_id", "sender_type": "app", "tenant_key": "fake-tenant"},
        "body": {"content": new.content.to_string()},
    });
    if let Some(u) = &new.uuid {
        st.uuids.insert(u.clone(), (data.clone(), now));
    }
    st.messages.insert(
        message_id.clone(),
        Stored {
            chat_id: chat_id.clone(),
            msg_type: new.msg_type.clone(),
            content: new.content.clone(),
            by_bot: true,
            created: now,
            aged: Duration::ZERO,
            recalled: false,
        },
    );
    st.sent.push(SentRecord {
        message_id,
        receive_id_type: receive.0,
        receive_id: receive.1,
        chat_id,
        msg_type: new.msg_type,
        content: new.content,
        uuid: new.uuid,
        reply_to,
    });
    ok(data)
}

/// A 500 (plain text, like a gateway's) while the test asks for failed sends.
fn failing_send(sh: &Shared) -> Option<Response> {
    let mut st = sh.lock();
    (st.fail_sends > 0).then(|| {
        st.fail_sends -= 1;
        (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response()
    })
}

pub(crate) async fn send(
    State(sh): S,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = failing_send(&sh) {
        return r;
    }
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    let id_type = q.get("receive_id_type").cloned().unwrap_or_default();
    if !["open_id", "union_id", "user_id", "email", "chat_id"].contains(&id_type.as_str()) {
        return err(99992402, "receive_id_type invalid");
    }
    let (v, new) = match parse_new(&body) {
        Ok(p) => p,
        Err((code, msg)) => return err(code, msg),
    };
    let Some(receive_id) = v
        .get("receive_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return err(99992402, "receive_id required");
    };
    let chat_id = if id_type == "chat_id" {
        receive_id.to_string()
    } else {
        format!("oc_p2p_{receive_id}")
    };
    let response = store_message(&sh, chat_id, (id_type, receive_id.to_string()), new, None);
    withheld_if_set(&sh, response).await
}

/// Holds a successful send's response for good while the test says so: the message is
/// delivered, the client never learns it (it resends under the same `uuid`).
async fn withheld_if_set(sh: &Shared, response: Response) -> Response {
    if response.status().is_success() && sh.lock().withhold_send_responses {
        // Dropped with the connection when the client goes away.
        std::future::pending::<()>().await;
    }
    response
}

pub(crate) async fn reply_to(
    State(sh): S,
    Path(parent): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = failing_send(&sh) {
        return r;
    }
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    let (v, new) = match parse_new(&body) {
        Ok(p) => p,
        Err((code, msg)) => return err(code, msg),
    };
    let Some(chat_id) = sh
        .lock()
        .messages
        .get(&parent)
        .filter(|m| !m.recalled)
        .map(|m| m.chat_id.clone())
    else {
        return err(230011, "the message has been recalled or does not exist");
    };
    let in_thread = v
        .get("reply_in_thread")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let response = store_message(
        &sh,
        chat_id,
        ("reply".into(), parent.clone()),
        new,
        Some((parent, in_thread)),
    );
    withheld_if_set(&sh, response).await
}

pub(crate) async fn patch(
    State(sh): S,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    {
        let mut st = sh.lock();
        st.patch_requests += 1;
        if st.fail_patches > 0 {
            st.fail_patches -= 1;
            return (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response();
        }
    }
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    let card = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
        v.get("content")?
            .as_str()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
    });
    let Some(card) = card else {
        return err(230001, "content must be a card JSON string");
    };
    if body.len() > size_limit("interactive") {
        return err(230025, "message content too long");
    }
    let mut st = sh.lock();
    let now = Instant::now();
    if let Err(reset) = st.rate_check(&format!("patch:{id}"), PATCH_QPS, sh.config.qps_window, now)
    {
        drop(st);
        return rate_limited(sh.as_ref(), reset);
    }
    match apply_card(&mut st, &id, card) {
        Ok(()) => ok(json!({})),
        Err((code, msg)) => err(code, msg),
    }
}

/// Replaces a stored card the way the platform allows: a card the app sent, not recalled, at
/// most 14 days old, declaring `update_multi` before and after. (The platform's codes for "not
/// the app's message" and "too old" are unconfirmed; 230001 stands in for both.)
pub(crate) fn apply_card(
    st: &mut super::state::State,
    id: &str,
    card: Value,
) -> Result<(), (i64, &'static str)> {
    let Some(m) = st.messages.get_mut(id) else {
        return Err((230011, "message not found"));
    };
    let multi =
        |c: &Value| c.pointer("/config/update_multi").and_then(Value::as_bool) == Some(true);
    if m.recalled {
        return Err((230011, "the message has been recalled"));
    }
    if !m.by_bot {
        return Err((230001, "only messages the app sent can be updated"));
    }
    if Instant::now().saturating_duration_since(m.created) + m.aged > PATCH_WINDOW {
        return Err((230001, "only messages sent within 14 days can be updated"));
    }
    if super::cardkit::CardKit::is_entity(&m.content) {
        return Err((230001, "a card sent by card_id is updated through CardKit"));
    }
    if m.msg_type != "interactive" {
        return Err((230001, "only cards can be patched"));
    }
    if !multi(&m.content) || !multi(&card) {
        return Err((
            230001,
            "card must declare config.update_multi before and after",
        ));
    }
    m.content = card.clone();
    st.patches.push(PatchRecord {
        message_id: id.to_string(),
        card,
    });
    Ok(())
}

pub(crate) async fn bot_info(State(sh): S, headers: HeaderMap) -> Response {
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    reply(
        StatusCode::OK,
        json!({"code": 0, "msg": "ok", "bot": {
            "activate_status": 2, "app_name": sh.config.bot_name, "avatar_url": "",
            "ip_white_list": [], "open_id": sh.config.bot_open_id}}),
    )
}

pub(crate) async fn app_info(State(sh): S, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    if id != sh.config.app_id {
        return err(99992402, "app_id mismatch");
    }
    ok(json!({"app": {
        "app_id": id,
        "owner": {"owner_id": sh.config.owner_open_id, "owner_type": 2},
        "creator_id": sh.config.owner_open_id,
    }}))
}

pub(crate) async fn card_update(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    if let Err((code, msg)) = authorize(&sh, &headers) {
        return err(code, msg);
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (Some(token), Some(card)) = (v.get("token").and_then(Value::as_str), v.get("card")) else {
        return err(230001, "token and card required");
    };
    let mut st = sh.lock();
    let Some(id) = st.click_tokens.get(token).cloned() else {
        return err(230001, "unknown callback token");
    };
    match apply_card(&mut st, &id, card.clone()) {
        Ok(()) => ok(json!({})),
        Err((code, msg)) => err(code, msg),
    }
}
