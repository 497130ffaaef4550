//! The Stream-mode connection (spec §1): a fresh `connections/open` ticket for every socket,
//! SYSTEM pings answered, a warm reconnect on `disconnect` (the new socket is up before the
//! old one is dropped), an idle watchdog on the server's own frames against zombie sockets,
//! WebSocket pings with a pong deadline, and backoff with jitter between failures.
//!
//! Pushes reach the caller as [`Delivery`] values; the caller ACKs each with its
//! [`AckHandle`] after journaling it (see the crate doc's recipe). Link evidence (the last
//! frame of any kind) is published as [`LinkStatus`] on a `watch` channel.

mod ack;
pub mod frame;
pub mod open;
mod session;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::Rng;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use ack::{AckError, AckHandle, AckReply, CARD_CALLBACK_TOPIC, Delivery, Inbound, ROBOT_TOPIC};
pub use open::{Subscription, Ticket};

use crate::classify::ErrorClass;
use crate::client::Client;
use crate::error::Error;
use crate::limits;
use session::{End, Notice};

/// The subscriptions this crate asks for: robot messages and card callbacks (spec §1.3).
pub fn default_subscriptions() -> Vec<Subscription> {
    [ROBOT_TOPIC, CARD_CALLBACK_TOPIC]
        .into_iter()
        .map(|t| Subscription {
            kind: "CALLBACK",
            topic: t.to_string(),
        })
        .collect()
}

/// Tuning of the connection; defaults from [`crate::limits`]. Tests shorten them.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// Topics to subscribe.
    pub subscriptions: Vec<Subscription>,
    /// No frame of any kind for this long: reconnect (zombie watchdog).
    pub idle_timeout: Duration,
    /// WebSocket ping cadence.
    pub ping_interval: Duration,
    /// Pong deadline after a ping.
    pub pong_timeout: Duration,
    /// How long a socket that sent `disconnect` is still read.
    pub disconnect_grace: Duration,
    /// First reconnect wait (doubling, with up to 20 % jitter).
    pub backoff_base: Duration,
    /// Longest reconnect wait.
    pub backoff_max: Duration,
    /// Bound on the WebSocket handshake.
    pub connect_timeout: Duration,
    /// Largest inbound frame.
    pub max_frame_bytes: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            subscriptions: default_subscriptions(),
            idle_timeout: limits::IDLE_TIMEOUT,
            ping_interval: limits::WS_PING_INTERVAL,
            pong_timeout: limits::WS_PONG_TIMEOUT,
            disconnect_grace: limits::DISCONNECT_GRACE,
            backoff_base: limits::RECONNECT_BASE,
            backoff_max: limits::RECONNECT_MAX,
            connect_timeout: Duration::from_secs(20),
            max_frame_bytes: limits::MAX_FRAME_BYTES,
        }
    }
}

/// Where the link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Opening or dialing, or dialed with no frame yet.
    Connecting,
    /// A frame arrived on a live socket.
    Connected,
    /// Between sockets, or stopped.
    Disconnected,
}

/// A snapshot of the link, published on every change. `last_frame` is the health evidence:
/// WebSocket pongs are not (a zombie socket answers them).
#[derive(Debug, Clone)]
pub struct LinkStatus {
    /// Current state.
    pub state: LinkState,
    /// When the last frame (of any kind, SYSTEM pings included) arrived.
    pub last_frame: Option<Instant>,
    /// Sockets opened so far.
    pub sockets: u64,
    /// Why the last socket ended, if it failed.
    pub last_error: Option<String>,
}

/// The Stream connection of one app. Made by the account task; run once.
#[derive(Debug)]
pub struct StreamConnection {
    client: Client,
    options: StreamOptions,
    status: watch::Sender<LinkStatus>,
    next_id: AtomicU64,
}

impl StreamConnection {
    /// Prepares a connection; does no IO.
    pub fn new(client: Client, options: StreamOptions) -> Self {
        let (status, _) = watch::channel(LinkStatus {
            state: LinkState::Disconnected,
            last_frame: None,
            sockets: 0,
            last_error: None,
        });
        Self {
            client,
            options,
            status,
            next_id: AtomicU64::new(1),
        }
    }

    /// Subscribes to link status changes.
    pub fn status(&self) -> watch::Receiver<LinkStatus> {
        self.status.subscribe()
    }

