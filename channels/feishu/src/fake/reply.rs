//! The replies every route of the fake shares: the `{code,msg,data}` envelope, business
//! refusals, and the bearer-token check. A file of its own so the route files (IM, media,
//! reactions, CardKit) depend on it and never on each other.

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::state::Shared;

/// A JSON reply with `status`.
pub(crate) fn reply(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

/// A business refusal (HTTP 400) with `code`.
pub(crate) fn err(code: i64, msg: &str) -> Response {
    reply(StatusCode::BAD_REQUEST, json!({"code": code, "msg": msg}))
}

/// A success envelope around `data`.
pub(crate) fn ok(data: Value) -> Response {
    reply(
        StatusCode::OK,
        json!({"code": 0, "msg": "success", "data": data}),
    )
}

/// A business error: code and message.
pub(crate) type Refusal = (i64, &'static str);

/// Checks the bearer token.
pub(crate) fn authorize(sh: &Shared, headers: &HeaderMap) -> Result<(), Refusal> {
    let Some(tok) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return Err((99991661, "Missing access token for authorization"));
    };
    let st = sh.lock();
    let valid = st
        .valid_tokens
        .get(tok)
        .is_some_and(|exp| *exp > Instant::now());
    if st.reject_all_tokens || !valid {
        return Err((99991663, "Invalid access token for authorization"));
    }
    Ok(())
}
