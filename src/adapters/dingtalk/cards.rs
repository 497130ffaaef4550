//! Answers written into a DingTalk AI card while the agent writes them (spec §4.6 A): the
//! pipeline's [`StreamMode::Edit`](crate::conversation::StreamMode) on DingTalk, used only when
//! the account names its card template (`card_template_id`; without one answers go whole).
//!
//! The first show creates and delivers the card with the text so far; later shows stream the
//! whole text so far into the template's content key (`isFull`), at most once a second (the
//! pipeline's `every`). The answer's first outbox piece finishes the card: its text as the final
//! content, then `flowStatus` finished. A piece longer than one card should hold (3 000
//! characters; what the service does past it is unconfirmed, so the safe side stays under it)
//! finishes the card with its first part and sends the rest as markdown.
//!
//! Crash safety: each card's record (`outTrackId`, phase) is kept in the account's state under
//! `dingtalk_card/<answer key>`, written before the card is created and again once it is
//! finished. A restart shows into the same card and finishes it; a finish repeated after a
//! crash finds the record done and sends nothing. A card that cannot be shown or finished
//! (never created, refused) is left, and its piece goes as a new message.
//!
//! After a refusal that means "cards do not work now" (403/429/5xx, not delivered), answers go
//! whole for 30 minutes (spec §4.6), and the account's `cards` note says so.

use std::collections::HashMap;
use std::sync::Mutex;

use scv_dingtalk::Client;
use scv_dingtalk::card::{AnswerCard, CardSpace, CardTemplate, FlowStatus, new_id};
use scv_dingtalk::limits::{CARD_CONTENT_MAX_CHARS, CARD_DEGRADE_FOR};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::failure::failure;
use super::reply::Target;
use crate::conversation::SendError;
use crate::failure::general;
use crate::ids::AccountKey;
use crate::store::AccountState;
use crate::supervisor::{HealthHandle, NoteSource};

/// The account-state name prefix of card records.
const RECORD: &str = "dingtalk_card/";

/// How far a card is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Phase {
    /// Created (or about to be): shows the text so far.
    Open,
    /// Finished with the piece's first part; the rest still to be sent as messages.
    Closing,
    /// Finished, and the rest (if any) sent: nothing more to do.
    Done,
    /// Never created, or refused: the piece goes as a message.
    Dead,
}

/// What is stored of one card (kept in the account's state: add fields, never rename).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// `outTrackId`.
    t: String,
    /// How far it is.
    p: Phase,
}

/// How a finish went.
pub(super) enum Finish {
    /// The card shows the whole piece (or did already).
    Done,
    /// The card could not take it all: send this as new messages, then call
    /// [`CardStreams::rest_sent`].
    Rest(String),
}

/// The streamed cards of one account.
pub(super) struct CardStreams {
    client: Client,
    template: CardTemplate,
    account: AccountKey,
    state: AccountState,
    health: HealthHandle,
    /// Cards this run shows into, by answer key.
    open: tokio::sync::Mutex<HashMap<String, AnswerCard>>,
    /// Until when answers go whole after a refusal.
    degraded: Mutex<Option<Instant>>,
}

impl CardStreams {
    /// The cards of `account` from `template`, recorded in `state`; refusals noted on `health`.
    pub(super) fn new(
        client: Client,
        template: CardTemplate,
        account: AccountKey,
        state: AccountState,
        health: HealthHandle,
    ) -> Self {
        CardStreams {
            client,
            template,
            account,
            state,
            health,
            open: tokio::sync::Mutex::default(),
            degraded: Mutex::new(None),
        }
    }

    /// Shows `text`, the answer `key` so far, in its card (created on the first call).
    /// `Rejected` when the answer cannot be shown in a card (any more): its pieces carry it.
    pub(super) async fn show(
        &self,
        key: &str,
        target: &Target,
        text: &str,
    ) -> Result<(), SendError> {
        if AnswerCard::is_full(text) {
            return Err(refused("the answer is longer than one card holds"));
        }
        let mut open = self.open.lock().await;
        if !open.contains_key(key) {
            let card = match self.record(key).await {
                Some(r) if r.p != Phase::Open => {
                    return Err(refused("the answer's card is finished or refused"));
                }
                Some(r) => AnswerCard::resume(&self.client, &self.template, r.t),
                None => self.create(key, target).await?,
            };
            open.insert(key.to_string(), card);
        }
        let Some(card) = open.get(key) else {
            return Err(refused("no card"));
        };
        match card.update(text).await {
            Ok(()) => Ok(()),
            Err(e) => {
                // No more shows: the pieces carry the answer, and the finish leaves the card.
                let t = card.out_track_id().to_string();
                open.remove(key);
                self.put(key, &Record { t, p: Phase::Dead }).await?;
                Err(self.refusal(&e))
            }
        }
    }

    /// Whether answer `key` has a card (this run's or a recorded one).
    pub(super) async fn has(&self, key: &str) -> bool {
        self.open.lock().await.contains_key(key) || self.record(key).await.is_some()
    }