    /// Runs until `cancel` fires or `deliveries` is dropped (`Ok`), or an error classified
    /// `Fatal` (`Err`: bad credentials, app not in Stream mode). Everything else reconnects.
    /// A full `deliveries` queue pauses reading (no push is dropped).
    pub async fn run(
        &self,
        deliveries: mpsc::Sender<Delivery>,
        cancel: CancellationToken,
    ) -> Result<(), Error> {
        let (notice_tx, mut notices) = mpsc::unbounded_channel();
        // The sockets' own token: cancelled when `run` ends, whatever ends it.
        let stop = cancel.child_token();
        // Dropping the set aborts any socket still running when `run` returns.
        let mut sockets = JoinSet::new();
        let mut current: Option<u64> = None;
        let mut failures: u32 = 0;
        let result = loop {
            if current.is_none() {
                let up = self
                    .connect(&deliveries, &stop, &notice_tx, &mut sockets)
                    .await;
                match up {
                    Ok(id) => current = Some(id),
                    Err(e) => match self.after_failure(e, &mut failures, &cancel).await {
                        Some(r) => break r,
                        None => continue,
                    },
                }
            }
            let notice = tokio::select! {
                _ = cancel.cancelled() => break Ok(()),
                n = notices.recv() => n,
            };
            match notice {
                // The old socket keeps reading; the loop opens the new one at once.
                Some(Notice::Retiring(id)) if Some(id) == current => {
                    current = None;
                    failures = 0;
                }
                Some(Notice::Ended(id, r, saw_frames)) if Some(id) == current => {
                    current = None;
                    if saw_frames {
                        failures = 0;
                    }
                    match r {
                        Ok(End::ReceiverGone | End::Cancelled) => break Ok(()),
                        Ok(End::Retired) => {}
                        Err(e) => {
                            if let Some(r) = self.after_failure(e, &mut failures, &cancel).await {
                                break r;
                            }
                        }
                    }
                }
                Some(Notice::Ended(_, Ok(End::ReceiverGone), _)) => break Ok(()),
                Some(_) => {}
                None => break Ok(()),
            }
        };
        stop_all(&stop, sockets).await;
        self.status
            .send_modify(|s| s.state = LinkState::Disconnected);
        result
    }

    /// Opens a ticket, dials, and starts the socket's task; returns its id.
    async fn connect(
        &self,
        deliveries: &mpsc::Sender<Delivery>,
        stop: &CancellationToken,
        notices: &mpsc::UnboundedSender<Notice>,
        sockets: &mut JoinSet<()>,
    ) -> Result<u64, Error> {
        self.status.send_modify(|s| s.state = LinkState::Connecting);
        let ticket = open::open(&self.client, &self.options.subscriptions).await?;
        let socket = session::dial(&ticket.url()?, &self.options).await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.status.send_modify(|s| s.sockets += 1);
        let ctx = session::Ctx {
            id,
            options: self.options.clone(),
            status: self.status.clone(),
            deliveries: deliveries.clone(),
            cancel: stop.clone(),
        };
        sockets.spawn(session::run(ctx, socket, notices.clone()));
        Ok(id)
    }

    /// Logs and classifies a failure; `Some` ends `run`, `None` means retry after the wait.
    async fn after_failure(
        &self,
        e: Error,
        failures: &mut u32,
        cancel: &CancellationToken,
    ) -> Option<Result<(), Error>> {
        tracing::info!(error = %e, "dingtalk stream: connection failed");
        self.status.send_modify(|s| {
            s.state = LinkState::Disconnected;
            s.last_error = Some(e.to_string());
        });
        let class = e.class();
        if matches!(class, ErrorClass::Fatal(_)) {
            return Some(Err(e));
        }
        *failures += 1;
        let mut wait = backoff(&self.options, *failures);
        if let ErrorClass::SlowDown(d) = class {
            wait = wait.max(d);
        }
        tokio::select! {
            _ = cancel.cancelled() => Some(Ok(())),
            _ = tokio::time::sleep(wait) => None,
        }
    }
}

/// Stops the sockets and lets them send their close frames (bounded).
async fn stop_all(stop: &CancellationToken, mut sockets: JoinSet<()>) {
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while sockets.join_next().await.is_some() {}
    })
    .await;
}

/// `base · 2^(n-1)`, capped, plus up to 20 % jitter (Go SDK).
fn backoff(o: &StreamOptions, failures: u32) -> Duration {
    let exp = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    let d = o.backoff_base.saturating_mul(exp).min(o.backoff_max);
    d + d.mul_f64(rand::rng().random_range(0.0..0.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_with_bounded_jitter() {
        let o = StreamOptions::default();
        for (n, base) in [(1, 3), (2, 6), (3, 12), (5, 48), (6, 60), (40, 60)] {
            let d = backoff(&o, n);
            let base = Duration::from_secs(base);
            assert!(d >= base && d <= base.mul_f64(1.2), "{n}: {d:?}");
        }
    }
}
