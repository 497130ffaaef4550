//! The fake's HTTP side other than sending: the token endpoint (§8.1), OpenAPI auth (§8.2),
//! `users/@me`, `gateway/bot` (§8.3), click acknowledgements (§8.9) and served media.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::records::{InteractionAck, Rejected};
use super::state::Shared;

/// A platform error answer: `{code, message}` with `status`.
pub(crate) fn refuse(status: u16, code: i64, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (
        status,
        axum::Json(json!({"code": code, "message": message, "trace_id": "fake"})),
    )
        .into_response()
}

/// Records and answers a refusal.
pub(crate) fn reject(
    sh: &Shared,
    what: &'static str,
    status: u16,
    code: i64,
    reason: &str,
) -> Response {
    sh.lock().rejected.push(Rejected {
        what,
        status,
        code,
        reason: reason.to_owned(),
    });
    refuse(status, code, reason)
}

/// `POST /app/getAppAccessToken`: JSON only, `appId` a string, the right secret (§1.2).
pub(crate) async fn token(
    State(sh): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    sh.lock().token_requests += 1;
    let json_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    // Both observed answers come with HTTP 200 (§1.2).
    if !json_type {
        return reject(&sh, "token", 200, 100007, "appid invalid");
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return reject(&sh, "token", 200, 100002, "internal err");
    };
    let (app_id, secret) = {
        let st = sh.lock();
        (st.cfg.app_id.clone(), st.cfg.app_secret.clone())
    };
    if v.get("appId").and_then(Value::as_str) != Some(app_id.as_str()) {
        return reject(&sh, "token", 200, 100007, "appid invalid");
    }
    if v.get("clientSecret").and_then(Value::as_str) != Some(secret.as_str()) {
        return reject(&sh, "token", 200, 100016, "invalid appsecret");
    }
    let (token, left) = sh.lock().issue_token();
    // `expires_in` as a string, as in the doc example and botgo's parser.
    axum::Json(json!({"access_token": token, "expires_in": left.as_secs().to_string()}))
        .into_response()
}

/// Checks `Authorization: QQBot <token>`; a missing, unknown, revoked or expired one gets the
/// answer returned here, 401 + `11244` (§8.2).
pub(crate) fn unauthorized(sh: &Shared, headers: &HeaderMap) -> Option<Response> {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if sh.lock().token_ok(auth) {
        None
    } else {
        Some(reject(sh, "auth", 401, 11244, "token expired or not exist"))
    }
}

/// `GET /users/@me`.
pub(crate) async fn me(State(sh): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(r) = unauthorized(&sh, &headers) {
        return r;
    }
    let st = sh.lock();
    axum::Json(
        json!({"id": st.cfg.bot_id, "username": st.cfg.bot_name, "avatar": "", "union_openid": ""}),
    )
    .into_response()
}

/// `GET /gateway/bot` (and `/gateway`): a loopback `ws://` URL and the session start limit.
pub(crate) async fn gateway(State(sh): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(r) = unauthorized(&sh, &headers) {
        return r;
    }
    let st = sh.lock();
    let url = format!("{}/websocket", st.base_url.replacen("http://", "ws://", 1));
    let remaining = st.session_starts_left.unwrap_or(1000);
    axum::Json(json!({"url": url, "shards": 1, "session_start_limit":
        {"total": 1000, "remaining": remaining, "reset_after": 60_000, "max_concurrency": 1}}))
    .into_response()
}

/// `PUT /interactions/{id}`: recorded with its arrival time.
pub(crate) async fn interaction(
    State(sh): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&sh, &headers) {
        return r;
    }
    let code = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("code").and_then(Value::as_i64));
    let Some(code) = code else {
        return reject(&sh, "interaction", 400, 0, "body needs a numeric code");
    };
    sh.lock().interaction_acks.push(InteractionAck {
        id,
        code,
        at: Instant::now(),
    });
    StatusCode::NO_CONTENT.into_response()
}

/// `GET /media/{name}`: attachment bytes a test put there.
pub(crate) async fn media(State(sh): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    match sh.lock().media.get(&name) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
