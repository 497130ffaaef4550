//! Answers that go out while the agent still writes them, and a word when a turn runs long.
//!
//! The turn worker reads the turn's [`crate::agent::TurnEvents`] while the turn runs. On a
//! platform that streams by chunks ([`StreamMode::Chunks`], WeChat: it cannot edit a sent
//! message), finished paragraphs are queued as the answer's own outbox pieces
//! (`<answer key>/<i>`, the keys the final store uses), so the first part of a long answer is
//! on the phone before the model ends, and the store after the turn only adds what is missing.
//!
//! Durability comes from the outbox itself: a piece is queued once (its key is unique), in
//! order, and stays queued through a crash. The message stays unanswered in the journal until
//! the turn's end is stored, so a restart runs the turn again; the new run reads the pieces
//! already queued ([`committed`]) and skips the part of its answer they already say
//! ([`rest`]): nothing is sent twice, nothing is lost.

mod chunks;
mod edit;
mod progress;
mod sentence;

use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use chunks::Chunker;
pub(super) use chunks::Mark;
pub(super) use chunks::rest;
use edit::Editor;
use progress::Progress;

use super::body::Body;
use super::link::StreamMode;
use super::message::OutboundKind;
use super::{AccountRuntime, ChatRuntime, Conversation, Inbound};
use crate::agent::TurnEvent;
use crate::words::Lang;

/// What an earlier run of the same turn streamed before a crash or an outage: how many pieces
/// it queued under `key` and how far they reach (from their keys, `key/<i>.<upto>.<digest>`).
/// Read inside the store call that fetches the chat's next message, so a turn starts after one
/// call, not three.
pub(super) fn committed_in(t: &rusqlite::Transaction<'_>, key: &str) -> (usize, Option<Mark>) {
    // Every key of this answer sorts between `key/` and `key0` ('0' follows '/').
    let (lo, hi) = crate::ids::OutboxKey::pieces_range(key);
    let read = t
        .prepare_cached("SELECT idem_key FROM outbox WHERE idem_key >= ?1 AND idem_key < ?2")
        .and_then(|mut st| {
            st.query_map([&lo, &hi], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        });
    match read {
        Ok(keys) => keys
            .iter()
            .filter_map(|k| Mark::read(key, k))
            .max_by_key(|(i, _)| *i)
            .map_or((0, None), |(i, mark)| (i + 1, Some(mark))),
        Err(e) => {
            // Without it the answer goes out whole after the turn: repeated text, never lost.
            tracing::error!(error = %e, "cannot read what an earlier run of a turn queued");
            committed_nothing()
        }
    }
}

/// One running turn as the chat sees it: what it streamed so far and what it said meanwhile.
pub(super) struct Live<'a> {
    conv: &'a Arc<Conversation>,
    rt: &'a Arc<AccountRuntime>,
    chat: &'a Arc<ChatRuntime>,
    m: &'a Inbound,
    key: String,
    chunker: Option<Chunker>,
    editor: Option<Editor>,
    progress: Progress,
}

/// What a turn streamed: how much of the answer is queued (for [`rest`]) and what an edited
/// message shows.
pub(super) struct Streamed {
    /// Pieces queued while the turn ran ([`StreamMode::Chunks`]).
    pub(super) queued: (usize, Option<Mark>),
    /// The text the edited message shows ([`StreamMode::Edit`]), when one was shown.
    pub(super) shown: Option<String>,
}

