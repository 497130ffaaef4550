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
//! In memory only: after a restart the turn runs again and its pieces go proactively (an old
//! bubble cannot be finished: its handle belongs to the old socket).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scv_wecom::limits::{STREAM_CONTENT_MAX_BYTES, STREAM_FINISH_BY};
use scv_wecom::{Connection, Error, ErrorClass, StreamReply};
use tokio::time::Instant;

use super::failure::HANDLE_GONE;
use super::handles::Handles;
use super::inbound::ReplyRef;
use crate::conversation::{ReplyContext, SendError};
use crate::ids::AccountKey;

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

/// The streamed bubbles of one account's run.
pub(super) struct Streams {
    conn: Connection,
    account: AccountKey,
    handles: Arc<Handles>,
    open: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Bubble>>>>,
}

impl Streams {
    /// Bubbles on `conn`'s handles, as the intake keeps them.
    pub(super) fn new(conn: Connection, account: AccountKey, handles: Arc<Handles>) -> Self {
        Streams {
            conn,
            account,
            handles,
            open: Mutex::default(),
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
        let bubble = match self.bubble(key) {
            Some(b) => b,
            None => {
                let handle = self
                    .handles
                    .get(&ReplyRef::parse(reply).r)
                    .ok_or_else(gone)?;
                let b = Arc::new(tokio::sync::Mutex::new(Bubble {
                    reply: StreamReply::new(self.conn.clone(), handle),
                    closed: None,
                    dead: false,
                }));
                if let Ok(mut open) = self.open.lock() {
                    open.insert(key.to_string(), b.clone());
                }
                b
            }
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

    /// Finishes the bubble of answer `key` with `text` (its first piece), if this run opened
    /// one; `None`: no bubble, send the piece as usual.
    pub(super) async fn finish(&self, key: &str, text: &str) -> Option<Result<Finish, Error>> {
        let bubble = self.open.lock().ok()?.remove(key)?;
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
        self.open.lock().ok()?.get(key).cloned()
    }

    fn failed(&self, b: &mut Bubble, e: &Error) -> SendError {
        if matches!(e.class(), ErrorClass::HandleGone { .. }) {
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
