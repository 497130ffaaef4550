//! Answers shown while the agent writes them, WeCom's native way (spec §4.5): `stream` frames
//! on the message's `req_id`, each carrying the whole text so far (each replaces the bubble),
//! at most one in flight per handle and at most every 500 ms (the pipeline's
//! [`StreamMode::Edit`](crate::conversation::StreamMode) pace). The answer's first outbox
//! piece finishes the bubble with its text; later pieces go as messages of their own.
//!
//! The window: a bubble must be finished by 5 min 30 s after the user's message (§4.2), never
//! with blank text (§4.4). A show that comes too close to that finishes the bubble with the
//! text so far; the first piece then sends only what the bubble does not show. A bubble whose
//! handle is gone (`846604/5/8`, `600039`, a new socket) is dropped: the first piece goes as a
//! proactive message, so the answer still ends exactly once.
//!
//! A user has at most 3 messages in progress with the bot (§2.3): a fourth answer for the same
//! user while three bubbles are open is not streamed; it goes whole when written. When WeCom
//! refuses a stream frame for the client (`600039`, §4.5), streaming stops for the run: the
//! refusal is kept here for the sender, which notes it once and sends answers whole.
//!
//! In memory only: after a restart the turn runs again and its pieces go proactively (an old
//! bubble cannot be finished: its handle belongs to the old socket).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scv_wecom::classify::DEVICE_NOT_SUPPORTED;
use scv_wecom::limits::{
    IN_PROGRESS_PER_USER, STREAM_CONTENT_MAX_BYTES, STREAM_FINISH_BY, STREAM_WINDOW,
};
use scv_wecom::{Connection, Error, ErrorClass, StreamReply};
use tokio::time::Instant;

use super::failure::HANDLE_GONE;
use super::handles::Handles;
use super::inbound::ReplyRef;
use crate::conversation::{ReplyContext, SendError};
use crate::ids::AccountKey;
use crate::supervisor::{HealthHandle, NoteSource};
use crate::words::{Lang, Msg};

/// How long before the window's end a show finishes the bubble instead of updating it.
pub(super) const CLOSE_EARLY: Duration = Duration::from_secs(10);

/// One bubble of this run.
struct Bubble {
    reply: StreamReply,
    /// The text the bubble was finished with early (the window was closing).
    closed: Option<String>,
    /// WeCom will not take frames for it any more.
    dead: bool,
}

/// How the first piece of a streamed answer goes.
pub(super) enum Finish {
    /// The bubble shows it: nothing more to send.
    Done,
    /// Send this as a message of its own (the bubble could not show it, or shows only a part).
    Rest(String),
}

/// An open bubble in the run's map: whose message it answers, since when.
#[derive(Clone)]
struct Open {
    user: String,
    since: Instant,
    bubble: Arc<tokio::sync::Mutex<Bubble>>,
}

/// The streamed bubbles of one account's run.
pub(super) struct Streams {
    conn: Connection,
    account: AccountKey,
    handles: Arc<Handles>,
    open: Mutex<HashMap<String, Open>>,
    /// WeCom's code when it refused streams for this run (0: not refused).
    refused: AtomicI64,
    /// The refusal was handed to the sender to note.
    noted: AtomicBool,
    /// Status says a user has the most bubbles open.
    busy_noted: AtomicBool,
    health: HealthHandle,
}

impl Streams {
    /// Bubbles on `conn`'s handles, as the intake keeps them.
    pub(super) fn new(
        conn: Connection,
        account: AccountKey,
        handles: Arc<Handles>,
        health: HealthHandle,
    ) -> Self {
        Streams {
            conn,
            account,
            handles,
            open: Mutex::default(),
            refused: AtomicI64::new(0),
            noted: AtomicBool::new(false),
            busy_noted: AtomicBool::new(false),
            health,
        }
    }

    /// Shows `text`, the answer `key` so far, in its bubble (opened by the first show).
    pub(super) async fn show(
        &self,
        key: &str,
        reply: &ReplyContext,
        text: &str,
    ) -> Result<(), SendError> {
        let gone = || {
            SendError::rejected(
                HANDLE_GONE,
                "the message's reply handle is gone; the answer goes whole",
            )
        };
        if text.len() > STREAM_CONTENT_MAX_BYTES {
            return Err(SendError::rejected(
                crate::failure::general::MESSAGE_TOO_LONG,
                "the answer outgrew one stream bubble",
            ));
        }
        if self.refused() {
            return Err(SendError::rejected(
                HANDLE_GONE,
                "WeCom refuses streams for this client; the answer goes whole",
            ));
        }
        let bubble = match self.bubble(key) {
            Some(b) => b,
            None => self.open_bubble(key, &ReplyRef::parse(reply))?,
        };
        let mut b = bubble.lock().await;
        if b.dead {
            return Err(gone());
        }
        if b.closed.is_some() {
            return Ok(());
        }
        let age = Instant::now().duration_since(b.reply.handle().received_at);
        if must_close(age) {
            b.reply
                .finish(text)
                .await
                .map_err(|e| self.failed(&mut b, &e))?;
            b.closed = Some(text.to_string());
            return Ok(());
        }
        match b.reply.update(text).await {
            Ok(_) => Ok(()),
            // The next frame replaces the whole bubble anyway.
            Err(e) if e.outcome_unknown() => Ok(()),
            Err(e) => Err(self.failed(&mut b, &e)),
        }
    }

