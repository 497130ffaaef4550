//! Callback (webhook) mode: Feishu POSTs events and card clicks to a listener the owner exposes.
//!
//! scv-feishu checks each request (signature over the body with the Encrypt Key, then AES-256-CBC
//! decryption, then the Verification Token) before anything reaches the session; the HTTP request
//! is held open until the event is journaled, and answered 500 if that does not happen within
//! [`ANSWER_WITHIN`], so Feishu re-sends it rather than it being lost.

use std::net::SocketAddr;
use std::time::Duration;

use scv_feishu::Secret;
use scv_feishu::webhook::WebhookConfig;
use scv_feishu::webhook_server::{WebhookDelivery, router};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::failure::{BAD_LISTEN, LISTENER_FAILED};
use super::session::Session;
use super::{DELIVERY_QUEUE, take_batch};
use crate::config::AccountKey;
use crate::failure::{Action, Command};
use crate::secrets::Credentials;
use crate::supervisor::ComponentError;

/// Where the listener binds when `webhook_listen` is not set.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8790";
/// Feishu waits 3 s for the HTTP answer; leave room for the network.
const ANSWER_WITHIN: Duration = Duration::from_millis(2500);
/// Credential field holding the app's Encrypt Key.
pub const ENCRYPT_KEY_FIELD: &str = "encrypt_key";
/// Credential field holding the app's Verification Token.
pub const TOKEN_FIELD: &str = "verification_token";

/// The callback secrets from the stored credentials. The Encrypt Key is required: without it
/// requests carry no signature and anyone who finds the URL could speak as the owner.
pub(super) fn config(
    creds: &Credentials,
    account: &AccountKey,
) -> Result<WebhookConfig, ComponentError> {
    let field = |k: &str| {
        creds
            .get(k)
            .map(|s| s.expose().to_string())
            .filter(|s| !s.is_empty())
    };
    let Some(key) = field(ENCRYPT_KEY_FIELD) else {
        return Err(ComponentError::fatal(
            super::failure::NO_ENCRYPT_KEY,
            "callback mode needs the app's Encrypt Key (without it callbacks are unsigned)",
            Action::Console {
                first: "set an Encrypt Key under Events & Callbacks > Encryption Strategy in the Feishu console".into(),
                then: Command::Login(account.clone()),
            },
        ));
    };
    Ok(WebhookConfig {
        encrypt_key: Some(Secret::new(key)),
        verification_token: field(TOKEN_FIELD).map(Secret::new),
    })
}

/// Serves callbacks on `listen` until `cancel`, handing each to the session.
pub(super) async fn run(
    session: &mut Session,
    config: WebhookConfig,
    listen: Option<&str>,
    account: &AccountKey,
    cancel: CancellationToken,
) -> Result<(), ComponentError> {
    let text = listen.unwrap_or(DEFAULT_LISTEN);
    let addr: SocketAddr = text.parse().map_err(|_| {
        ComponentError::fatal(
            BAD_LISTEN,
            format!("webhook_listen '{text}' is not an address such as {DEFAULT_LISTEN}"),
            Action::Reload {
                first: "correct webhook_listen in the configuration".into(),
            },
        )
    })?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| match e.kind() {
            // Usually the previous run's socket, about to be released: retry with backoff.
            std::io::ErrorKind::AddrInUse => {
                ComponentError::transient(BAD_LISTEN, format!("cannot listen on {addr}: {e}"))
            }
            _ => ComponentError::fatal(
                BAD_LISTEN,
                format!("cannot listen on {addr}: {e}"),
                Action::Reload {
                    first: "choose another webhook_listen".into(),
                },
            ),
        })?;
    let (tx, mut rx) = mpsc::channel::<WebhookDelivery>(DELIVERY_QUEUE);
    // Any path: the console's callback URL may carry one behind a reverse proxy.
    let app = router("/", config.clone(), tx.clone(), ANSWER_WITHIN).merge(router(
        "/{*path}",
        config,
        tx,
        ANSWER_WITHIN,
    ));
    let stop = cancel.child_token();
    let mut server = tokio::spawn({
        let stop = stop.clone();
        async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await
        }
    });
    tracing::info!(account = %account, %addr, "listening for Feishu callbacks");
    session.listening();
    let mut server_done = false;
    let result = loop {
        tokio::select! {
            _ = cancel.cancelled() => break Ok(()),
            ended = &mut server => {
                server_done = true;
                break Err(ComponentError::transient(LISTENER_FAILED, match ended {
                    Ok(Ok(())) => "the callback listener stopped".to_string(),
                    Ok(Err(e)) => format!("the callback listener failed: {e}"),
                    Err(e) => format!("the callback listener task failed: {e}"),
                }));
            }
            Some(first) = rx.recv() => {
                let batch = take_batch(first, &mut rx);
                session.handle(batch).await;
            }
        }
    };
    stop.cancel();
    if !server_done {
        let _ = server.await;
    }
    result
}
