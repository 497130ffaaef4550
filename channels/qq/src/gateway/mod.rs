//! The gateway (§1.3, §1.4): a WebSocket that says Hello, takes Identify or Resume, pushes
//! dispatches with a per-session sequence `s`, and wants a heartbeat every `heartbeat_interval`.
//!
//! There is no per-event ack. Durability is the Resume cursor `(session_id, s)`: the daemon
//! journals a [`Delivery`] first and only then calls [`Gateway::commit`] with its cursor (and
//! persists the cursor), so a reconnect or a restart resumes after the last *journaled* event and
//! the platform replays the rest. Replays overlap what was journaled but not yet committed:
//! dedupe on [`Delivery::dedupe_key`]. When Resume is refused (4006/4007, op 9 `false`) or a
//! close code demands a fresh Identify, [`Inbound::SessionLost`] says events after the cursor
//! may be gone (the platform's own gap, §1.4).

mod session;

use std::sync::Mutex;
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::classify::ErrorClass;
use crate::client::{BotIdentity, Client};
use crate::error::{Call, Error};
use crate::event::{Event, EventError};
use crate::limits::DEFAULT_INTENTS;

/// Where a session stands: persist it after journaling, hand it back in
/// [`GatewayOptions::resume_from`] after a restart.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cursor {
    /// `session_id` from READY.
    pub session_id: String,
    /// The last `s` whose event is journaled.
    pub seq: u64,
}

/// Gateway settings; the defaults suit production.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// Intents to identify with.
    pub intents: u32,
    /// Largest frame accepted; a bigger one ends the socket (no frame is parsed unbounded).
    pub max_frame_bytes: usize,
    /// How long to wait for Hello after connecting.
    pub hello_timeout: Duration,
    /// First wait after a failed socket; doubles per failure up to `max_retry`.
    pub first_retry: Duration,
    /// Longest wait between failed sockets.
    pub max_retry: Duration,
    /// The cursor persisted by the last run: the first socket Resumes from it.
    pub resume_from: Option<Cursor>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self {
            intents: DEFAULT_INTENTS,
            max_frame_bytes: 4 << 20,
            hello_timeout: Duration::from_secs(15),
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(60),
            resume_from: None,
        }
    }
}

/// What the gateway hands the account task, in order.
#[derive(Debug)]
pub enum Inbound {
    /// READY (a new session) or RESUMED: the link works. Persist `cursor` (nothing to journal).
    Ready {
        /// The bot, from READY (`None` on RESUMED).
        bot: Option<BotIdentity>,
        /// The session and sequence now in force.
        cursor: Cursor,
        /// Whether this continued a session.
        resumed: bool,
    },
    /// A fresh Identify replaced the session of `lost_after`: events pushed after it and before
    /// the new session may be lost. The daemon notes it in status.
    SessionLost {
        /// The last committed cursor of the old session.
        lost_after: Cursor,
    },
    /// One dispatch: journal it, then [`Gateway::commit`] its cursor.
    Event(Delivery),
}

/// One dispatch from the gateway.
#[derive(Debug)]
pub struct Delivery {
    /// Its place in the session: commit it after journaling.
    pub cursor: Cursor,
    /// `t`.
    pub kind: String,
    /// The frame's `id` (event id).
    pub frame_id: Option<String>,
    /// The parsed event, or why it could not be read (count it, commit it, go on).
    pub event: Result<Event, EventError>,
}

impl Delivery {
    /// The dedupe key: the message or click id, else the frame id, else the cursor (§2.3).
    pub fn dedupe_key(&self) -> String {
        match &self.event {
            Ok(Event::Message(m)) => m.id.clone(),
            Ok(Event::Interaction(i)) => i.id.clone(),
            _ => self
                .frame_id
                .clone()
                .unwrap_or_else(|| format!("s:{}:{}", self.cursor.session_id, self.cursor.seq)),
        }
    }
}