    /// Opens the bubble of answer `key`, unless its handle is gone or its user already has
    /// [`IN_PROGRESS_PER_USER`] bubbles open (§2.3: the answer then goes whole when written).
    fn open_bubble(
        &self,
        key: &str,
        reply: &ReplyRef,
    ) -> Result<Arc<tokio::sync::Mutex<Bubble>>, SendError> {
        let handle = self.handles.get(&reply.r).ok_or_else(|| {
            SendError::rejected(
                HANDLE_GONE,
                "the message's reply handle is gone; the answer goes whole",
            )
        })?;
        let user = if reply.u.is_empty() {
            &reply.c
        } else {
            &reply.u
        };
        let mut open = self.open.lock().map_err(|_| {
            SendError::rejected(
                HANDLE_GONE,
                "the stream map is poisoned; the answer goes whole",
            )
        })?;
        let now = Instant::now();
        let busy = open
            .values()
            .filter(|o| &o.user == user && now.duration_since(o.since) < STREAM_WINDOW)
            .count();
        if busy >= IN_PROGRESS_PER_USER {
            tracing::info!(account = %self.account, open = busy, "the user has the most messages in progress WeCom allows; this answer goes whole");
            let note = Msg::StreamsBusy { most: busy };
            self.health
                .note(NoteSource::Cards, Some(note.text(Lang::En).into_owned()));
            self.busy_noted.store(true, Ordering::SeqCst);
            return Err(SendError::rejected(
                HANDLE_GONE,
                "three answers to this user are being shown already; this one goes whole",
            ));
        }
        let bubble = Arc::new(tokio::sync::Mutex::new(Bubble {
            reply: StreamReply::new(self.conn.clone(), handle),
            closed: None,
            dead: false,
        }));
        let entry = Open {
            user: user.clone(),
            since: now,
            bubble: bubble.clone(),
        };
        open.insert(key.to_string(), entry);
        Ok(bubble)
    }

    /// Keeps WeCom's refusal of streams for the client (`600039` on any stream frame, a whole
    /// reply on a handle included, §4.5), once: later refusals change nothing.
    pub(super) fn saw(&self, e: &Error) {
        if e.class()
            == (ErrorClass::HandleGone {
                code: DEVICE_NOT_SUPPORTED,
            })
        {
            let _ = self.refused.compare_exchange(
                0,
                DEVICE_NOT_SUPPORTED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
    }

    /// Whether WeCom refused streams for this run (then answers go whole).
    pub(super) fn refused(&self) -> bool {
        self.refused.load(Ordering::SeqCst) != 0
    }

    /// WeCom's code, the first time this is asked after it refused streams; then `None`.
    pub(super) fn take_refusal(&self) -> Option<i64> {
        let code = self.refused.load(Ordering::SeqCst);
        (code != 0 && !self.noted.swap(true, Ordering::SeqCst)).then_some(code)
    }

    /// Finishes the bubble of answer `key` with `text` (its first piece), if this run opened
    /// one; `None`: no bubble, send the piece as usual.
    pub(super) async fn finish(&self, key: &str, text: &str) -> Option<Result<Finish, Error>> {
        let bubble = self.open.lock().ok()?.remove(key)?.bubble;
        if !self.refused() && self.busy_noted.swap(false, Ordering::SeqCst) {
            // A bubble ends: the next answer may be shown again.
            self.health.note(NoteSource::Cards, None);
        }
        let mut b = bubble.lock().await;
        if b.dead {
            return Some(Ok(Finish::Rest(text.to_string())));
        }
        if let Some(shown) = &b.closed {
            if shown.starts_with(text) {
                return Some(Ok(Finish::Done));
            }
            let rest = text.strip_prefix(shown.as_str()).unwrap_or(text).trim();
            return Some(Ok(if rest.is_empty() {
                Finish::Done
            } else {
                Finish::Rest(rest.to_string())
            }));
        }
        Some(match b.reply.finish(text).await {
            Ok(()) => Ok(Finish::Done),
            Err(e) if matches!(e.class(), ErrorClass::HandleGone { .. }) => {
                self.saw(&e);
                tracing::info!(account = %self.account, error = %e, "stream handle gone; the answer goes proactively");
                Ok(Finish::Rest(text.to_string()))
            }
            Err(e) => Err(e),
        })
    }

    /// Whether this run opened a bubble for answer `key`.
    pub(super) fn has(&self, key: &str) -> bool {
        self.bubble(key).is_some()
    }

    fn bubble(&self, key: &str) -> Option<Arc<tokio::sync::Mutex<Bubble>>> {
        self.open.lock().ok()?.get(key).map(|o| o.bubble.clone())
    }

    fn failed(&self, b: &mut Bubble, e: &Error) -> SendError {
        if matches!(e.class(), ErrorClass::HandleGone { .. }) {
            self.saw(e);
            b.dead = true;
            tracing::info!(account = %self.account, error = %e, "stream bubble refused; the answer goes whole");
        }
        super::failure::failure(e, &self.account)
    }
}

/// Whether a bubble this old must be finished now rather than updated.
pub(super) fn must_close(age: Duration) -> bool {
    age + CLOSE_EARLY >= STREAM_FINISH_BY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bubble_closes_ten_seconds_before_its_window_ends() {
        assert!(!must_close(Duration::from_secs(60)));
        assert!(!must_close(STREAM_FINISH_BY - Duration::from_secs(11)));
        assert!(must_close(STREAM_FINISH_BY - CLOSE_EARLY));
        assert!(must_close(Duration::from_secs(600)));
    }
}
