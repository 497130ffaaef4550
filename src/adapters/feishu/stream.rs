//! Answers written into a CardKit card while the agent writes them (media-and-streaming.md
//! §5.1): the pipeline's [`StreamMode::Edit`](crate::conversation::StreamMode) on Feishu.
//!
//! The first show creates the card entity (streaming on, the text so far in its markdown
//! element) and sends it once, under a `uuid` derived from the answer's key; later shows put
//! the full text so far at the next sequence. The answer's first outbox piece finishes the
//! card ([`CardStreams::finish`]): its text as the final content, then streaming closed.
//!
//! Crash safety: each card's record (card id, message id, how far its sequence is reserved,
//! its phase) is kept in the account's state under `feishu_card/<answer key>`, written before
//! the card is sent and before a sequence beyond the reserved block is used. A restart takes
//! up after the whole reserved block, so a sequence is never used twice, and finishes the same
//! card; the phases make finishing idempotent (a repeated finish after a crash sends nothing).
//!
//! A card that can no longer be updated (older than 14 days, gone, a limit it cannot pass)
//! gets no more updates; its finish sends what the card does not show as a new message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use scv_feishu::Client;
use scv_feishu::cardkit::{ANSWER_ELEMENT, CardFault, card_fault, streaming_card};
use scv_feishu::rest::MessageContent;
use serde::{Deserialize, Serialize};

use super::address::{receive_id, uuid_for};
use super::failure::{API_ERROR, REJECTED, THROTTLED, failure};
use super::inbound::ReplyRef;
use crate::conversation::{ChatId, ReplyContext, SendError, Sent};
use crate::failure::{Class, general};
use crate::ids::{AccountKey, PlatformMsgId};
use crate::store::AccountState;
use crate::supervisor::{HealthHandle, NoteSource};
use crate::words::{Lang, Msg};

/// The account-state name prefix of card records.
const RECORD: &str = "feishu_card/";

/// Sequences reserved per write of a record: a restart skips what is left of the block.
const BLOCK: i64 = 32;

/// After CardKit refused to create a card for good, answers go out whole this long.
const RETRY_REFUSED: std::time::Duration = std::time::Duration::from_secs(3600);

/// A finished card's record is kept this long (a finish repeated after a crash finds it).
const KEEP_DONE_SECS: u64 = 24 * 3600;

/// How far a card is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Phase {
    /// Streaming: shows the text so far.
    Open,
    /// Shows the final text; streaming still to be closed.
    Closing,
    /// Finished (or its rest sent as a new message): nothing more to do.
    Done,
}

/// What is stored of one card.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    card_id: String,
    message_id: Option<String>,
    /// The highest sequence reserved; every sequence used is at most this.
    seq_hi: i64,
    phase: Phase,
    /// When the card was created (unix seconds), for pruning finished records.
    at: u64,
}

/// One card as this run knows it.
struct Card {
    rec: Record,
    /// The next sequence to use.
    next: i64,
    /// The text the card is known to show (this run only).
    shown: Option<String>,
    /// CardKit will not update it any more.
    dead: bool,
}

/// How a finish went.
pub(super) enum Finish {
    /// The card shows the piece (or did already): the message is the card.
    Done(Sent),
    /// The card cannot show it: send this rest as a new message, then call
    /// [`CardStreams::rest_sent`].
    Rest(String),
}

/// The streamed cards of one account.
pub(super) struct CardStreams {
    client: Client,
    account: AccountKey,
    state: AccountState,
    cards: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Card>>>>,
    loaded: tokio::sync::OnceCell<()>,
    /// When CardKit last refused to create a card for good (no `cardkit:card:write` scope,
    /// say): answers go out whole for [`RETRY_REFUSED`] rather than spend a call per answer on
    /// the same refusal; then cards are tried again (the scope may have been granted).
    refused: Mutex<Option<tokio::time::Instant>>,
    /// The run's health: a refusal shows as the account's `cards` note in status (not only
    /// the log), until a card is created again.
    health: HealthHandle,
    /// Answers whose card is done, oldest first, with when: forgotten after a day, so a
    /// daemon running for months keeps only a day of them.
    finished: Mutex<std::collections::VecDeque<(u64, String)>>,
}

impl CardStreams {
    /// The cards of `account`, recorded in `state`; refusals noted on `health`.
    pub(super) fn new(
        client: Client,
        account: AccountKey,
        state: AccountState,
        health: HealthHandle,
    ) -> Self {
        CardStreams {
            client,
            account,
            state,
            cards: Mutex::default(),
            loaded: tokio::sync::OnceCell::new(),
            refused: Mutex::new(None),
            health,
            finished: Mutex::default(),
        }
    }

