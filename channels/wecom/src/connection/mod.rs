//! The long connection (spec §1): dial, subscribe, heartbeat, hand callbacks to the caller,
//! correlate command answers by `req_id`, and reconnect with backoff — except after a
//! `disconnected_event` (another program took the bot) or refused credentials, where it stops.
//!
//! One [`Connection`] per account, made by the account task from its stored [`Credentials`];
//! clones share the socket. [`Connection::run`] owns the socket until it returns; the reply
//! and send methods (in `reply`, `media`) use whichever socket is subscribed at the time.

mod command;
mod session;
mod timer;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::Rng;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use command::Response;
pub(crate) use session::{dial as dial_for_login, subscribe as subscribe_for_login};
pub use timer::Timer;

use crate::classify::{ErrorClass, FatalReason};
use crate::delivery::Delivery;
use crate::error::Error;
use crate::limits;
use crate::secret::Credentials;
use session::{Link, SessionEnd};

/// Tuning of the long connection; the defaults are the spec's (§6). Tests shorten nothing:
/// they run on a paused clock instead.
#[derive(Debug, Clone)]
pub struct Options {
    /// `wss://…` (or the fake's `ws://127.0.0.1:PORT`).
    pub url: String,
    /// Heartbeat period.
    pub ping_interval: Duration,
    /// Unanswered pings that make the link dead.
    pub missed_pongs: u32,
    /// Wait for the subscribe answer.
    pub subscribe_timeout: Duration,
    /// Wait for an ordinary command's answer.
    pub ack_timeout: Duration,
    /// Wait for an upload frame's answer.
    pub upload_ack_timeout: Duration,
    /// The clock those two waits are timed on (tokio's by default).
    pub ack_timer: Timer,
    /// First reconnect delay (doubles per failure).
    pub reconnect_min: Duration,
    /// Largest reconnect delay.
    pub reconnect_max: Duration,
    /// ± fraction of jitter on each delay.
    pub jitter: f64,
    /// Largest inbound WebSocket message.
    pub max_frame_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            url: limits::DEFAULT_WS_URL.to_owned(),
            ping_interval: limits::PING_INTERVAL,
            missed_pongs: limits::MISSED_PONGS,
            subscribe_timeout: limits::SUBSCRIBE_TIMEOUT,
            ack_timeout: limits::ACK_TIMEOUT,
            upload_ack_timeout: limits::UPLOAD_ACK_TIMEOUT,
            ack_timer: Timer::default(),
            reconnect_min: limits::RECONNECT_MIN,
            reconnect_max: limits::RECONNECT_MAX,
            jitter: limits::RECONNECT_JITTER,
            max_frame_bytes: limits::MAX_INBOUND_FRAME_BYTES,
        }
    }
}

impl Options {
    /// The defaults with another URL.
    pub fn with_url(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }
}

/// Where the link is. `Superseded` and `CredentialsInvalid` are final for this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Dialling or subscribing.
    Connecting,
    /// Subscribed; commands can go out.
    Connected,
    /// Between sockets (waiting to reconnect), or stopped.
    Disconnected,
    /// Another connection took the bot; not reconnecting (§1.5).
    Superseded,
    /// The bot id or secret was refused; not reconnecting (§5).
    CredentialsInvalid,
}

/// A snapshot of the link, published on every change (read it for health and status).
#[derive(Debug, Clone)]
pub struct LinkStatus {
    /// Current state.
    pub state: LinkState,
    /// When the last frame arrived on a subscribed socket (pongs included): protocol evidence.
    pub last_evidence: Option<Instant>,
    /// Sockets dialled so far.
    pub dials: u64,
    /// Successful subscribes so far.
    pub subscribes: u64,
    /// Why the last socket ended.
    pub last_error: Option<String>,
}

