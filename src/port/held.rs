//! Sends a crash may have left undecided, for platforms whose send calls take no idempotency key
//! (Telegram, WeCom, DingTalk): such a send is never repeated on its own, nor lost.
//!
//! Just before an attempt's first request a person could see, the sender records the outbox
//! item's key as begun ([`Attempt::pass`]). A key found already recorded means an earlier run
//! began this very send and died before the outbox learned how it ended: the platform may have
//! shown it. Sending it again could show it twice; dropping it could lose it. So it is held here
//! (its chat, text and file) and a short note goes in its place quoting its first words and
//! saying that `/again` brings it ([`HeldSends::hold`]). The outbox counts the item as done, so
//! the chat's later replies are not held up behind it. A send that fails with a known outcome
//! forgets its record ([`Attempt::settle`]), so its retry goes normally; one whose outcome is
//! unknown (a timeout, a reset after sending) is held at once, as a crash's would be
//! ([`Attempt::in_doubt`]).
//!
//! `/again` from the owner in that chat ([`is_again`]) queues the chat's held replies again
//! ([`HeldSends::release`]), each under an outbox key made from the `/again` message and the held
//! item's key, so a crash in the middle queues nothing twice. A reply is therefore never shown
//! twice by the bridge's own choice, and the chat can always fetch it for as long as it is kept.
//!
//! WeChat keeps its own (`adapters/wechat/held.rs`): its send records already say `sending`,
//! and its `/again` is stored in the same commit as the poll batch it came in.
//!
//! Who makes it: an adapter, once per run, over the account's state; the state names
//! (`sends_begun/`, `sends_held/`) and [`Held`]'s fields are stored: keep them stable.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

use crate::conversation::body::MediaOut;
use crate::conversation::{Body, Inbound, Outbound, SendError};
use crate::failure::general;
use crate::ids::{ChatId, OutboxKey, PlatformMsgId};
use crate::port::AccountPort;
use crate::store::{AccountState, StoreError};
use crate::supervisor::unix_now;
use crate::words::{AGAIN, Lang, Resend};

/// State names of the keys of sends begun: `sends_begun/<outbox key>` = Unix seconds.
const BEGUN: &str = "sends_begun/";
/// State names of held replies: `sends_held/<outbox key>`.
const HELD: &str = "sends_held/";
/// A begun key is kept a day: an outbox item is retried for far less once its run ended.
const KEEP_BEGUN_SECS: u64 = 24 * 3600;
/// Held replies are kept eight days for `/again`.
const KEEP_HELD_SECS: u64 = 8 * 24 * 3600;
/// How many characters of a held reply its note quotes.
const PREVIEW_CHARS: usize = 30;

/// One held reply (field names are stored: keep them stable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// The chat it was for.
    pub chat: String,
    /// Its text.
    pub text: String,
    /// The file it carried, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaOut>,
    /// When it was held, Unix seconds.
    pub at: u64,
}

/// Whether `text` (a message's whole text) asks for the held replies again.
pub fn is_again(text: &str) -> bool {
    text.trim().eq_ignore_ascii_case(AGAIN)
}

/// The note sent in a held reply's place: in `lang`, else in the reply's own language. It says
/// "restarted or lost its connection": the holder cannot always tell which.
pub fn note(lang: Option<Lang>, reply: &str) -> String {
    let flat = reply.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut preview: String = flat.chars().take(PREVIEW_CHARS).collect();
    if flat.chars().count() > PREVIEW_CHARS {
        preview.push('…');
    }
    let lang = lang
        .or_else(|| crate::words::detect(reply))
        .unwrap_or(Lang::En);
    Resend::InDoubt { preview }.text(lang).into_owned()
}

/// Passes `attempt` when sends are recorded: `Err` (`send_in_doubt`) when an earlier run began
/// this very send, which stops it before its request (the caller then holds it).
pub async fn pass(attempt: Option<&Attempt<'_>>) -> Result<(), SendError> {
    match attempt {
        Some(a) if !a.pass().await? => Err(SendError::rejected(
            general::SEND_IN_DOUBT,
            "an earlier run began this send and never learned its outcome",
        )),
        _ => Ok(()),
    }
}

