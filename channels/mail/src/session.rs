//! The IMAP session handle: the live connection, its capabilities, the selected mailbox and
//! round-trip counters. Commands live in `mailbox.rs`, `fetch.rs` and `idle.rs`.

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use async_imap::Session;
use tokio::sync::watch;

use crate::error::{MailError, Result};
use crate::mailbox_state::MailboxState;
use crate::settings::ImapSettings;
use crate::stream::MailStream;

/// Counts of IMAP commands sent on one session, for tests and round-trip measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImapStats {
    /// Every command sent after login.
    pub commands: u64,
    /// `UID FETCH` commands.
    pub fetches: u64,
    /// `UID SEARCH` commands.
    pub searches: u64,
    /// `IDLE` commands (each re-issue counts).
    pub idles: u64,
    /// `NOOP` commands.
    pub noops: u64,
}

/// One logged-in IMAP connection. Not `Clone`: IMAP is one conversation per connection.
pub struct ImapSession {
    /// `None` after an error that may have left the protocol out of step; every later call
    /// then returns [`MailError::SessionClosed`] and the caller reconnects.
    pub(crate) inner: Option<Session<MailStream>>,
    pub(crate) capabilities: BTreeSet<String>,
    pub(crate) settings: ImapSettings,
    pub(crate) selected: Option<MailboxState>,
    pub(crate) stats: ImapStats,
    pub(crate) listening: watch::Sender<bool>,
    /// Counts the server's answers while waiting (IDLE accepted, IDLE responses, NOOP).
    pub(crate) heard: watch::Sender<u64>,
    pub(crate) tls: bool,
}

impl fmt::Debug for ImapSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImapSession")
            .field("open", &self.inner.is_some())
            .field("tls", &self.tls)
            .field("selected", &self.selected)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl ImapSession {
    /// Capabilities announced after login, upper-cased (`IDLE`, `AUTH=PLAIN`, `SPECIAL-USE`).
    pub fn capabilities(&self) -> &BTreeSet<String> {
        &self.capabilities
    }

    /// Whether the server announced `name` (case-insensitive).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.contains(&name.to_ascii_uppercase())
    }

    /// Whether the transport is encrypted.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Whether the connection is still usable; false after a network or protocol error.
    pub fn is_open(&self) -> bool {
        self.inner.is_some()
    }

    /// The mailbox selected last, with the values SELECT/EXAMINE reported.
    pub fn selected(&self) -> Option<&MailboxState> {
        self.selected.as_ref()
    }

    /// Command counters since login.
    pub fn stats(&self) -> ImapStats {
        self.stats
    }

    /// A receiver that is `true` while [`ImapSession::wait_for_change`] is listening (IDLE
    /// accepted by the server, or the NOOP poll loop running). Health reports and tests use it.
    pub fn listening(&self) -> watch::Receiver<bool> {
        self.listening.subscribe()
    }

    /// A receiver that changes whenever the server answers during
    /// [`ImapSession::wait_for_change`] (IDLE accepted or ended, any response inside IDLE such
    /// as a keepalive or a flag change, a NOOP): evidence the connection is alive while the
    /// mailbox is quiet.
    pub fn heard(&self) -> watch::Receiver<u64> {
        self.heard.subscribe()
    }

    /// Notes one answer from the server for [`ImapSession::heard`].
    pub(crate) fn note_heard(&self) {
        self.heard.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Sends NOOP; also how a caller checks that the connection is alive.
    pub async fn noop(&mut self) -> Result<()> {
        self.stats.noops += 1;
        let limit = self.settings.timeout;
        let session = self.session()?;
        let r = timed("noop", limit, session.noop()).await;
        self.keep_if_sound(r)
    }

    /// Logs out politely; errors are ignored because the connection is dropped either way.
    pub async fn logout(mut self) {
        if let Some(mut session) = self.inner.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), session.logout()).await;
        }
    }

    /// The live session, or [`MailError::SessionClosed`].
    pub(crate) fn session(&mut self) -> Result<&mut Session<MailStream>> {
        self.stats.commands += 1;
        self.inner.as_mut().ok_or(MailError::SessionClosed)
    }

    /// Drops the connection after errors that can leave a half-read response behind, so that
    /// no later command reads a stale answer.
    pub(crate) fn keep_if_sound<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            let sound = matches!(
                e,
                MailError::ServerNo { .. } | MailError::NoMailbox(_) | MailError::Config(_)
            );
            if !sound {
                self.inner = None;
                self.selected = None;
            }
        }
        r
    }
}

/// Runs one async-imap call with the command time limit, converting its error.
pub(crate) async fn timed<T>(
    op: &'static str,
    limit: Duration,
    fut: impl Future<Output = async_imap::error::Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(MailError::from_imap(op, e)),
        Err(_) => Err(MailError::Timeout {
            op,
            secs: limit.as_secs(),
        }),
    }
}
