//! The send and upload rules of §8.7–8.8 and §8.10: passive replies only, windows, budgets,
//! `msg_seq` dedupe, no URLs, markdown/keyboard permissions, media scope, rate and typing faults.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::RateLimitStyle;
use super::http::{reject, unauthorized};
use super::records::{
    FAKE_FILE_TOO_LARGE, FAKE_MEDIA_SCOPE, FAKE_TOO_LONG, SentRecord, UploadRecord,
};
use super::state::{Scope, Shared, State as FakeState};

/// A refusal: HTTP status, code, reason.
type Refusal = (u16, i64, String);

fn no(status: u16, code: i64, reason: &str) -> Refusal {
    (status, code, reason.to_owned())
}

/// `POST /v2/users/{openid}/messages`.
pub(crate) async fn send_user(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    send(sh, Scope::User(id), h, b)
}

/// `POST /v2/groups/{group_openid}/messages`.
pub(crate) async fn send_group(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    send(sh, Scope::Group(id), h, b)
}

fn send(State(sh): State<Arc<Shared>>, scope: Scope, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = unauthorized(&sh, &headers) {
        return r;
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return reject(&sh, "send", 400, 0, "body is not JSON");
    };
    let mut st = sh.lock();
    match check_send(&mut st, &scope, &v) {
        Ok(record) => {
            let answer = json!({"id": record.id, "timestamp": "2026-01-01T00:00:00+08:00"});
            st.sent.push(record);
            axum::Json(answer).into_response()
        }
        Err((status, code, reason)) => {
            drop(st);
            reject(&sh, "send", status, code, &reason)
        }
    }
}

