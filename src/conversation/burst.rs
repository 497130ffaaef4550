//! What one turn answers: the chat's oldest waiting message and the ones that came after it
//! while the previous turn ran (a burst: one answer, the messages in order, the model sees all),
//! or a message so old it is answered with the note that it was sent while the bridge was away.
//!
//! "While the previous turn ran" is told by the journal's order: each turn notes the newest
//! journal place when it was read (its horizon), and the next turn merges only messages
//! journaled after it. Messages that were already waiting together (one poll's batch, a
//! backlog after a restart) are answered one by one, as before; with `[chats] merge_ms` a
//! first message after a quiet spell waits that long and takes everything after it.
//!
//! Made by the turn worker inside the store call that reads the journal (`Ask::next`); the
//! answer's outbox key is the first message's, and the transaction that stores the answer
//! marks every merged message done, so a crash before it asks the same burst again.

use super::AccountRuntime;
use super::chat::ChatRuntime;
use super::journal::{self, Pending};
use super::stream::Mark;
use crate::config::{AccountKey, AgentChoice};
use crate::ids::{ChatId, PlatformMsgId};
use crate::words::Lang;

/// The most messages one turn answers together; the rest wait for the next turn.
const MAX_BURST: usize = 32;

/// The longest a platform plausibly holds a message back: they keep undelivered messages for a
/// day or so (Telegram: 24 hours). A sending time further back than this is a clock that is
/// off (or a fixed one), not an outage, so it never makes a message old.
const MAX_HELD_BACK_MS: u64 = 7 * 24 * 3600 * 1000;

/// A chat's next turn with what it first needs from the store, read in one call.
pub(super) struct Next {
    /// The first message, its text the burst's texts in order. Its reply context stays the
    /// first's: the answer is stored under the first message's key, and a platform that
    /// spends a reply budget per answered message (QQ's `msg_seq`) must see one message
    /// answered however the burst is read again after a crash.
    pub(super) pending: Pending,
    /// The other messages this turn answers, marked done with the first.
    pub(super) also: Vec<PlatformMsgId>,
    /// The first message is older than `[chats] away_minutes`: it is answered with the note,
    /// not by the agent.
    pub(super) away: bool,
    /// The language to write to the chat in.
    pub(super) lang: Lang,
    /// What an earlier run of this turn already queued (streamed chunks).
    pub(super) committed: (usize, Option<Mark>),
    /// The agent this chat picked with `/agent NAME`, if any.
    pub(super) chosen: Option<String>,
    /// The newest journal place when this turn was read: what comes after arrived while it ran.
    pub(super) horizon: i64,
}

impl Next {
    /// Every message this turn answers: the first, then the burst.
    pub(super) fn ids(&self) -> Vec<PlatformMsgId> {
        std::iter::once(self.pending.inbound.msg_id.clone())
            .chain(self.also.iter().cloned())
            .collect()
    }
}

/// What [`Ask::next`] needs to know about the chat, taken before the store call.
pub(super) struct Ask {
    account: AccountKey,
    chat: ChatId,
    /// The account's fixed language, if it has one.
    fixed: Option<Lang>,
    /// Whether answers stream as chunks (only then can an earlier run have queued some).
    chunks: bool,
    /// How old a message may be before it gets the away note, in milliseconds.
    away_after_ms: u64,
    /// Now, in Unix milliseconds.
    now_ms: u64,
    /// When this account's pipeline attached, in Unix milliseconds: a message journaled
    /// before it waited through a stop of the bridge.
    attached_ms: u64,
    /// Merge the messages journaled after this place (the previous turn's horizon, or the
    /// first message's with `merge_ms`); `None`: merge nothing already waiting.
    after: Option<i64>,
}

impl Ask {
    /// The read of `chat`'s next turn, merging what was journaled after `after`.
    pub(super) fn of(
        rt: &AccountRuntime,
        chat: &ChatRuntime,
        choice: &AgentChoice,
        after: Option<i64>,
    ) -> Ask {
        Ask {
            after,
            account: rt.link.account.clone(),
            chat: chat.chat.clone(),
            fixed: rt.link.language.fixed(),
            chunks: rt.link.sender.stream_mode() == super::StreamMode::Chunks,
            away_after_ms: choice.away_after_ms,
            now_ms: crate::clock::wall_ms(),
            attached_ms: rt.attached_ms,
        }
    }

    /// The chat's next turn (its burst, its language, what an earlier run queued, the agent the
    /// chat picked), in the call.
    pub(super) fn next(&self, t: &rusqlite::Transaction<'_>) -> rusqlite::Result<Option<Next>> {
        let mut waiting = journal::new_in_chat(t, &self.account, &self.chat, MAX_BURST)?;
        if waiting.is_empty() {
            return Ok(None);
        }
        let horizon = journal::horizon(t)?;
        let mut pending = waiting.remove(0);
        let away = self.away(&pending);
        let mut also = Vec::new();
        // A message with media, or an old one, is a turn of its own; so is one the policy
        // treats otherwise (a group's stranger after its owner).
        let after = self.after.unwrap_or(horizon);
        if !away && pending.inbound.media.is_empty() {
            for p in waiting {
                let merges = p.rowid > after
                    && !self.away(&p)
                    && p.inbound.media.is_empty()
                    && p.tools == pending.tools;
                if !merges {
                    break;
                }
                let m = &mut pending.inbound;
                m.text.push_str("\n\n");
                m.text.push_str(&p.inbound.text);
                also.push(p.inbound.msg_id);
            }
        }
        let m = &pending.inbound;
        let lang = self.fixed.unwrap_or_else(|| {
            super::lang::chosen_in(t, &m.account, &m.chat, crate::words::detect(&m.text))
        });
        let committed = if self.chunks {
            super::stream::committed_in(t, &answer_key(m))
        } else {
            super::stream::committed_nothing()
        };
        let chosen = super::choice::chosen_in(t, &self.account, &self.chat)?;
        Ok(Some(Next {
            pending,
            also,
            away,
            lang,
            committed,
            chosen,
            horizon,
        }))
    }

    /// Whether `p` waited past the bound: the platform held it back that long by its own
    /// sending time (the bridge or the account was down when it was sent), or it was journaled
    /// before this run began and has waited that long since (the bridge stopped with it
    /// journaled). A message without a sending time (0) is judged by the second alone.
    fn away(&self, p: &Pending) -> bool {
        let (at, bound) = (p.inbound.at_unix_ms, self.away_after_ms);
        let journaled_ms = p.journaled_unix.saturating_mul(1000);
        let held = journaled_ms.saturating_sub(at);
        let held_back = at > 0 && held > bound && held <= MAX_HELD_BACK_MS;
        let waited_through_a_stop =
            journaled_ms < self.attached_ms && self.now_ms.saturating_sub(journaled_ms) > bound;
        held_back || waited_through_a_stop
    }
}

/// The outbox key of `m`'s answer (its pieces are `<key>/<n>`).
pub(super) fn answer_key(m: &super::Inbound) -> String {
    String::from(crate::ids::OutboxKey::answer(&m.account, &m.msg_id))
}