/// Where the link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Fetching the URL, dialing, or waiting for READY/RESUMED.
    Connecting,
    /// READY or RESUMED arrived on the current socket.
    Connected,
    /// Between sockets, or stopped.
    Disconnected,
}

/// A snapshot of the link, published on every change (read without locks).
#[derive(Debug, Clone)]
pub struct LinkStatus {
    /// Current state.
    pub state: LinkState,
    /// When the last frame (heartbeat ACK included) arrived: protocol evidence for health.
    pub last_evidence: Option<Instant>,
    /// Sockets opened.
    pub sockets: u64,
    /// Identify frames sent (a new session each).
    pub identifies: u64,
    /// Resume frames sent.
    pub resumes: u64,
    /// Why the last socket ended.
    pub last_error: Option<String>,
}

/// The gateway of one bot. Made by the account task; runs until cancelled or fatal.
#[derive(Debug)]
pub struct Gateway {
    client: Client,
    options: GatewayOptions,
    status: watch::Sender<LinkStatus>,
    committed: Mutex<Option<Cursor>>,
}

/// `GET /gateway/bot` (§1.3 step 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayInfo {
    /// The WebSocket URL.
    pub url: String,
    /// Session starts left in the current period (`None` when not given).
    pub remaining: Option<u64>,
    /// When the period resets.
    pub reset_after: Duration,
}

impl Client {
    /// `GET /gateway/bot`: the URL and the session start limit.
    pub async fn gateway_info(&self) -> Result<GatewayInfo, Error> {
        let v = self
            .call(Call::Gateway, Method::GET, "/gateway/bot", None)
            .await?;
        let url = v
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty());
        let Some(url) = url else {
            return Err(Error::Malformed {
                call: Call::Gateway,
                detail: "no url".into(),
            });
        };
        let limit = v.get("session_start_limit");
        let num = |k: &str| limit.and_then(|l| l.get(k)).and_then(Value::as_u64);
        Ok(GatewayInfo {
            url: url.to_owned(),
            remaining: num("remaining"),
            reset_after: Duration::from_millis(num("reset_after").unwrap_or(0)),
        })
    }
}

/// How the next socket starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Resume,
    Identify,
}

impl Gateway {
    /// Prepares the gateway; does no IO.
    pub fn new(client: Client, options: GatewayOptions) -> Self {
        let (status, _) = watch::channel(LinkStatus {
            state: LinkState::Disconnected,
            last_evidence: None,
            sockets: 0,
            identifies: 0,
            resumes: 0,
            last_error: None,
        });
        let committed = Mutex::new(options.resume_from.clone());
        Self {
            client,
            options,
            status,
            committed,
        }
    }

    /// Subscribes to link status changes.
    pub fn status(&self) -> watch::Receiver<LinkStatus> {
        self.status.subscribe()
    }

    /// Records that everything up to `cursor` is journaled; the next Resume starts there.
    /// Call it only after journaling (an older cursor of the same session is ignored).
    pub fn commit(&self, cursor: Cursor) {
        let mut slot = self.committed.lock().unwrap_or_else(|p| p.into_inner());
        let newer = slot
            .as_ref()
            .is_none_or(|c| c.session_id != cursor.session_id || c.seq < cursor.seq);
        if newer {
            *slot = Some(cursor);
        }
    }

