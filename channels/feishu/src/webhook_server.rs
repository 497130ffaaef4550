//! A small axum router for the HTTP callback mode (feature `webhook-server`).
//!
//! It answers url_verification itself, refuses bad signatures and tokens, and hands each valid
//! event to the caller as a [`WebhookDelivery`]; the HTTP response is what the caller passes to
//! [`WebhookDelivery::respond`] (the same [`AckResponse`] as on the long connection), or a 500
//! when the caller does not answer in time, so the platform retries.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::event::{Event, EventError, parse_event, peek_event_type};
use crate::webhook::{
    EVENT_OK_BODY, WebhookConfig, WebhookError, WebhookRequest, handle, url_verification_response,
};
use crate::ws::AckResponse;

/// One valid callback event waiting for the caller's answer.
#[derive(Debug)]
pub struct WebhookDelivery {
    /// `header.event_type`, if readable.
    pub event_type: Option<String>,
    /// The decrypted v2 envelope JSON.
    pub payload: Vec<u8>,
    responder: oneshot::Sender<AckResponse>,
}

impl WebhookDelivery {
    /// Parses the payload.
    pub fn parse(&self) -> Result<Event, EventError> {
        parse_event(&self.payload)
    }

    /// Answers the HTTP request: `Ok` = 200 `{"msg":"success"}`, `Callback(v)` = 200 `v`,
    /// `Failed` = 500 (the platform retries).
    pub fn respond(self, response: AckResponse) {
        // The request may have timed out already; then the platform retries anyway.
        let _ = self.responder.send(response);
    }
}

struct Ctx {
    config: WebhookConfig,
    deliveries: mpsc::Sender<WebhookDelivery>,
    answer_within: Duration,
}

/// A router serving callbacks on `path`; the caller must answer each delivery within
/// `answer_within` (the platform allows 3 s).
pub fn router(
    path: &str,
    config: WebhookConfig,
    deliveries: mpsc::Sender<WebhookDelivery>,
    answer_within: Duration,
) -> Router {
    let ctx = Arc::new(Ctx {
        config,
        deliveries,
        answer_within,
    });
    Router::new().route(path, post(callback)).with_state(ctx)
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn callback(State(ctx): State<Arc<Ctx>>, headers: HeaderMap, body: Bytes) -> Response {
    let lookup = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let request = match handle(&ctx.config, lookup, &body, now) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "refused a callback request");
            let status = match e {
                WebhookError::BadSignature
                | WebhookError::MissingSignature
                | WebhookError::BadToken
                | WebhookError::StaleTimestamp(_) => StatusCode::UNAUTHORIZED,
                _ => StatusCode::BAD_REQUEST,
            };
            return (status, e.to_string()).into_response();
        }
    };
    let payload = match request {
        WebhookRequest::UrlVerification { challenge } => {
            return json_response(StatusCode::OK, url_verification_response(&challenge));
        }
        WebhookRequest::Event(p) => p,
    };
    let (tx, rx) = oneshot::channel();
    let delivery = WebhookDelivery {
        event_type: peek_event_type(&payload),
        payload,
        responder: tx,
    };
    if ctx.deliveries.try_send(delivery).is_err() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    match tokio::time::timeout(ctx.answer_within, rx).await {
        Ok(Ok(AckResponse::Ok)) => json_response(StatusCode::OK, EVENT_OK_BODY.to_string()),
        Ok(Ok(AckResponse::Callback(v))) => json_response(StatusCode::OK, Value::to_string(&v)),
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
