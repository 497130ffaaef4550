//! The WebSocket long connection: discover an endpoint, dial, ping, watch liveness, reassemble
//! fragments, hand complete events to the caller with an ACK handle, and reconnect with a fresh
//! endpoint and jitter until cancelled or a fatal error.
//!
//! The caller acknowledges: each [`Delivery`] carries an [`AckHandle`], and the ACK frame is
//! written only when the caller calls [`AckHandle::ack`] (journal first, then ACK, within 3 s).
//! Liveness evidence (pongs, inbound frames) is published on a `watch` channel of
//! [`LinkStatus`], so `connected` can come from protocol evidence only.
//!
//! ```no_run
//! use scv_feishu::event::EventBody;
//! use scv_feishu::ws::{AckResponse, LongConnection, WsOptions};
//! # async fn demo(client: scv_feishu::Client) -> Result<(), scv_feishu::Error> {
//! let conn = std::sync::Arc::new(LongConnection::new(client, WsOptions::default()));
//! let (tx, mut rx) = tokio::sync::mpsc::channel(256);
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let runner = tokio::spawn({
//!     let (conn, cancel) = (conn.clone(), cancel.clone());
//!     async move { conn.run(tx, cancel).await }
//! });
//! while let Some(delivery) = rx.recv().await {
//!     match delivery.parse() {
//!         Ok(event) => {
//!             // journal(event) first, then:
//!             let _ = delivery.ack.ack(AckResponse::Ok);
//!             if let EventBody::Message(m) = event.body { /* process m after the ACK */ }
//!         }
//!         // Unreadable: ACK it anyway, or it is re-pushed for ever.
//!         Err(_) => { let _ = delivery.ack.ack(AckResponse::Ok); }
//!     }
//! }
//! # cancel.cancel(); let _ = runner.await; Ok(()) }
//! ```

mod ack;
pub mod endpoint;
pub mod reassembly;
mod session;

use std::time::Duration;

use rand::Rng;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use ack::{AckError, AckHandle, AckResponse, Delivery};
pub use endpoint::{ClientConfig, Endpoint, discover};

use crate::classify::{ErrorClass, classify};
use crate::error::Error;
use crate::rest::Client;
use crate::secret::Secret;
use session::SessionEnd;

/// Tuning of the long connection (server values in [`ClientConfig`] take precedence for pings
/// and reconnects).
#[derive(Debug, Clone)]
pub struct WsOptions {
    /// Incomplete fragmented messages are dropped after this long (SDKs: 5 s).
    pub fragment_timeout: Duration,
    /// Reconnect when no frame arrived for this many ping intervals.
    pub watchdog_factor: u32,
    /// Largest WebSocket message and reassembled payload accepted.
    pub max_message_bytes: usize,
    /// Reconnect after a transient failure; when false, `run` returns the first error.
    pub reconnect: bool,
    /// Reconnect and ping settings used until the server sends its own.
    pub initial_config: ClientConfig,
    /// Encrypt Key, if the app has one: pushes are plaintext on this path, but a payload that
    /// arrives as `{"encrypt":…}` is decrypted with it rather than handed over unreadable.
    pub encrypt_key: Option<Secret>,
}

impl Default for WsOptions {
    fn default() -> Self {
        Self {
            fragment_timeout: Duration::from_secs(5),
            watchdog_factor: 3,
            max_message_bytes: 8 << 20,
            reconnect: true,
            initial_config: ClientConfig::default(),
            encrypt_key: None,
        }
    }
}

/// Where the link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Discovering or dialing, or dialed but no evidence yet.
    Connecting,
    /// A pong or a frame arrived on the current socket.
    Connected,
    /// Between sockets (waiting to reconnect), or stopped.
    Disconnected,
}

/// A snapshot of the link, published on every change.
#[derive(Debug, Clone)]
pub struct LinkStatus {
    /// Current state.
    pub state: LinkState,
    /// `device_id` of the current socket.
    pub device_id: Option<String>,
    /// When the last pong or frame arrived.
    pub last_evidence: Option<Instant>,
    /// Sockets opened so far (a reconnect adds one).
    pub sockets: u64,
    /// Why the last socket ended.
    pub last_error: Option<String>,
    /// Server settings in force.
    pub config: ClientConfig,
}

/// The long connection of one app.
#[derive(Debug)]
pub struct LongConnection {
    client: Client,
    options: WsOptions,
    status: watch::Sender<LinkStatus>,
}

impl LongConnection {
    /// Prepares a connection; does no IO.
    pub fn new(client: Client, options: WsOptions) -> Self {
        let (status, _) = watch::channel(LinkStatus {
            state: LinkState::Disconnected,
            device_id: None,
            last_evidence: None,
            sockets: 0,
            last_error: None,
            config: ClientConfig::default(),
        });
        Self {
            client,
            options,
            status,
        }
    }

    /// The REST client this connection discovers endpoints with (shares its token cache).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Subscribes to link status changes (read without locks).
    pub fn status(&self) -> watch::Receiver<LinkStatus> {
        self.status.subscribe()
    }

    /// Runs until `cancel` fires or `deliveries` is dropped (`Ok`), or a fatal error, or the
    /// server's reconnect budget is spent (`Err`). A full `deliveries` queue pauses reading
    /// the socket until it has room (ACKs and pings still go out): no event is dropped, and
    /// one waits only as long as the caller is behind.
    pub async fn run(
        &self,
        deliveries: mpsc::Sender<Delivery>,
        cancel: CancellationToken,
    ) -> Result<(), Error> {
        let mut config = self.options.initial_config;
        let mut failures: i64 = 0;
        loop {
            if cancel.is_cancelled() {
                return Ok(());
            }
            self.status.send_modify(|s| s.state = LinkState::Connecting);
            let mut healthy = false;
            let outcome = tokio::select! {
                _ = cancel.cancelled() => Ok(SessionEnd::Cancelled),
                r = self.session(&mut config, &deliveries, &cancel, &mut healthy) => r,
            };
            let err = match outcome {
                Ok(_) => {
                    self.status
                        .send_modify(|s| s.state = LinkState::Disconnected);
                    return Ok(());
                }
                Err(e) => e,
            };
            tracing::info!(error = %err, "long connection ended");
            self.status.send_modify(|s| {
                s.state = LinkState::Disconnected;
                s.last_error = Some(err.to_string());
            });
            let class = classify(&err);
            if matches!(
                class,
                ErrorClass::Fatal { .. } | ErrorClass::Rejected { .. }
            ) || !self.options.reconnect
            {
                return Err(err);
            }
            if healthy {
                failures = 0;
            }
            failures += 1;
            if config.reconnect_count >= 0 && failures > config.reconnect_count {
                return Err(err);
            }
            let mut delay = reconnect_delay(&config, failures);
            if let ErrorClass::SlowDown(d) = class {
                delay = delay.max(d);
            }
            tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Discovers a fresh endpoint, dials it, and runs the socket.
    async fn session(
        &self,
        config: &mut ClientConfig,
        deliveries: &mpsc::Sender<Delivery>,
        cancel: &CancellationToken,
        healthy: &mut bool,
    ) -> Result<SessionEnd, Error> {
        let endpoint = discover(&self.client).await?;
        if let Some(v) = &endpoint.config {
            config.merge_json(v);
        }
        let socket = session::dial(&endpoint, self.options.max_message_bytes).await?;
        let c = *config;
        self.status.send_modify(|s| {
            s.device_id = Some(endpoint.device_id.clone());
            s.sockets += 1;
            s.config = c;
        });
        let mut evidence = self.status.subscribe();
        evidence.mark_unchanged();
        let result = session::run(
            socket,
            &endpoint,
            config,
            &self.options,
            &self.status,
            deliveries,
            cancel,
        )
        .await;
        *healthy = self.status.borrow().state == LinkState::Connected
            || evidence.has_changed().unwrap_or(false);
        result
    }
}

/// The first retry waits a random part of `ReconnectNonce`, later ones `ReconnectInterval`.
fn reconnect_delay(config: &ClientConfig, failures: i64) -> Duration {
    if failures <= 1 {
        let nonce = config.reconnect_nonce.as_secs_f64();
        if nonce <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(rand::rng().random_range(0.0..nonce))
    } else {
        config.reconnect_interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_retry_is_jittered_later_ones_use_the_interval() {
        let c = ClientConfig {
            reconnect_nonce: Duration::from_millis(500),
            reconnect_interval: Duration::from_secs(7),
            ..ClientConfig::default()
        };
        for _ in 0..50 {
            assert!(reconnect_delay(&c, 1) < Duration::from_millis(500));
        }
        assert_eq!(reconnect_delay(&c, 2), Duration::from_secs(7));
        let zero = ClientConfig {
            reconnect_nonce: Duration::ZERO,
            ..c
        };
        assert_eq!(reconnect_delay(&zero, 1), Duration::ZERO);
    }
}