    /// Finishes the card of answer `key` with `text`, its first piece. Idempotent: a finish
    /// repeated after a crash never streams into the finished card again (that would reopen
    /// it, spec §4.6).
    pub(super) async fn finish(&self, key: &str, text: &str) -> Result<Finish, SendError> {
        let Some(rec) = self.record(key).await else {
            return Ok(Finish::Rest(text.to_string()));
        };
        let (shown, rest) = fit_card(text);
        match rec.p {
            Phase::Done => return Ok(Finish::Done),
            Phase::Dead => return Ok(Finish::Rest(text.to_string())),
            Phase::Closing => return Ok(Finish::Rest(rest)),
            Phase::Open => {}
        }
        let card = self.open.lock().await.remove(key);
        let mut card =
            card.unwrap_or_else(|| AnswerCard::resume(&self.client, &self.template, rec.t.clone()));
        let (phase, outcome) = match card.finish(&shown, false).await {
            Ok(()) if rest.is_empty() => (Phase::Done, Finish::Done),
            Ok(()) => (Phase::Closing, Finish::Rest(rest)),
            Err(e) => {
                // The card keeps what it showed; the piece goes as a message.
                let _ = self.refusal(&e);
                (Phase::Dead, Finish::Rest(text.to_string()))
            }
        };
        self.put(key, &Record { t: rec.t, p: phase }).await?;
        Ok(outcome)
    }

    /// The rest of a finished card's piece went out as messages: the card is done.
    pub(super) async fn rest_sent(&self, key: &str) -> Result<(), SendError> {
        let Some(rec) = self.record(key).await else {
            return Ok(());
        };
        if rec.p == Phase::Closing {
            self.put(
                key,
                &Record {
                    t: rec.t,
                    p: Phase::Done,
                },
            )
            .await?;
        }
        Ok(())
    }

    /// Creates and delivers the card of `key`; its record is written first.
    async fn create(&self, key: &str, target: &Target) -> Result<AnswerCard, SendError> {
        if self.is_degraded() {
            return Err(refused("AI cards are paused after a refusal"));
        }
        let space = match target {
            Target::User(s) => CardSpace::Direct {
                staff_id: s.clone(),
            },
            Target::Group(g) => CardSpace::Group {
                open_conversation_id: g.clone(),
            },
            Target::Webhook(_) => return Err(refused("no card for someone outside the org")),
        };
        let id = new_id("scv-");
        self.put(
            key,
            &Record {
                t: id.clone(),
                p: Phase::Open,
            },
        )
        .await?;
        let params = [
            (self.template.content_key.as_str(), ""),
            ("flowStatus", FlowStatus::Processing.as_str()),
        ];
        let created = self
            .client
            .create_card(&self.template.template_id, &id, &space, &params)
            .await;
        if let Err(e) = created {
            self.put(
                key,
                &Record {
                    t: id,
                    p: Phase::Dead,
                },
            )
            .await?;
            return Err(self.refusal(&e));
        }
        self.health.note(NoteSource::Cards, None);
        Ok(AnswerCard::resume(&self.client, &self.template, id))
    }

    /// A card call failed: logged, the degrade window opened where the spec says so, and the
    /// answer left to its pieces.
    fn refusal(&self, e: &scv_dingtalk::Error) -> SendError {
        let f = failure(e, &self.account);
        tracing::info!(account = %self.account, error = %e, "an AI card call failed; the answer goes as messages");
        if e.card_should_degrade() {
            if let Ok(mut d) = self.degraded.lock() {
                *d = Some(Instant::now() + CARD_DEGRADE_FOR);
            }
            self.health.note(
                NoteSource::Cards,
                Some(format!(
                    "AI cards refused ({}); answers go whole for {} min",
                    f.code.as_str(),
                    CARD_DEGRADE_FOR.as_secs() / 60
                )),
            );
        }
        SendError::rejected(general::UPDATE_UNSUPPORTED, f.message)
    }

    fn is_degraded(&self) -> bool {
        self.degraded
            .lock()
            .ok()
            .and_then(|d| *d)
            .is_some_and(|until| Instant::now() < until)
    }

    async fn record(&self, key: &str) -> Option<Record> {
        let raw = self.state.get(&format!("{RECORD}{key}")).await.ok()??;
        serde_json::from_str(&raw).ok()
    }

    async fn put(&self, key: &str, rec: &Record) -> Result<(), SendError> {
        let raw = serde_json::to_string(rec).unwrap_or_default();
        self.state
            .put(&format!("{RECORD}{key}"), &raw)
            .await
            .map_err(|e| SendError::transient(general::STORE, e.to_string()))
    }
}

fn refused(why: &'static str) -> SendError {
    SendError::rejected(general::UPDATE_UNSUPPORTED, why)
}

/// What of `text` one card shows, and the rest: split on the core's paragraph and code
/// boundaries under the card's limit.
fn fit_card(text: &str) -> (String, String) {
    if text.chars().count() <= CARD_CONTENT_MAX_CHARS {
        return (text.to_string(), String::new());
    }
    let mut pieces = crate::conversation::split(text, CARD_CONTENT_MAX_CHARS).into_iter();
    let first = pieces.next().unwrap_or_default();
    (first, pieces.collect::<Vec<_>>().join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_piece_keeps_its_rest() {
        assert_eq!(fit_card("short"), ("short".to_string(), String::new()));
        let text = format!("{}\n\n{}", "a".repeat(2000), "b".repeat(1500));
        let (shown, rest) = fit_card(&text);
        assert!(shown.chars().count() <= CARD_CONTENT_MAX_CHARS);
        assert_eq!(shown.trim(), "a".repeat(2000));
        assert_eq!(rest.trim(), "b".repeat(1500));
    }
}
