//! Answers shown while the agent writes them (spec §4.3): the pipeline's
//! [`StreamMode::Edit`](crate::conversation::StreamMode) on Telegram, the way the spec
//! recommends per chat type.
//!
//! - Private chats: `sendMessageDraft` frames of the text so far, under one draft id derived
//!   from the answer's key (a restarted turn animates the same draft). A draft never becomes a
//!   message, so the answer's first outbox piece goes out as an ordinary `sendMessage`: nothing
//!   to record, nothing to finish, and a crash leaves at most a preview that lapses in ~30 s.
//!   Through the agent's long pauses the last frame is sent again ([`super::drafts`]).
//! - Groups (and private chats once Telegram refused drafts): one message, sent at the first
//!   show and then edited with the text so far; the answer's first piece finishes it with an
//!   edit to that piece's text ([`Streams::finish`]). Edits share the group's 20-a-minute pace
//!   with every send; a frame whose slot is not free is skipped, not waited for.
//!
//! Crash safety of the edited message: its record (`telegram_stream/<answer key>`: chat,
//! message id) is written before the message is sent and again with its id. The finish edits
//! to the piece's text, which Telegram answers "not modified" when repeated, so a finish
//! repeated after a crash changes nothing. A record without an id (a crash, or an answer that
//! never came, during the first send) shows nothing more; it keeps the text that send carried,
//! and the answer's first piece, which begins with it, sends only the rest: that beginning is
//! held with a note (`port::held`, `/again` brings it), so no paragraph shows twice and none is
//! lost. A first send refused outright showed nothing: the pieces carry the whole answer.
//!
//! Refusals: a draft Telegram refuses (any answer but a slow-down or a transient failure; the
//! draft's refusal texts are unconfirmed, spec §9, and a server without the method answers 404)
//! turns drafts off for the run with one note on the account, and private chats stream by
//! edits (spec §4.3, "or if drafts fail"). A message that cannot be edited stops showing that
//! answer; its pieces then carry the whole answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use scv_telegram::limits::{DRAFT_MIN_INTERVAL, MAX_DRAFT_UTF16, MAX_TEXT_UTF16};
use scv_telegram::text::utf16_len;
use scv_telegram::{Client, ErrorClass, OutgoingText, ParseMode, Rejection};
use serde::{Deserialize, Serialize};

use super::drafts::{Frame, LiveDrafts};
use super::failure::{DRAFT_REFUSED, REFUSED, failure};
use super::inbound::ReplyRef;
use super::pace::Pace;
use crate::conversation::{ChatId, ReplyContext, SendError, Sent};
use crate::failure::{Class, general};
use crate::ids::{AccountKey, PlatformMsgId};
use crate::store::AccountState;
use crate::supervisor::{HealthHandle, NoteSource};

/// The least time between two shows of one answer: the draft pace the spec calls safe (its
/// rate limit is unconfirmed) and the least edit interval of a private chat. Groups are held
/// to one call every 3 s by the group pace on top.
pub const SHOW_EVERY: std::time::Duration = DRAFT_MIN_INTERVAL;

/// The account-state name prefix of edited messages' records.
const RECORD: &str = "telegram_stream/";

/// A record is kept this long (a finish repeated after a crash finds it), then pruned.
const KEEP_SECS: u64 = 24 * 3600;

/// What is stored of one edited message.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// The chat.
    c: i64,
    /// The message, once sent (`None`: a first send that may or may not have gone out).
    m: Option<i64>,
    /// The text the first send carries, kept only while that send is in doubt (so a restart
    /// can send the rest and hold this part, [`Streams::opened_in_doubt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<String>,
    /// When it was opened (unix seconds), for pruning.
    at: u64,
}

/// One edited message as this run knows it.
struct Shown {
    rec: Record,
    /// The text it is known to show (this run only).
    text: Option<String>,
    /// It will not be edited any more (gone, refused, or its first send is in doubt).
    dead: bool,
}

/// The streamed answers of one run of an account.
pub(super) struct Streams {
    client: Client,
    account: AccountKey,
    state: AccountState,
    health: HealthHandle,
    /// Telegram refused a draft this run: private chats stream by edits.
    drafts_off: AtomicBool,
    /// Shown drafts kept alive through long pauses.
    drafts: LiveDrafts,
    shown: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Shown>>>>,
    pruned: tokio::sync::OnceCell<()>,
}