    /// Shows `text` in the card of answer `key`, creating and sending it on the first call.
    pub(super) async fn show(
        &self,
        key: &str,
        chat: &ChatId,
        reply: &ReplyContext,
        text: &str,
    ) -> Result<(), SendError> {
        let card = match self.card(key).await {
            Some(c) => c,
            None => return self.open(key, chat, reply, text).await,
        };
        let mut c = card.lock().await;
        if c.dead || c.rec.phase != Phase::Open {
            return Err(dead("the card of this answer can no longer be updated"));
        }
        if c.rec.message_id.is_none() {
            self.send_card(&mut c, key, chat, reply).await?;
        }
        self.put(&mut c, key, text).await?;
        c.shown = Some(text.to_string());
        Ok(())
    }

    /// Whether answer `key` has a card (then its first piece goes through [`Self::finish`]).
    pub(super) async fn has(&self, key: &str) -> bool {
        self.card(key).await.is_some()
    }

    /// Finishes the card of answer `key` with `text`, the answer's first piece.
    pub(super) async fn finish(
        &self,
        key: &str,
        chat: &ChatId,
        reply: &ReplyContext,
        text: &str,
    ) -> Result<Finish, SendError> {
        let Some(card) = self.card(key).await else {
            return Ok(Finish::Rest(text.to_string()));
        };
        let mut c = card.lock().await;
        if c.rec.phase == Phase::Open && !c.dead {
            if c.rec.message_id.is_none() {
                match self.send_card(&mut c, key, chat, reply).await {
                    Err(e) if e.class == Class::Rejected => c.dead = true,
                    other => other?,
                }
            }
            if !c.dead {
                match self.put(&mut c, key, text).await {
                    Ok(()) => {
                        c.shown = Some(text.to_string());
                        c.rec.phase = Phase::Closing;
                        self.save(key, &c.rec).await?;
                    }
                    Err(e) if e.class == Class::Rejected => {}
                    // Too frequent or failing for now: the outbox tries again.
                    Err(e) => return Err(e),
                }
            }
        }
        if c.rec.phase == Phase::Closing && !c.dead {
            self.close(&mut c, key).await?;
            self.done(&mut c, key).await?;
        }
        if c.rec.phase == Phase::Done {
            return Ok(Finish::Done(sent(&c.rec)));
        }
        // Dead: what the card does not show goes out as a new message. Streaming is closed
        // best-effort (a card left streaming cannot be forwarded).
        let _ = self.close(&mut c, key).await;
        let rest = rest_of(text, c.shown.as_deref());
        if rest.trim().is_empty() {
            self.done(&mut c, key).await?;
            return Ok(Finish::Done(sent(&c.rec)));
        }
        Ok(Finish::Rest(rest.trim_start().to_string()))
    }

    /// Records that the rest of answer `key` went out as a new message.
    pub(super) async fn rest_sent(&self, key: &str) -> Result<(), SendError> {
        if let Some(card) = self.card(key).await {
            let mut c = card.lock().await;
            self.done(&mut c, key).await?;
        }
        Ok(())
    }

    /// Records the card of answer `key` done (kept a day for a finish repeated after a crash).
    async fn done(&self, c: &mut Card, key: &str) -> Result<(), SendError> {
        c.rec.phase = Phase::Done;
        c.shown = None;
        self.save(key, &c.rec).await?;
        let now = crate::supervisor::unix_now();
        self.finished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back((now, key.to_string()));
        Ok(())
    }

    /// Forgets cards done more than a day ago, here and in the account's state.
    async fn forget_old(&self) {
        let now = crate::supervisor::unix_now();
        let old: Vec<String> = {
            let mut f = self.finished.lock().unwrap_or_else(|p| p.into_inner());
            let mut old = Vec::new();
            while f.front().is_some_and(|(at, _)| at + KEEP_DONE_SECS < now) {
                if let Some((_, key)) = f.pop_front() {
                    old.push(key);
                }
            }
            old
        };
        if old.is_empty() {
            return;
        }
        {
            let mut cards = self.lock();
            for key in &old {
                cards.remove(key);
            }
        }
        let deleted = self
            .state
            .call(move |s| {
                for key in &old {
                    s.delete(&format!("{RECORD}{key}"))?;
                }
                Ok(())
            })
            .await;
        if let Err(e) = deleted {
            tracing::warn!(account = %self.account, error = %e, "cannot forget old card records; the next start does");
        }
    }