    /// The last committed cursor.
    pub fn committed(&self) -> Option<Cursor> {
        self.committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn take_committed(&self) -> Option<Cursor> {
        self.committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Runs sockets one after another until `cancel` fires or `inbound` is dropped (`Ok`), or an
    /// error classed `Fatal` (bad credentials, 4014, 4914, 4915...) ends it (`Err`). A full
    /// `inbound` queue pauses reading (heartbeats go on), so nothing is dropped.
    pub async fn run(
        &self,
        inbound: mpsc::Sender<Inbound>,
        cancel: CancellationToken,
    ) -> Result<(), Error> {
        let mut start = if self.committed().is_some() {
            Start::Resume
        } else {
            Start::Identify
        };
        let mut failures: u32 = 0;
        loop {
            if start == Start::Identify
                && let Some(lost_after) = self.take_committed()
                && inbound
                    .send(Inbound::SessionLost { lost_after })
                    .await
                    .is_err()
            {
                return Ok(());
            }
            self.status.send_modify(|s| s.state = LinkState::Connecting);
            let mut reached = false;
            let end = tokio::select! {
                _ = cancel.cancelled() => session::End::Stopped,
                e = self.session(start, &inbound, &cancel, &mut reached) => e,
            };
            self.status
                .send_modify(|s| s.state = LinkState::Disconnected);
            let (next, err) = match end {
                session::End::Stopped => return Ok(()),
                session::End::Reconnect(next) => (next, None),
                session::End::Failed(e) => (next_start(&e, start), Some(e)),
            };
            failures = if reached { 0 } else { failures + 1 };
            let mut wait = self.backoff(failures);
            if let Some(e) = err {
                tracing::info!(error = %e, "qq gateway socket ended");
                self.status
                    .send_modify(|s| s.last_error = Some(e.to_string()));
                match e.class() {
                    ErrorClass::Fatal(_) => return Err(e),
                    ErrorClass::SlowDown(d) => wait = wait.max(d),
                    ErrorClass::Transient | ErrorClass::Rejected(_) => {}
                }
                if matches!(e, Error::GatewayClosed { code: 4004 }) {
                    self.client.drop_current_token().await;
                }
            }
            start = next;
            tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// No wait after a socket that reached READY/RESUMED; then `first_retry` doubling.
    fn backoff(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
        let wait = self.options.first_retry.checked_mul(factor);
        wait.unwrap_or(Duration::MAX).min(self.options.max_retry)
    }
}

/// How to start again after `e` (the close-code table of §1.3).
fn next_start(e: &Error, current: Start) -> Start {
    match e {
        // Auth failed (after a token refresh), session invalid, bad seq, internal errors.
        Error::GatewayClosed {
            code: 4004 | 4006 | 4007 | 4900..=4913,
        } => Start::Identify,
        // A frame over the size limit would come again on Resume (the platform replays after
        // the cursor), so the session is given up: the gap is reported, the link lives.
        Error::TooLarge { .. } => Start::Identify,
        // A start that never reached the socket (token, URL, limit) keeps its plan.
        Error::SessionLimit { .. } => current,
        // 4008 (after its wait), 4009, dropped links, zombie links, network: Resume.
        _ => Start::Resume,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_codes_choose_resume_or_identify() {
        let closed = |code| Error::GatewayClosed { code };
        for code in [4004, 4006, 4007, 4900, 4913] {
            assert_eq!(
                next_start(&closed(code), Start::Resume),
                Start::Identify,
                "{code}"
            );
        }
        for code in [0, 1000, 1006, 4008, 4009] {
            assert_eq!(
                next_start(&closed(code), Start::Identify),
                Start::Resume,
                "{code}"
            );
        }
        assert_eq!(
            next_start(&Error::HeartbeatLost(Duration::ZERO), Start::Identify),
            Start::Resume
        );
    }

    #[test]
    fn commits_only_move_forward_within_a_session() {
        let client =
            Client::new(crate::ClientOptions::new(crate::Credentials::new("1", "s"))).unwrap();
        let g = Gateway::new(client, GatewayOptions::default());
        let c = |s: &str, seq| Cursor {
            session_id: s.into(),
            seq,
        };
        g.commit(c("a", 5));
        g.commit(c("a", 3));
        assert_eq!(g.committed(), Some(c("a", 5)));
        g.commit(c("b", 1));
        assert_eq!(g.committed(), Some(c("b", 1)));
    }
}