/// Every rule, in the order the platform is most likely to apply them.
fn check_send(st: &mut FakeState, scope: &Scope, v: &Value) -> Result<SentRecord, Refusal> {
    if st.rate_limit_next > 0 {
        st.rate_limit_next -= 1;
        return Err(match st.rate_style {
            RateLimitStyle::Http429 => no(429, 0, "too many requests"),
            RateLimitStyle::Code22009 => no(400, 22009, "msg limit exceed"),
        });
    }
    let msg_type = v.get("msg_type").and_then(Value::as_i64).unwrap_or(0);
    if msg_type == 6 && st.typing_fails {
        return Err(no(500, 50059, "input type err"));
    }
    check_content(st, scope, msg_type, v)?;
    let seq = v.get("msg_seq").and_then(Value::as_u64).unwrap_or(1);
    let key = check_trigger(st, scope, v, seq)?;
    let trigger = st.triggers.get_mut(&key).expect("checked above");
    trigger.seqs.insert(seq);
    if msg_type != 6 || st.cfg.typing_spends_reply {
        trigger.replies += 1;
    }
    if trigger.is_event {
        // An event id is good for one passive message (§2.4, §8.9).
        trigger.replies = u32::MAX;
    }
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let content = text("content")
        .or_else(|| {
            v.pointer("/markdown/content")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let id = format!("FAKE_MSG_{}", st.next());
    Ok(SentRecord {
        to: scope.name(),
        msg_type,
        content,
        msg_id: text("msg_id"),
        event_id: text("event_id"),
        msg_seq: seq,
        body: v.clone(),
        id,
    })
}

/// The trigger rules: one is required, it must be live, for this chat, with budget left, and
/// `msg_seq` new. Returns the trigger's key.
fn check_trigger(st: &FakeState, scope: &Scope, v: &Value, seq: u64) -> Result<String, Refusal> {
    let msg_id = v.get("msg_id").and_then(Value::as_str);
    let event_id = v.get("event_id").and_then(Value::as_str);
    let Some(key) = msg_id.or(event_id) else {
        let code = if scope.is_group() { 40034105 } else { 40034102 };
        return Err(no(400, code, "active messages are not allowed"));
    };
    let invalid = || no(400, 40034024, "msg_id invalid or overused");
    let t = st.triggers.get(key).ok_or_else(invalid)?;
    if t.scope != *scope || t.is_event != msg_id.is_none() {
        return Err(invalid());
    }
    if t.seqs.contains(&seq) {
        return Err(no(400, 40054005, "message deduplicated, check msg_seq"));
    }
    let window = if scope.is_group() {
        st.cfg.group_window
    } else {
        st.cfg.c2c_window
    };
    if Instant::now() >= t.at + window || t.replies >= st.cfg.replies_per_message {
        return Err(invalid());
    }
    Ok(key.to_owned())
}

/// Content rules per `msg_type`.
fn check_content(st: &FakeState, scope: &Scope, msg_type: i64, v: &Value) -> Result<(), Refusal> {
    if v.get("keyboard").is_some() && !st.cfg.keyboard_allowed {
        return Err(no(400, 304037, "no keyboard permission"));
    }
    match msg_type {
        0 => check_text(st, v.get("content").and_then(Value::as_str).unwrap_or("")),
        2 if !st.cfg.markdown_allowed => Err(no(400, 50056, "markdown content not allowed")),
        2 => check_text(
            st,
            v.pointer("/markdown/content")
                .and_then(Value::as_str)
                .unwrap_or(""),
        ),
        6 if scope.is_group() => Err(no(400, 50059, "input type err")),
        6 => Ok(()),
        7 => {
            let info = v
                .pointer("/media/file_info")
                .and_then(Value::as_str)
                .unwrap_or("");
            match st.files.get(info) {
                Some((s, until)) if s.is_group() == scope.is_group() && Instant::now() < *until => {
                    Ok(())
                }
                _ => Err(no(
                    400,
                    FAKE_MEDIA_SCOPE,
                    "file_info expired or not issued for this chat type",
                )),
            }
        }
        _ => Err(no(400, 0, "msg_type not supported")),
    }
}

fn check_text(st: &FakeState, text: &str) -> Result<(), Refusal> {
    if text.trim().is_empty() {
        return Err(no(400, 0, "content is empty"));
    }
    let lower = text.to_ascii_lowercase();
    if lower.contains("http://") || lower.contains("https://") {
        return Err(no(400, 40054010, "url not allowed"));
    }
    if text.chars().count() > st.cfg.max_text_chars {
        return Err(no(400, FAKE_TOO_LONG, "content too long"));
    }
    Ok(())
}

/// `POST /v2/users/{openid}/files`.
pub(crate) async fn upload_user(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    upload(sh, Scope::User(id), h, b)
}

/// `POST /v2/groups/{group_openid}/files`.
pub(crate) async fn upload_group(
    sh: State<Arc<Shared>>,
    Path(id): Path<String>,
    h: HeaderMap,
    b: Bytes,
) -> Response {
    upload(sh, Scope::Group(id), h, b)
}

fn upload(
    State(sh): State<Arc<Shared>>,
    scope: Scope,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&sh, &headers) {
        return r;
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return reject(&sh, "upload", 400, 0, "body is not JSON");
    };
    let mut st = sh.lock();
    match check_upload(&mut st, &scope, &v) {
        Ok(rec) => {
            let ttl = st.cfg.media_ttl;
            let answer = json!({"file_uuid": format!("uuid-{}", rec.file_info),
                "file_info": rec.file_info, "ttl": ttl.as_secs()});
            st.files
                .insert(rec.file_info.clone(), (scope, Instant::now() + ttl));
            st.uploads.push(rec);
            axum::Json(answer).into_response()
        }
        Err((status, code, reason)) => {
            drop(st);
            reject(&sh, "upload", status, code, &reason)
        }
    }
}

fn check_upload(st: &mut FakeState, scope: &Scope, v: &Value) -> Result<UploadRecord, Refusal> {
    if v.get("upload_id").is_some() {
        return super::chunked::complete(st, scope, v);
    }
    let file_type = v.get("file_type").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=4).contains(&file_type) {
        return Err(no(400, 0, "file_type must be 1..4"));
    }
    if v.get("srv_send_msg").and_then(Value::as_bool) == Some(true) {
        // Sending at once is an active message (§4.4).
        let code = if scope.is_group() { 40034105 } else { 40034102 };
        return Err(no(400, code, "active messages are not allowed"));
    }
    let url = v.get("url").and_then(Value::as_str).map(str::to_owned);
    let data_len = match v.get("file_data").and_then(Value::as_str) {
        Some(d) => Some(
            B64.decode(d)
                .map_err(|_| no(400, 0, "file_data is not base64"))?
                .len(),
        ),
        None => None,
    };
    if url.is_none() && data_len.is_none() {
        return Err(no(400, 0, "url or file_data required"));
    }
    if data_len.is_some_and(|n| n as u64 > st.cfg.max_file_bytes) {
        return Err(no(400, FAKE_FILE_TOO_LARGE, "file too large"));
    }
    let file_info = format!("FAKE_FILE_INFO_{}", st.next());
    Ok(UploadRecord {
        to: scope.name(),
        file_type,
        data_len,
        url,
        file_info,
    })
}