    /// The card of answer `key`, loading the stored records on first use.
    async fn card(&self, key: &str) -> Option<Arc<tokio::sync::Mutex<Card>>> {
        self.loaded.get_or_init(|| self.load()).await;
        self.lock().get(key).cloned()
    }

    /// Reads every stored record (the cards a previous run left), dropping old finished ones.
    async fn load(&self) {
        let now = crate::supervisor::unix_now();
        let read = self
            .state
            .call(move |s| {
                let mut keep = Vec::new();
                for (name, value) in s.scan(RECORD)? {
                    match serde_json::from_str::<Record>(&value) {
                        Ok(r) if r.phase == Phase::Done && r.at + KEEP_DONE_SECS < now => {
                            s.delete(&name)?
                        }
                        Ok(r) => keep.push((name[RECORD.len()..].to_string(), r)),
                        Err(_) => s.delete(&name)?,
                    }
                }
                Ok(keep)
            })
            .await;
        match read {
            Ok(records) => {
                let mut finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
                let mut cards = self.lock();
                for (key, rec) in records {
                    if rec.phase == Phase::Done {
                        finished.push_back((rec.at, key.clone()));
                    }
                    // Whatever of the block was used before the restart is skipped.
                    let next = rec.seq_hi + 1;
                    let card = Card {
                        rec,
                        next,
                        shown: None,
                        dead: false,
                    };
                    cards.insert(key, Arc::new(tokio::sync::Mutex::new(card)));
                }
                finished.make_contiguous().sort();
            }
            Err(e) => {
                tracing::error!(account = %self.account, error = %e, "cannot read the streamed cards; answers of a restarted turn go out as new messages")
            }
        }
    }

    /// Creates the card of answer `key` showing `text`, records it, then sends it.
    async fn open(
        &self,
        key: &str,
        chat: &ChatId,
        reply: &ReplyContext,
        text: &str,
    ) -> Result<(), SendError> {
        self.forget_old().await;
        let refused = *self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if refused.is_some_and(|at| at.elapsed() < RETRY_REFUSED) {
            return Err(dead("CardKit refused to create cards for this account"));
        }
        let card_json = streaming_card(&super::markdown::for_card(text));
        let card_id = match self.client.create_card(&card_json).await {
            Ok(id) => {
                self.accepted();
                id
            }
            Err(e) => {
                let err = self.error(&e);
                if matches!(err.class, Class::Fatal | Class::Rejected) {
                    tracing::warn!(account = %self.account, error = %e, "Feishu refuses CardKit cards; answers go out whole (grant the app the cardkit:card:write scope)");
                    *self.refused.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(tokio::time::Instant::now());
                    let note = Msg::CardsRefused {
                        error: e.to_string(),
                    };
                    self.health
                        .note(NoteSource::Cards, Some(note.text(Lang::En).into_owned()));
                    return Err(dead(&e.to_string()));
                }
                return Err(err);
            }
        };
        // Recorded before it is sent: a crash after the send still knows the card.
        let rec = Record {
            card_id,
            message_id: None,
            seq_hi: BLOCK,
            phase: Phase::Open,
            at: crate::supervisor::unix_now(),
        };
        self.save(key, &rec).await?;
        let card = Arc::new(tokio::sync::Mutex::new(Card {
            rec,
            next: 1,
            shown: None,
            dead: false,
        }));
        self.lock().insert(key.to_string(), card.clone());
        let mut c = card.lock().await;
        self.send_card(&mut c, key, chat, reply).await?;
        // Shown only once the owner can see it.
        c.shown = Some(text.to_string());
        Ok(())
    }

    /// Sends the card entity (once: the uuid makes a resend after a crash the same message).
    async fn send_card(
        &self,
        c: &mut Card,
        key: &str,
        chat: &ChatId,
        reply: &ReplyContext,
    ) -> Result<(), SendError> {
        let content = MessageContent::card_entity(&c.rec.card_id);
        let uuid = uuid_for(&crate::ids::OutboxKey::derived(key, "card"));
        let r = ReplyRef::parse(reply);
        let sent = match (&r.message_id, r.group) {
            (Some(parent), true) => self.client.reply(parent, &content, true, &uuid).await,
            _ => {
                let to = receive_id(chat.as_str());
                self.client.send(&to, &content, &uuid).await
            }
        };
        let sent = sent.map_err(|e| self.error(&e))?;
        c.rec.message_id = Some(sent.message_id);
        self.save(key, &c.rec).await
    }