impl Streams {
    /// The streams of `account`, its messages recorded in `state`, a refusal noted on `health`.
    pub(super) fn new(
        client: Client,
        account: AccountKey,
        state: AccountState,
        health: HealthHandle,
    ) -> Self {
        Streams {
            drafts: LiveDrafts::new(client.clone(), account.clone()),
            client,
            account,
            state,
            health,
            drafts_off: AtomicBool::new(false),
            shown: Mutex::default(),
            pruned: tokio::sync::OnceCell::new(),
        }
    }

    /// Shows `text`, the answer `key` so far, in `chat`: a draft in a private chat, else the
    /// answer's one edited message.
    pub(super) async fn show(
        &self,
        pace: &Pace,
        key: &str,
        chat: i64,
        reply: &ReplyContext,
        text: &str,
    ) -> Result<(), SendError> {
        // Private chats have the user's (positive) id; groups and channels negative ones.
        if chat > 0 && !self.drafts_off.load(Ordering::Relaxed) {
            match self.draft(pace, key, chat, text).await {
                Err(e) if matches!(e.class, Class::Rejected | Class::Fatal) => {
                    self.drafts_refused(&e)
                }
                other => return other,
            }
        }
        self.edit_show(pace, key, chat, reply, text).await
    }

    /// One draft frame (HTML; plain once when the HTML is refused).
    async fn draft(&self, pace: &Pace, key: &str, chat: i64, text: &str) -> Result<(), SendError> {
        if utf16_len(text) > MAX_DRAFT_UTF16 {
            return Err(too_long());
        }
        pace.wait(chat).await;
        let id = draft_id(key);
        let mut frame = Frame {
            chat,
            draft_id: id,
            text: super::render::html(text),
            mode: Some(ParseMode::Html),
        };
        let mut sent = self
            .client
            .send_draft(chat, id, &frame.text, frame.mode, true)
            .await;
        if let Err(e) = &sent
            && e.class() == ErrorClass::Rejected(Rejection::BadMarkup)
        {
            frame.text = text.to_string();
            frame.mode = None;
            sent = self.client.send_draft(chat, id, text, None, true).await;
        }
        match sent {
            Ok(()) => {
                self.drafts.shown(key, frame);
                Ok(())
            }
            // 404 would read as a bad token: for a draft it means a server without the method.
            Err(e) if matches!(e.class(), ErrorClass::Fatal { .. }) => {
                Err(SendError::rejected(DRAFT_REFUSED, e.to_string()))
            }
            Err(e) => Err(failure(&e, &self.account)),
        }
    }

    /// Telegram will not take drafts: private chats stream by edits for the rest of the run.
    fn drafts_refused(&self, e: &SendError) {
        if !self.drafts_off.swap(true, Ordering::Relaxed) {
            tracing::warn!(account = %self.account, error = %e, "Telegram refuses sendMessageDraft; private answers stream by editing one message");
            self.health.note(
                NoteSource::Cards,
                Some(format!(
                    "Telegram refused a streamed draft ({}); private answers stream by editing one message until the account restarts",
                    e.message
                )),
            );
        }
    }

    /// Shows `text` in the answer's edited message, sending it first when there is none.
    async fn edit_show(
        &self,
        pace: &Pace,
        key: &str,
        chat: i64,
        reply: &ReplyContext,
        text: &str,
    ) -> Result<(), SendError> {
        if utf16_len(text) > MAX_TEXT_UTF16 {
            return Err(too_long());
        }
        let Some(entry) = self.entry(key).await else {
            return self.open(pace, key, chat, reply, text).await;
        };
        let mut s = entry.lock().await;
        let Some(message) = s.rec.m.filter(|_| !s.dead) else {
            return Err(dead("the message of this answer is not known to be sent"));
        };
        if !pace.try_wait(chat).await {
            return Err(busy());
        }
        match self.edit(chat, message, text).await {
            Ok(()) => {
                s.text = Some(text.to_string());
                Ok(())
            }
            Err(e) => {
                s.dead |= e.class == Class::Rejected;
                Err(e)
            }
        }
    }

