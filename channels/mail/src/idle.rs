//! Waiting for news in the selected mailbox: IDLE (re-issued every `idle_refresh`) when the
//! server has it, NOOP polling otherwise, both cancellable.

use std::time::Duration;

use async_imap::extensions::idle::{Handle, IdleResponse};
use async_imap::imap_proto::{MailboxDatum, Response, Status};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::error::{MailError, Result};
use crate::session::{ImapSession, timed};
use crate::stream::MailStream;

/// Why [`ImapSession::wait_for_change`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The mailbox changed (new mail, or mail removed): search and fetch again.
    Changed,
    /// The timeout passed without news.
    Timeout,
    /// The cancellation token fired; the session is still usable.
    Cancelled,
}

/// How one IDLE command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleEnd {
    Changed,
    SliceOver,
    Cancelled,
}

/// What an untagged response seen during IDLE means to us.
enum Seen {
    Change,
    Bye,
    Other,
}

/// Longer than any slice: the slice deadline, not async-imap's own timer, ends a wait.
const FAR: Duration = Duration::from_secs(24 * 3600);

impl ImapSession {
    /// Returns when the selected mailbox has news, after `timeout`, or when `cancel` fires.
    /// News that arrived while other commands ran (announced then) counts: it returns at once.
    /// Uses IDLE when advertised (and `settings.use_idle`), re-issued every
    /// `settings.idle_refresh`; otherwise NOOP every `settings.poll_interval`.
    pub async fn wait_for_change(
        &mut self,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Wake> {
        if self.selected.is_none() {
            return Err(MailError::Config(
                "wait_for_change needs a selected mailbox".to_owned(),
            ));
        }
        if self.drain_unsolicited() {
            return Ok(Wake::Changed);
        }
        let deadline = Instant::now() + timeout;
        let result = if self.settings.use_idle && self.has_capability("IDLE") {
            self.idle_until(deadline, cancel).await
        } else {
            self.poll_until(deadline, cancel).await
        };
        self.listening.send_replace(false);
        result
    }

    async fn idle_until(&mut self, deadline: Instant, cancel: &CancellationToken) -> Result<Wake> {
        loop {
            let now = Instant::now();
            if cancel.is_cancelled() {
                return Ok(Wake::Cancelled);
            }
            if now >= deadline {
                return Ok(Wake::Timeout);
            }
            let slice_end = deadline.min(now + self.settings.idle_refresh);
            match self.idle_once(slice_end, cancel).await? {
                IdleEnd::Changed => return Ok(Wake::Changed),
                IdleEnd::Cancelled => return Ok(Wake::Cancelled),
                IdleEnd::SliceOver => {}
            }
        }
    }

    /// One IDLE … DONE exchange. On any error the session is gone (IDLE owns it meanwhile).
    async fn idle_once(&mut self, until: Instant, cancel: &CancellationToken) -> Result<IdleEnd> {
        let session = self.inner.take().ok_or(MailError::SessionClosed)?;
        self.stats.idles += 1;
        self.stats.commands += 1;
        let limit = self.settings.timeout;
        let mut handle = session.idle();
        if let Err(e) = timed("idle", limit, handle.init()).await {
            self.selected = None;
            return Err(e);
        }
        self.listening.send_replace(true);
        self.note_heard();
        let end = wait_in_idle(&mut handle, until, cancel, &self.heard).await;
        self.listening.send_replace(false);
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                self.selected = None;
                return Err(e);
            }
        };
        match timed("idle done", limit, handle.done()).await {
            Ok(session) => {
                self.inner = Some(session);
                self.note_heard();
            }
            Err(e) => {
                self.selected = None;
                return Err(e);
            }
        }
        // Announcements read while ending IDLE are either part of the change that woke us,
        // or news that raced with the end of a slice.
        let more = self.drain_unsolicited();
        Ok(if end == IdleEnd::SliceOver && more {
            IdleEnd::Changed
        } else {
            end
        })
    }

    async fn poll_until(&mut self, deadline: Instant, cancel: &CancellationToken) -> Result<Wake> {
        self.listening.send_replace(true);
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(Wake::Timeout);
            }
            let next = deadline.min(now + self.settings.poll_interval);
            tokio::select! {
                _ = sleep_until(next) => {}
                _ = cancel.cancelled() => return Ok(Wake::Cancelled),
            }
            self.noop().await?;
            self.note_heard();
            if self.drain_unsolicited() {
                return Ok(Wake::Changed);
            }
        }
    }
}

/// Reads IDLE responses until one says the mailbox changed, the slice ends or `cancel` fires.
async fn wait_in_idle(
    handle: &mut Handle<MailStream>,
    until: Instant,
    cancel: &CancellationToken,
    heard: &tokio::sync::watch::Sender<u64>,
) -> Result<IdleEnd> {
    loop {
        // Keep the stop source alive for the whole wait: dropping it interrupts the wait.
        let (wait, _stop) = handle.wait_with_timeout(FAR);
        let response = tokio::select! {
            r = wait => r.map_err(|e| MailError::from_imap("idle", e))?,
            _ = sleep_until(until) => return Ok(IdleEnd::SliceOver),
            _ = cancel.cancelled() => return Ok(IdleEnd::Cancelled),
        };
        if let IdleResponse::NewData(_) = &response {
            heard.send_modify(|n| *n = n.wrapping_add(1));
        }
        match response {
            IdleResponse::NewData(data) => match meaning(data.parsed()) {
                Seen::Change => return Ok(IdleEnd::Changed),
                Seen::Bye => return Err(MailError::ServerBye("BYE during IDLE".to_owned())),
                Seen::Other => {}
            },
            IdleResponse::Timeout => {}
            // With our stop source alive this means the stream ended: the server hung up.
            IdleResponse::ManualInterrupt => {
                return Err(MailError::ServerBye(
                    "connection closed during IDLE".to_owned(),
                ));
            }
        }
    }
}

fn meaning(response: &Response<'_>) -> Seen {
    match response {
        Response::MailboxData(MailboxDatum::Exists(_) | MailboxDatum::Recent(_))
        | Response::Expunge(_)
        | Response::Vanished { .. } => Seen::Change,
        Response::Data {
            status: Status::Bye,
            ..
        } => Seen::Bye,
        _ => Seen::Other,
    }
}
