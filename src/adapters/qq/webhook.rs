//! Webhook mode, the spec's fallback to the gateway (§1.5): QQ POSTs signed frames to a callback
//! this account serves. Every request's Ed25519 signature (over `X-Signature-Timestamp ‖ raw
//! body`, key from the AppSecret) is checked by [`WebhookKey::open`] before anything of the body
//! is read; a forged, malformed or stale request is refused with 401, and so is a replay of a
//! request already journaled (the same signature again inside the accepted age). The op 13
//! validation is answered with the signed `plain_token`. A dispatch goes to the run, which
//! journals it; only then is it answered 200 with `{"op":12,"d":0}`. A dispatch the journal could
//! not take is answered 503 (`d: 1`), so QQ sends it again (its retry policy is unconfirmed).
//!
//! The listener binds `webhook_listen` (loopback by default: QQ reaches it through the
//! operator's HTTPS proxy on one of the ports QQ allows, 80, 443, 8080 or 8443).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use scv_qq::Event;
use scv_qq::event::EventError;
use scv_qq::webhook::{WEBHOOK_MAX_AGE, WebhookError, WebhookKey, WebhookRequest, ack_body};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

/// Where the listener binds unless `webhook_listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8443";

/// One verified dispatch, for the run to journal; `done` says whether it was stored.
pub(super) struct Hooked {
    pub event: Result<Event, EventError>,
    pub done: oneshot::Sender<bool>,
}

/// What every request handler shares.
struct Shared {
    key: WebhookKey,
    clock: Clock,
    tx: mpsc::Sender<Hooked>,
    seen: Mutex<Seen>,
    dropped: Box<dyn Fn(&'static str) + Send + Sync>,
}

/// Signatures of journaled requests, kept as long as their timestamp is accepted.
#[derive(Default)]
struct Seen {
    set: HashSet<String>,
    order: VecDeque<(u64, String)>,
}

impl Seen {
    fn contains(&mut self, sig: &str, now: u64) -> bool {
        while let Some((at, _)) = self.order.front() {
            if now.saturating_sub(*at) <= 2 * WEBHOOK_MAX_AGE.as_secs() {
                break;
            }
            if let Some((_, old)) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        self.set.contains(sig)
    }

    fn insert(&mut self, sig: String, now: u64) {
        if self.set.insert(sig.clone()) {
            self.order.push_back((now, sig));
        }
    }
}

/// Binds `listen` and serves until `cancel`; verified dispatches go to `tx`, refusals are
/// counted through `dropped`. Returns the bound address.
pub(super) async fn serve(
    listen: &str,
    key: WebhookKey,
    clock: Clock,
    tx: mpsc::Sender<Hooked>,
    dropped: Box<dyn Fn(&'static str) + Send + Sync>,
    cancel: CancellationToken,
) -> std::io::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(Shared {
        key,
        clock,
        tx,
        seen: Mutex::default(),
        dropped,
    });
    let app = axum::Router::new()
        .fallback(axum::routing::post(answer))
        .with_state(shared);
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the QQ webhook listener stopped");
        }
    });
    Ok(addr)
}

async fn answer(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    let signature = h("x-signature-ed25519")
        .unwrap_or_default()
        .trim()
        .to_string();
    let now = s.clock.now_ms() / 1000;
    let opened = s
        .key
        .open(h("x-signature-timestamp"), Some(&signature), &body, now);
    let event = match opened {
        Ok(WebhookRequest::Validation(v)) => return axum::Json(v).into_response(),
        Ok(WebhookRequest::Dispatch { event, .. }) => event,
        // Signed by QQ but nothing this bridge reads: taken, so QQ does not send it again.
        Err(WebhookError::UnknownFrame) => {
            (s.dropped)("webhook_unknown");
            return axum::Json(ack_body(true)).into_response();
        }
        Err(_) => {
            (s.dropped)("webhook_refused");
            return StatusCode::UNAUTHORIZED.into_response();
        }
    };
    if s.seen
        .lock()
        .is_ok_and(|mut seen| seen.contains(&signature, now))
    {
        (s.dropped)("webhook_replayed");
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let (done, stored) = oneshot::channel();
    let journaled =
        s.tx.send(Hooked { event, done }).await.is_ok() && stored.await.unwrap_or(false);
    if !journaled {
        let body = axum::Json(ack_body(false));
        return (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    }
    if let Ok(mut seen) = s.seen.lock() {
        seen.insert(signature, now);
    }
    axum::Json(ack_body(true)).into_response()
}