    /// Sends the answer's message showing `text`, recorded before and after.
    async fn open(
        &self,
        pace: &Pace,
        key: &str,
        chat: i64,
        reply: &ReplyContext,
        text: &str,
    ) -> Result<(), SendError> {
        self.pruned.get_or_init(|| self.prune()).await;
        if !pace.try_wait(chat).await {
            return Err(busy());
        }
        let mut rec = Record {
            c: chat,
            m: None,
            t: Some(text.to_string()),
            at: crate::supervisor::unix_now(),
        };
        self.save(key, &rec).await?;
        let r = ReplyRef::parse(reply);
        let mut out = OutgoingText::html(chat, super::render::html(text));
        if r.g && r.m != 0 {
            out = out.replying_to(r.m, false);
        }
        let sent = match self.client.send_text(&out).await {
            Err(e) if e.class() == ErrorClass::Rejected(Rejection::BadMarkup) => {
                let plain = OutgoingText {
                    text: text.to_string(),
                    parse_mode: None,
                    ..out
                };
                self.client.send_text(&plain).await
            }
            other => other,
        };
        let message = match sent {
            Ok(m) => m,
            Err(e) => {
                let err = failure(&e, &self.account);
                // A slow-down sent nothing for sure: the next frame opens it.
                if matches!(err.class, Class::SlowDown(_)) {
                    self.forget(key).await;
                    return Err(err);
                }
                if !e.outcome_unknown() {
                    // Refused: nothing shows, so the answer's pieces carry all of it.
                    rec.t = None;
                    self.save(key, &rec).await?;
                }
                self.insert(key, rec, None, true);
                return Err(dead(&err.message));
            }
        };
        (rec.m, rec.t) = (Some(message.message_id), None);
        self.save(key, &rec).await?;
        self.insert(key, rec, Some(text.to_string()), false);
        Ok(())
    }

    /// The text the first send of answer `key`'s message carried, when that send may or may
    /// not have shown it (a crash or an unknown outcome during it) and `piece`, the answer's
    /// first piece, begins with it: the caller holds that part and sends the rest.
    pub(super) async fn opened_in_doubt(&self, key: &str, piece: &str) -> Option<String> {
        let entry = self.entry(key).await?;
        let s = entry.lock().await;
        let opened = s.rec.t.clone().filter(|_| s.rec.m.is_none())?;
        piece.starts_with(&opened).then_some(opened)
    }

