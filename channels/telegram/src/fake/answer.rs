//! The Bot API's answer envelope as the fake writes it: `{"ok": true, "result": ...}` or
//! `{"ok": false, "error_code", "description"}` (spec §8.1). Every handler answers through
//! these, and the router too, so they sit below both.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// `{"ok": true, "result": ...}`.
pub(crate) fn ok(result: Value) -> Response {
    (
        StatusCode::OK,
        axum::Json(json!({"ok": true, "result": result})),
    )
        .into_response()
}

/// `{"ok": false, ...}` with the HTTP status equal to `error_code` (spec §8.1).
pub(crate) fn error(code: u16, description: &str) -> Response {
    error_with(code, description, None)
}

pub(crate) fn error_with(code: u16, description: &str, parameters: Option<Value>) -> Response {
    let mut body = json!({"ok": false, "error_code": code, "description": description});
    if let Some(p) = parameters {
        body["parameters"] = p;
    }
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
    (status, axum::Json(body)).into_response()
}