impl<'a> Live<'a> {
    /// A turn answering `m` under `key`; `stream` false keeps the answer whole (a cut note must
    /// come first, before any of it). `committed` is what an earlier run already queued
    /// ([`committed`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        conv: &'a Arc<Conversation>,
        rt: &'a Arc<AccountRuntime>,
        chat: &'a Arc<ChatRuntime>,
        m: &'a Inbound,
        key: String,
        lang: Lang,
        stream: bool,
        committed: (usize, Option<Mark>),
    ) -> Self {
        let max = rt.link.sender.limits().max_chars;
        let mode = rt.link.sender.stream_mode();
        let chunker = (stream && mode == StreamMode::Chunks)
            .then(|| Chunker::new(max, committed.0, committed.1));
        let editor = match mode {
            StreamMode::Edit { every } if stream => Some(Editor::new(every, max)),
            _ => None,
        };
        Live {
            conv,
            rt,
            chat,
            m,
            key,
            chunker,
            editor,
            progress: Progress::new(lang),
        }
    }

    /// Runs the turn `fut` while streaming its events; returns its output and how much of the
    /// answer is now queued (for [`rest`]).
    pub(super) async fn run<F: Future>(
        mut self,
        mut events: UnboundedReceiver<TurnEvent>,
        fut: F,
    ) -> (F::Output, Streamed) {
        tokio::pin!(fut);
        let mut listening = true;
        let out = loop {
            let due = self.progress.due();
            let show = self.editor.as_ref().and_then(Editor::due);
            tokio::select! {
                biased;
                out = &mut fut => break out,
                ev = events.recv(), if listening => match ev {
                    Some(TurnEvent::Text(piece)) => {
                        self.progress.saw_text();
                        self.text(&piece).await;
                    }
                    Some(TurnEvent::Status(line)) => self.progress.saw_status(line),
                    None => listening = false,
                },
                _ = tokio::time::sleep_until(show.unwrap_or_else(tokio::time::Instant::now)), if show.is_some() => {
                    self.show().await;
                }
                _ = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => {
                    if let Some((n, line)) = self.progress.take() {
                        self.say(&format!("progress-{n}"), &line).await;
                    }
                }
            }
        };
        // What arrived with the end goes out with the final store, in full pieces.
        let queued = self
            .chunker
            .as_ref()
            .map_or(committed_nothing(), Chunker::queued);
        let shown = self
            .editor
            .as_ref()
            .and_then(|e| e.showing().map(String::from));
        (out, Streamed { queued, shown })
    }

    /// Shows the answer so far in the edited message (one show in flight: this awaits it).
    async fn show(&mut self) {
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        let text = editor.take();
        let shown = self
            .rt
            .link
            .sender
            .stream_show(&self.key, &self.m.chat, &self.m.reply, &text)
            .await;
        let now = tokio::time::Instant::now();
        match shown {
            Ok(()) => {
                editor.shown(text.len(), true, now);
                self.progress.saw_output();
            }
            // The platform will not show it (no such message, too old): the final store's
            // pieces carry the answer.
            Err(e)
                if matches!(
                    e.class,
                    crate::failure::Class::Rejected | crate::failure::Class::Fatal
                ) =>
            {
                tracing::info!(account = %self.m.account, error = %e, "cannot show an answer as it is written; it goes out whole");
                editor.shown(text.len(), false, now);
            }
            Err(e) => {
                tracing::debug!(account = %self.m.account, error = %e, "showing an answer failed for now");
                editor.later(now);
            }
        }
    }

    /// Takes the next piece of the answer and queues the paragraphs it finished, if enough.
    async fn text(&mut self, piece: &str) {
        if let Some(editor) = self.editor.as_mut() {
            editor.push(piece);
        }
        let Some(chunker) = self.chunker.as_mut() else {
            return;
        };
        chunker.push(piece);
        let Some((first, pieces, mark)) = chunker.ready() else {
            return;
        };
        let (a, chat_id, reply, key) = (
            self.m.account.clone(),
            self.m.chat.clone(),
            self.m.reply.clone(),
            self.key.clone(),
        );
        let n = pieces.len();
        let queued = pieces;
        let stored = self
            .conv
            .store
            .call(move |t| {
                let items: Vec<super::journal::NewOutbound<'_>> = queued
                    .iter()
                    .enumerate()
                    .map(|(i, p)| super::journal::NewOutbound {
                        chat: &chat_id,
                        text: p,
                        body: &Body::Text,
                        key: mark.key(&key, first + i).into(),
                        reply: &reply,
                        kind: OutboundKind::Reply,
                    })
                    .collect();
                super::journal::enqueue(t, &a, &items)
            })
            .await;
        match stored {
            Ok(_) => {
                chunker.committed(n, mark);
                self.progress.saw_output();
                self.chat.wake_send();
                tracing::debug!(account = %self.m.account, pieces = n, "streamed part of an answer");
            }
            // Not queued: the final store after the turn sends it instead.
            Err(e) => {
                tracing::error!(account = %self.m.account, error = %e, "cannot queue part of an answer")
            }
        }
    }

    /// Queues one short line of the bridge's own about this turn (`what` tells it apart).
    async fn say(&mut self, what: &str, line: &str) {
        let key = String::from(crate::ids::OutboxKey::reply(
            &self.m.account,
            &self.m.msg_id,
            what,
        ));
        let queued = self
            .conv
            .outbox
            .enqueue(
                &self.m.account,
                &self.m.chat,
                &[line.to_string()],
                &Body::Text,
                &key,
                &self.m.reply,
                OutboundKind::Reply,
            )
            .await;
        match queued {
            Ok(_) => self.chat.wake_send(),
            Err(e) => {
                tracing::warn!(account = %self.rt.link.account, error = %e, "cannot queue a progress line")
            }
        }
    }
}

/// Nothing streamed: the final store queues the whole answer.
pub(super) fn committed_nothing() -> (usize, Option<Mark>) {
    (0, None)
}