    /// Puts `text` into the card, following the spec's table for refusals.
    async fn put(&self, c: &mut Card, key: &str, text: &str) -> Result<(), SendError> {
        let content = super::markdown::for_card(text);
        let mut reopened = false;
        for _ in 0..3 {
            let seq = self.seq(c, key).await?;
            let e = match self
                .client
                .put_card_content(&c.rec.card_id, ANSWER_ELEMENT, &content, seq)
                .await
            {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            match card_fault(&e) {
                // The next frame carries the full text anyway.
                Some(CardFault::SkipFrame) => return Err(throttled()),
                Some(CardFault::Reopen) if !reopened => {
                    reopened = true;
                    let seq = self.seq(c, key).await?;
                    if let Err(e) = self
                        .client
                        .set_card_streaming(&c.rec.card_id, true, seq)
                        .await
                    {
                        return Err(self.refused(c, &e));
                    }
                }
                Some(CardFault::Resync) => c.next += BLOCK,
                Some(CardFault::Later) => {
                    return Err(SendError::transient(API_ERROR, e.to_string()));
                }
                _ => return Err(self.refused(c, &e)),
            }
        }
        c.dead = true;
        Err(dead("the card kept refusing its update"))
    }

    /// Closes streaming (a card already closed counts as closed).
    async fn close(&self, c: &mut Card, key: &str) -> Result<(), SendError> {
        let seq = self.seq(c, key).await?;
        match self
            .client
            .set_card_streaming(&c.rec.card_id, false, seq)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) => match card_fault(&e) {
                Some(CardFault::Reopen | CardFault::Dead) => Ok(()),
                Some(CardFault::Resync) => {
                    c.next += BLOCK;
                    Err(SendError::transient(API_ERROR, e.to_string()))
                }
                Some(CardFault::SkipFrame) => Err(throttled()),
                _ => Err(self.error(&e)),
            },
        }
    }

    /// The next sequence of the card, reserving a new block first when it is used up.
    async fn seq(&self, c: &mut Card, key: &str) -> Result<i64, SendError> {
        if c.next > c.rec.seq_hi {
            c.rec.seq_hi = c.next + BLOCK - 1;
            self.save(key, &c.rec).await?;
        }
        let s = c.next;
        c.next += 1;
        Ok(s)
    }

    async fn save(&self, key: &str, rec: &Record) -> Result<(), SendError> {
        let (name, rec) = (format!("{RECORD}{key}"), rec.clone());
        self.state
            .call(move |s| s.put_json(&name, &rec))
            .await
            .map_err(|e| SendError::transient(general::STORE, format!("cannot record a card: {e}")))
    }

    /// The card is dead when CardKit refuses it for good; other failures are classified as
    /// any Feishu call's.
    fn refused(&self, c: &mut Card, e: &scv_feishu::Error) -> SendError {
        match card_fault(e) {
            Some(CardFault::Dead | CardFault::Reopen) => {
                c.dead = true;
                dead(&e.to_string())
            }
            _ => self.error(e),
        }
    }

    /// CardKit created a card: a refusal noted earlier (the scope since granted) is over.
    fn accepted(&self) {
        let was = self
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if was.is_some() {
            self.health.note(NoteSource::Cards, None);
        }
    }

    fn error(&self, e: &scv_feishu::Error) -> SendError {
        failure(e, &self.account)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::Mutex<Card>>>> {
        self.cards.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn sent(rec: &Record) -> Sent {
    Sent {
        msg_id: rec.message_id.clone().map(PlatformMsgId::new),
        chat: None,
    }
}

fn dead(why: &str) -> SendError {
    SendError::rejected(
        REJECTED,
        format!("the answer's card cannot be updated: {why}"),
    )
}

fn throttled() -> SendError {
    SendError::slow_down(
        THROTTLED,
        "too many card updates",
        std::time::Duration::from_secs(1),
    )
}

/// What of `text` a card showing `shown` does not show: all of it when the card showed
/// something else (or nothing this run is sure of); repeated text rather than lost text.
fn rest_of<'a>(text: &'a str, shown: Option<&str>) -> &'a str {
    match shown {
        Some(s) if text.starts_with(s) => &text[s.len()..],
        // The card shows more than this piece (the rest goes in the next pieces).
        Some(s) if s.starts_with(text) => "",
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rest_is_what_the_card_does_not_show() {
        assert_eq!(rest_of("abc def", Some("abc")), " def");
        assert_eq!(rest_of("abc", Some("abc def")), "");
        assert_eq!(rest_of("abc", Some("xyz")), "abc");
        assert_eq!(rest_of("abc", None), "abc");
    }
}