/// One account's record of sends begun and replies held; cheap to clone.
#[derive(Clone)]
pub struct HeldSends {
    state: AccountState,
}

impl HeldSends {
    /// Kept in the account's `state`.
    pub fn new(state: AccountState) -> Self {
        HeldSends { state }
    }

    /// Records `key` as begun; true when an earlier run had begun it (its outcome unknown).
    async fn begin(&self, key: &str) -> Result<bool, StoreError> {
        let name = format!("{BEGUN}{key}");
        let now = unix_now().to_string();
        self.state
            .call(move |s| {
                if s.get(&name)?.is_some() {
                    return Ok(true);
                }
                s.put(&name, &now)?;
                Ok(false)
            })
            .await
    }

    /// Forgets `key`: its send failed with a known outcome and may go again.
    async fn failed(&self, key: &str) {
        let name = format!("{BEGUN}{key}");
        if let Err(e) = self.state.call(move |s| s.delete(&name)).await {
            tracing::warn!(error = %e, "cannot forget a failed send; its retry will be held");
        }
    }

    /// Keeps `msg` until its chat asks for it with `/again`.
    pub async fn hold(&self, msg: &Outbound) -> Result<(), SendError> {
        let name = format!("{HELD}{}", msg.idempotency_key);
        let held = Held {
            chat: msg.chat.as_str().to_string(),
            text: msg.text.clone(),
            media: match &msg.body {
                Body::Media(m) => Some(m.clone()),
                _ => None,
            },
            at: unix_now(),
        };
        tracing::warn!(account = %self.state.account(), "a send begun before a restart never learned its outcome; held for /again");
        self.state
            .call(move |s| s.put_json(&name, &held))
            .await
            .map_err(|e| SendError::transient(general::STORE, format!("cannot hold a reply: {e}")))
    }

    /// The replies held for `chat`, with their outbox keys, oldest first.
    pub async fn held_for(&self, chat: &ChatId) -> Result<Vec<(String, Held)>, StoreError> {
        let chat = chat.as_str().to_string();
        let mut held: Vec<(String, Held)> = self
            .state
            .call(move |s| {
                Ok(s.scan(HELD)?
                    .into_iter()
                    .filter_map(|(name, v)| {
                        let held: Held = serde_json::from_str(&v).ok()?;
                        let key = name.strip_prefix(HELD)?.to_string();
                        (held.chat == chat).then_some((key, held))
                    })
                    .collect())
            })
            .await?;
        held.sort_by(|a, b| (a.1.at, &a.0).cmp(&(b.1.at, &b.0)));
        Ok(held)
    }

    /// Queues every reply held for `chat` again, answering the `/again` message `msg`, and
    /// forgets each once queued. Returns how many went.
    pub async fn release(
        &self,
        port: &AccountPort,
        chat: &ChatId,
        msg: &PlatformMsgId,
    ) -> Result<usize, StoreError> {
        let held = self.held_for(chat).await?;
        let account = &port.spec().key;
        for (key, h) in &held {
            // The held key names the copy: queueing again after a crash here changes nothing.
            let out = OutboxKey::reply(account, msg, &format!("again/{key}"));
            let body = h.media.clone().map(Body::Media);
            port.announce_body(chat, &h.text, body.as_ref(), out)
                .await?;
            let name = format!("{HELD}{key}");
            self.state.call(move |s| s.delete(&name)).await?;
        }
        Ok(held.len())
    }

    /// Answers the owner's `/again` (`m`, taken out of the intake batch): the chat's held
    /// replies are queued again, or a line says there are none. Counted as dropped
    /// (`resend_request`): the replies are its answer, and it never reaches the agent.
    pub async fn answer_again(&self, port: &AccountPort, m: &Inbound) {
        let key = &port.spec().key;
        match self.release(port, &m.chat, &m.msg_id).await {
            Ok(0) => {
                let text = crate::words::Resend::NothingHeld.text_for(port.spec().language);
                let out = OutboxKey::reply(key, &m.msg_id, "again");
                if let Err(e) = port.announce(&m.chat, &text, out).await {
                    tracing::warn!(account = %key, error = %e, "cannot queue the answer to /again");
                }
            }
            Ok(n) => tracing::info!(account = %key, replies = n, "held replies queued again"),
            Err(e) => tracing::warn!(account = %key, error = %e, "cannot queue the held replies"),
        }
        port.dropped("resend_request");
    }