    /// Delivers `text`, the first piece of answer `key`, by editing the answer's message to
    /// it; `None` when the answer has no message (the piece goes out as a new message).
    pub(super) async fn finish(
        &self,
        pace: &Pace,
        key: &str,
        text: &str,
    ) -> Option<Result<Sent, SendError>> {
        // A draft shown for it is replaced by the message now: no more refreshes.
        self.drafts.done(key);
        let entry = self.entry(key).await?;
        let mut s = entry.lock().await;
        let message = s.rec.m?;
        let chat = s.rec.c;
        let sent = Sent {
            msg_id: Some(PlatformMsgId::new(message.to_string())),
            chat: Some(ChatId::new(chat.to_string())),
        };
        if s.dead {
            // Unless the message shows the piece already, the piece goes as a new message
            // (text it shows repeated, never lost).
            let rest = rest_of(text, s.text.as_deref());
            return if rest.trim().is_empty() {
                Some(Ok(sent))
            } else {
                None
            };
        }
        pace.wait(chat).await;
        match self.edit(chat, message, text).await {
            Ok(()) => {
                s.text = Some(text.to_string());
                Some(Ok(sent))
            }
            Err(e) if e.class == Class::Rejected => {
                s.dead = true;
                None
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// `editMessageText` to `text` as HTML (plain once when refused); "not modified" is done.
    async fn edit(&self, chat: i64, message: i64, text: &str) -> Result<(), SendError> {
        let html = super::render::html(text);
        let edited = match self
            .client
            .edit_text(chat, message, &html, Some(ParseMode::Html), None)
            .await
        {
            Err(e) if e.class() == ErrorClass::Rejected(Rejection::BadMarkup) => {
                self.client.edit_text(chat, message, text, None, None).await
            }
            other => other,
        };
        edited.map(drop).map_err(|e| failure(&e, &self.account))
    }

    /// The answer's message, from this run or from the record an earlier run left.
    async fn entry(&self, key: &str) -> Option<Arc<tokio::sync::Mutex<Shown>>> {
        if let Some(s) = self.lock().get(key).cloned() {
            return Some(s);
        }
        let name = format!("{RECORD}{key}");
        let stored = self.state.call(move |s| s.get_json::<Record>(&name)).await;
        match stored {
            Ok(Some(rec)) => {
                // A first send in doubt shows nothing more.
                let dead = rec.m.is_none();
                Some(self.insert(key, rec, None, dead))
            }
            Ok(None) => None,
            Err(e) => {
                tracing::error!(account = %self.account, error = %e, "cannot read a streamed answer's record; its pieces go as new messages");
                None
            }
        }
    }

    fn insert(
        &self,
        key: &str,
        rec: Record,
        text: Option<String>,
        dead: bool,
    ) -> Arc<tokio::sync::Mutex<Shown>> {
        let s = Arc::new(tokio::sync::Mutex::new(Shown { rec, text, dead }));
        self.lock().insert(key.to_string(), s.clone());
        s
    }

    async fn forget(&self, key: &str) {
        self.lock().remove(key);
        let name = format!("{RECORD}{key}");
        if let Err(e) = self.state.call(move |s| s.delete(&name)).await {
            tracing::warn!(account = %self.account, error = %e, "cannot forget a streamed answer's record");
        }
    }

    async fn save(&self, key: &str, rec: &Record) -> Result<(), SendError> {
        let (name, rec) = (format!("{RECORD}{key}"), rec.clone());
        self.state
            .call(move |s| s.put_json(&name, &rec))
            .await
            .map_err(|e| {
                SendError::transient(
                    general::STORE,
                    format!("cannot record a streamed answer: {e}"),
                )
            })
    }

    /// Deletes records older than a day, and this run's copies of them (once per run).
    async fn prune(&self) {
        let now = crate::supervisor::unix_now();
        let pruned = self
            .state
            .call(move |s| {
                let mut gone = Vec::new();
                for (name, value) in s.scan(RECORD)? {
                    let old = serde_json::from_str::<Record>(&value)
                        .map_or(true, |r| r.at + KEEP_SECS < now);
                    if old {
                        s.delete(&name)?;
                        gone.push(name[RECORD.len()..].to_string());
                    }
                }
                Ok(gone)
            })
            .await;
        match pruned {
            Ok(gone) => {
                let mut shown = self.lock();
                for key in gone {
                    shown.remove(&key);
                }
            }
            Err(e) => {
                tracing::warn!(account = %self.account, error = %e, "cannot prune old streamed answers' records; the next run does")
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::Mutex<Shown>>>> {
        self.shown.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The draft id of answer `key`: stable across restarts (FNV-1a), positive, never 0.
fn draft_id(key: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // 52 bits: safe in every JSON reader (spec §1.1 says ids have at most 52 significant bits).
    ((h & ((1 << 52) - 1)) as i64).max(1)
}

/// What of `text` a message showing `shown` does not show: all of it when it showed something
/// else (or nothing this run is sure of).
fn rest_of<'a>(text: &'a str, shown: Option<&str>) -> &'a str {
    match shown {
        Some(s) if text.starts_with(s) => &text[s.len()..],
        Some(s) if s.starts_with(text) => "",
        _ => text,
    }
}

fn too_long() -> SendError {
    SendError::rejected(
        general::MESSAGE_TOO_LONG,
        "the answer so far is over one message; its pieces carry it",
    )
}

fn dead(why: &str) -> SendError {
    SendError::rejected(
        REFUSED,
        format!("the answer's message cannot be updated: {why}"),
    )
}

/// The group's slot is taken: this frame is skipped, the next carries the full text.
fn busy() -> SendError {
    SendError::transient(
        super::failure::THROTTLED,
        "the group's send pace has no slot free for this frame",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_ids_are_stable_positive_and_distinct() {
        let a = draft_id("telegram:bot/r/1/answer");
        assert_eq!(a, draft_id("telegram:bot/r/1/answer"));
        assert!(a > 0 && a < 1 << 52);
        assert_ne!(a, draft_id("telegram:bot/r/2/answer"));
    }

    #[test]
    fn the_rest_is_what_the_message_does_not_show() {
        assert_eq!(rest_of("abc def", Some("abc")), " def");
        assert_eq!(rest_of("abc", Some("abc def")), "");
        assert_eq!(rest_of("abc", Some("xyz")), "abc");
        assert_eq!(rest_of("abc", None), "abc");
    }
}