/// The long connection of one bot. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Connection {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) creds: Credentials,
    pub(crate) options: Options,
    pub(crate) link: Mutex<Option<Link>>,
    pub(crate) status: watch::Sender<LinkStatus>,
    /// One lock per reply handle: the next frame on a `req_id` waits for the previous answer.
    pub(crate) handle_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Connection {
    /// Prepares a connection; does no IO.
    pub fn new(creds: Credentials, options: Options) -> Self {
        let (status, _) = watch::channel(LinkStatus {
            state: LinkState::Disconnected,
            last_evidence: None,
            dials: 0,
            subscribes: 0,
            last_error: None,
        });
        Self {
            inner: Arc::new(Inner {
                creds,
                options,
                link: Mutex::new(None),
                status,
                handle_locks: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The bot id this connection subscribes as.
    pub fn bot_id(&self) -> &str {
        &self.inner.creds.bot_id
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Subscribes to link status changes.
    pub fn status(&self) -> watch::Receiver<LinkStatus> {
        self.inner.status.subscribe()
    }

    /// Runs the connection until `cancel` fires or `deliveries` is dropped (`Ok`), or it must
    /// stop for good: [`Error::Superseded`] or [`Error::CredentialsInvalid`] (both fatal).
    /// Everything else reconnects, without limit, 1 s doubling to 30 s with jitter; the
    /// failure count resets only after a successful subscribe (§1.6).
    ///
    /// A full `deliveries` queue does not stop the socket: callbacks wait in memory, in order
    /// (reading pauses only past 1024 of them), so answers and pongs keep arriving.
    pub async fn run(
        &self,
        deliveries: mpsc::Sender<Delivery>,
        cancel: CancellationToken,
    ) -> Result<(), Error> {
        let mut failures: u32 = 0;
        let mut auth_failures: u32 = 0;
        loop {
            if cancel.is_cancelled() {
                return self.stopped(LinkState::Disconnected, Ok(()));
            }
            self.set_state(LinkState::Connecting);
            let outcome = session::run(self, &deliveries, &cancel).await;
            let err = match outcome {
                Ok(SessionEnd::Cancelled | SessionEnd::ReceiverGone) => {
                    return self.stopped(LinkState::Disconnected, Ok(()));
                }
                Ok(SessionEnd::Subscribed(e)) => {
                    // It was subscribed: the next failure starts the backoff afresh.
                    (failures, auth_failures) = (0, 0);
                    e
                }
                Err(e) => e,
            };
            tracing::info!(error = %err, "wecom long connection ended");
            self.inner.status.send_modify(|s| {
                s.state = LinkState::Disconnected;
                s.last_error = Some(err.to_string());
            });
            let delay = match self.retry_after(err, &mut failures, &mut auth_failures) {
                Ok(delay) => delay,
                Err((state, err)) => return self.stopped(state, Err(err)),
            };
            tokio::select! {
                _ = cancel.cancelled() => return self.stopped(LinkState::Disconnected, Ok(())),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// After a socket ended with `err`: how long to wait before dialling again, or the final
    /// state and error when it must not dial again (superseded, credentials refused).
    fn retry_after(
        &self,
        err: Error,
        failures: &mut u32,
        auth_failures: &mut u32,
    ) -> Result<Duration, (LinkState, Error)> {
        match err.class() {
            ErrorClass::Fatal {
                reason: FatalReason::Superseded,
                ..
            } => return Err((LinkState::Superseded, err)),
            ErrorClass::Fatal {
                reason: FatalReason::BadCredentials,
                ..
            } => {
                let err = match err {
                    Error::Platform { code, errmsg, .. } => {
                        Error::CredentialsInvalid { code, errmsg }
                    }
                    other => other,
                };
                return Err((LinkState::CredentialsInvalid, err));
            }
            ErrorClass::Fatal { .. } => return Err((LinkState::Disconnected, err)),
            // A rate limit is no auth failure (§1.6): wait it out, count nothing.
            ErrorClass::SlowDown(d) => return Ok(d),
            _ if is_subscribe_refusal(&err) => {
                *auth_failures += 1;
                if *auth_failures >= limits::AUTH_FAILURES_FATAL {
                    let fatal = Error::CredentialsInvalid {
                        code: err.code().unwrap_or_default(),
                        errmsg: format!("{auth_failures} subscribe refusals in a row"),
                    };
                    return Err((LinkState::CredentialsInvalid, fatal));
                }
            }
            _ => {}
        }
        *failures += 1;
        Ok(reconnect_delay(&self.inner.options, *failures))
    }

    fn set_state(&self, state: LinkState) {
        self.inner.status.send_modify(|s| s.state = state);
    }

    fn stopped(&self, state: LinkState, result: Result<(), Error>) -> Result<(), Error> {
        self.set_state(state);
        result
    }

    pub(crate) fn link(&self) -> MutexGuard<'_, Option<Link>> {
        lock(&self.inner.link)
    }
}

/// A mutex guard even if a holder panicked (the data is plain bookkeeping).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn is_subscribe_refusal(err: &Error) -> bool {
    matches!(err, Error::Platform { cmd, code, .. }
        if *cmd == crate::frame::cmd::SUBSCRIBE && *code != crate::classify::BUSY
            && *code != crate::classify::VERSION_CONFLICT)
}

/// `min × 2^(n−1)`, capped at `max`, then ± `jitter` (§1.6).
pub fn reconnect_delay(options: &Options, failures: u32) -> Duration {
    let doubled = options
        .reconnect_min
        .saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    let base = doubled.min(options.reconnect_max);
    if options.jitter <= 0.0 {
        return base;
    }
    let j = options.jitter.min(1.0);
    base.mul_f64(1.0 + rand::rng().random_range(-j..=j))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_with_bounded_jitter() {
        let exact = Options {
            jitter: 0.0,
            ..Options::default()
        };
        let secs: Vec<u64> = (1..=7)
            .map(|n| reconnect_delay(&exact, n).as_secs())
            .collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(reconnect_delay(&exact, 1000), Duration::from_secs(30));
        let jittered = Options::default();
        for _ in 0..100 {
            let d = reconnect_delay(&jittered, 3).as_secs_f64();
            assert!((3.2..=4.8).contains(&d), "{d}");
        }
    }
}