    /// Forgets begun keys older than a day and held replies older than eight days; once a run.
    pub async fn prune(&self) {
        let now = unix_now();
        let (begun, held) = (
            now - KEEP_BEGUN_SECS.min(now),
            now - KEEP_HELD_SECS.min(now),
        );
        let pruned = self
            .state
            .call(move |s| {
                for (name, at) in s.scan(BEGUN)? {
                    if at.parse::<u64>().map_or(true, |t| t < begun) {
                        s.delete(&name)?;
                    }
                }
                for (name, v) in s.scan(HELD)? {
                    if serde_json::from_str::<Held>(&v).map_or(true, |h| h.at < held) {
                        s.delete(&name)?;
                    }
                }
                Ok(())
            })
            .await;
        if let Err(e) = pruned {
            tracing::warn!(error = %e, "cannot prune the record of sends begun");
        }
    }

    /// One send attempt of `msg`, to pass before its first visible request.
    pub fn attempt<'a>(&'a self, msg: &'a Outbound) -> Attempt<'a> {
        Attempt {
            sends: self,
            key: &msg.idempotency_key,
            stage: AtomicU8::new(FRESH),
            unknown: AtomicBool::new(false),
        }
    }
}

const FRESH: u8 = 0;
const BEGUN_NOW: u8 = 1;
const BEGUN_EARLIER: u8 = 2;

/// One send attempt's record of being begun, written once, at its first [`Attempt::pass`]: just
/// before the first request a person could see, so waits before it (a pace, an upload) never
/// count as begun.
pub struct Attempt<'a> {
    sends: &'a HeldSends,
    key: &'a str,
    stage: AtomicU8,
    /// A request of this attempt may have been acted on although it failed.
    unknown: AtomicBool,
}

impl Attempt<'_> {
    /// Records the attempt on the first call. `Ok(false)`: an earlier run began this very send
    /// and never learned its outcome, so it must not go again (hold it instead).
    pub async fn pass(&self) -> Result<bool, SendError> {
        match self.stage.load(Ordering::SeqCst) {
            BEGUN_NOW => return Ok(true),
            BEGUN_EARLIER => return Ok(false),
            _ => {}
        }
        let earlier = self.sends.begin(self.key).await.map_err(|e| {
            SendError::transient(
                general::STORE,
                format!("cannot record the send before making it: {e}"),
            )
        })?;
        let stage = if earlier { BEGUN_EARLIER } else { BEGUN_NOW };
        self.stage.store(stage, Ordering::SeqCst);
        Ok(!earlier)
    }

    /// Whether the attempt found an earlier run's record (the reply is to be held).
    pub fn begun_earlier(&self) -> bool {
        self.stage.load(Ordering::SeqCst) == BEGUN_EARLIER
    }

    /// Whether the reply is to be held: an earlier run began it, or a request of this attempt
    /// failed without saying whether the platform acted on it.
    pub fn in_doubt(&self) -> bool {
        self.begun_earlier() || self.unknown.load(Ordering::SeqCst)
    }

    /// A request of this attempt failed without saying whether the platform acted on it (a
    /// timeout, a reset): the record stays, so the retry holds the reply rather than repeat it.
    pub fn outcome_unknown(&self) {
        self.unknown.store(true, Ordering::SeqCst);
    }

    /// After the attempt: a failure with a known outcome forgets the record so a retry goes.
    pub async fn settle<T>(&self, sent: &Result<T, SendError>) {
        let known = !self.unknown.load(Ordering::SeqCst);
        if sent.is_err() && known && self.stage.load(Ordering::SeqCst) == BEGUN_NOW {
            self.sends.failed(self.key).await;
        }
    }
}

#[cfg(test)]
mod tests;
