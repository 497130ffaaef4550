//! Sending within WeChat's rules: one text item per request, at most 2,000 characters, one send
//! at a time per account at least `min_send_interval` apart, the peer's latest context token, the
//! per-peer send window (24 h after the peer's last message, about 10 sends per message), and a
//! growing hold after every `ret=-2` so a throttled bot is never pushed deeper into its penalty.
//!
//! # `client_id` and retries
//!
//! The outbox retries an item with the same idempotency key after a crash or a transient error,
//! so the `client_id` is derived from that key ([`client_id_for`]), and every attempt is
//! recorded (`sending`) before its request leaves.
//!
//! An attempt the process died during is never repeated: its record still says `sending`, so
//! WeChat may have shown it, and whether WeChat drops a repeated `client_id` is unconfirmed
//! (spec §5). The item is held for the chat's `/again` instead, with a note in its place (see
//! [`super::held`]).
//!
//! An attempt that ended without a definite answer while the process lived (a timeout, a lost
//! connection, a 5xx) is retried under the same `client_id`, relying on WeChat refusing the
//! reused id if it took the first (`ret=-2`, as the spec's fake does). A `ret=-2` on such a
//! retry is ambiguous: "already delivered" or "refused now". It is read as delivered only when
//! all of these hold:
//!
//! 1. an earlier attempt of this item ended without a definite answer, so the platform may
//!    have taken it;
//! 2. every other cause of `-2` is ruled out as far as we can know: the peer's window is open by
//!    our model (checked before sending), sends are paced (no burst), the text is within the
//!    limit, and the account's previous send in this process was not refused (no throttle seen);
//!    or, failing the last point, the item has been refused for longer than the longest throttle
//!    reported (about an hour), so the reused id is the explanation left.
//!
//! Otherwise the `-2` is a refusal: the account's sends hold (30 s, doubling to an hour) and the
//! item waits in the outbox. A definite refusal never makes the item ambiguous, so an item that
//! was never taken is never marked delivered because of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_wechat::{Client, TypingStatus, TypingTicket};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::Tuning;
use super::failure::{self, SEND_REFUSED};
use super::held;
use super::inbound::{Reply, hash};
use super::state::{self, PeerWindow, Peers, SendOutcome};
use crate::conversation::{
    ChatId, ChatSender, Outbound, ReplyContext, SendError, SendLimits, Sent,
};
use crate::failure::{Class, general};
use crate::ids::AccountKey;
use crate::store::AccountState;
use crate::supervisor::Capabilities;

/// What a WeChat account can do: a typing indicator, text only (a question is its text with the
/// code to answer with), no edits, and sends only within the peer's window.
pub const CAPABILITIES: Capabilities = Capabilities {
    typing: true,
    buttons: false,
    edit: false,
    questions: true,
    send_window: true,
    voice_bubbles: false,
};

/// The largest file sent (the plugin's `WEIXIN_MEDIA_MAX_BYTES`; no server limit is documented).
pub const MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;

/// What a failed upload leaves: a line to send instead, or a failure to retry.
enum MediaOutcome {
    Line(String),
    Retry(SendError),
}

/// The most characters one WeChat message carries (the spec recommends splitting at 2,000).
pub const MAX_CHARS: usize = 2000;
/// What people are told while messages wait for a closed send window.
pub const WINDOW_CLOSED: &str =
    "WeChat lets the bot write only after the owner writes; send the bot any message";
/// An ambiguous item refused this long is taken as delivered (the throttle lasts up to ~1 h).
const ASSUME_DELIVERED_AFTER_MS: i64 = 3600 * 1000;
/// A typing ticket is fetched again after this long (the plugin refreshes within 24 h).
const TICKET_FRESH: Duration = Duration::from_secs(12 * 3600);
/// After a failed `getconfig`, typing is not tried again for this long (errors are only logged).
const TICKET_RETRY: Duration = Duration::from_secs(60);

/// The `client_id` of an outbox item: the same for every attempt of it, distinct between items.
///
/// A hash, so the account name and message ids inside the key do not reach the platform.
pub fn client_id_for(idempotency_key: &str) -> String {
    let k = idempotency_key.as_bytes();
    format!(
        "scvb-{:016x}{:016x}",
        hash(&[b"client-id-a", k]),
        hash(&[b"client-id-b", k])
    )
}

/// The `Instant` of Unix ms `then`, given that `now_ms` is `now`; `None` when it lies ahead
/// (a clock step) or so far back that it no longer matters.
fn instant_of(then_ms: i64, now_ms: i64, now: Instant) -> Option<Instant> {
    let ago = now_ms.checked_sub(then_ms).filter(|d| *d >= 0)?;
    now.checked_sub(Duration::from_millis(ago as u64))
}

/// The context token to send with, if the peer's window is open at `now_ms`.
pub(super) fn open_window(
    peer: Option<&PeerWindow>,
    now_ms: i64,
    window: Duration,
    per_message: u32,
) -> Option<String> {
    let p = peer?;
    let age = now_ms.saturating_sub(p.last_inbound_ms);
    let fresh = age >= 0 && (age as u128) <= window.as_millis();
    (fresh && p.sends < per_message && !p.context_token.is_empty()).then(|| p.context_token.clone())
}

/// Account-wide send state (never held across an await).
#[derive(Default)]
struct Gate {
    last_send: Option<Instant>,
    hold_until: Option<Instant>,
    refusals: u32,
    /// How the account's previous send in this process ended: `Some(false)` after a refusal.
    last_accepted: Option<bool>,
}

enum Ticket {
    Have(TypingTicket, Instant),
    Failed(Instant),
}

/// One account's sender, built per run from the stored login.
pub(super) struct WechatSender {
    pub(super) account: String,
    /// The account, for the fixes its failures name.
    pub(super) key: AccountKey,
    pub(super) client: Client,
    /// The account's own state (send records, the hold), lent by the port.
    pub(super) state: AccountState,
    pub(super) peers: Arc<Peers>,
    pub(super) tuning: Tuning,
    pub(super) window: Duration,
    pub(super) per_message: u32,
    /// One send at a time: WeChat throttles the whole bot, not one chat.
    pub(super) slot: Semaphore,
    gate: Mutex<Gate>,
    tickets: Mutex<HashMap<String, Ticket>>,
    /// The media CDN (`cdn_base_url`, else WeChat's).
    cdn_base: String,
    /// The account's language, for the line that replaces a file that cannot be sent.
    language: crate::words::Language,
}

impl WechatSender {
    /// A sender; see the fields for what each part is for.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        account: String,
        key: AccountKey,
        client: Client,
        state: AccountState,
        peers: Arc<Peers>,
        tuning: Tuning,
        window: Duration,
        per_message: u32,
    ) -> Self {
        WechatSender {
            account,
            key,
            client,
            state,
            peers,
            tuning,
            window,
            per_message,
            slot: Semaphore::new(1),
            gate: Mutex::new(Gate::default()),
            tickets: Mutex::new(HashMap::new()),
            cdn_base: scv_wechat::cdn_client::DEFAULT_CDN_BASE.to_string(),
            language: crate::words::Language::default(),
        }
    }

    /// The same sender with the media CDN `cdn_base` and the account's `language`.
    pub(super) fn with_media(mut self, cdn_base: String, language: crate::words::Language) -> Self {
        self.cdn_base = cdn_base;
        self.language = language;
        self
    }

    /// Takes over the previous run's pace (from [`state::pacing`]): its last send attempt and
    /// any hold still running, so a restart neither bursts nor sends into a throttle.
    pub(super) fn resume(&self, last_send_ms: Option<i64>, hold_until_ms: Option<i64>) {
        let (now_ms, now) = (self.peers.now_ms(), Instant::now());
        self.gate(|g| {
            if let Some(t) = last_send_ms.and_then(|ms| instant_of(ms, now_ms, now)) {
                g.last_send = Some(t);
            }
            if let Some(ms) = hold_until_ms.filter(|ms| *ms > now_ms) {
                let left = Duration::from_millis((ms - now_ms) as u64);
                g.hold_until = Some(now + left.min(self.tuning.slow_down_cap));
                g.last_accepted = Some(false);
            }
        });
    }

    fn gate<T>(&self, f: impl FnOnce(&mut Gate) -> T) -> T {
        let mut g = self.gate.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    async fn send_one(&self, msg: &Outbound) -> Result<(), SendError> {
        let _slot = self
            .slot
            .acquire()
            .await
            .map_err(|_| SendError::transient(general::STOPPING, "the account is stopping"))?;
        let now = Instant::now();
        if let Some(until) = self.gate(|g| g.hold_until.filter(|u| *u > now)) {
            return Err(SendError::slow_down(
                SEND_REFUSED,
                "WeChat refused a recent send; the account's sends are on hold",
                until - now,
            ));
        }
        // Only a time still ahead is waited for: a timer set for one already past would wait
        // for the timer wheel's next millisecond tick.
        if let Some(due) = self
            .gate(|g| g.last_send)
            .map(|last| last + self.tuning.min_send_interval)
            .filter(|due| *due > Instant::now())
        {
            tokio::time::sleep_until(due).await;
        }
        if msg.text.trim().is_empty() {
            return Err(SendError::rejected(
                general::MESSAGE_EMPTY,
                "an empty message cannot be sent",
            ));
        }
        if msg.text.chars().count() > MAX_CHARS {
            return Err(SendError::rejected(
                general::MESSAGE_TOO_LONG,
                format!("longer than WeChat's {MAX_CHARS} characters"),
            ));
        }
        let peer = msg.chat.as_str();
        let window = self.peers.get(peer).await.map_err(transient)?;
        let Some(token) = open_window(
            window.as_ref(),
            self.peers.now_ms(),
            self.window,
            self.per_message,
        ) else {
            return Err(SendError::window_closed(
                failure::WINDOW_CLOSED,
                WINDOW_CLOSED,
            ));
        };
        let client_id = client_id_for(&msg.idempotency_key);
        // Every body but a file renders as its text: a question's text names its code and
        // deadline, a closed question's says how it ended. A file is uploaded first (again on
        // every attempt: the CDN keeps nothing of a failed one), before the attempt is recorded,
        // so a crash during an upload never makes the item look possibly sent.
        let item = match self.media_item(peer, msg).await {
            Ok(item) => Ok(item),
            // The file can never go: the chat gets a line saying so, in its place.
            Err(MediaOutcome::Line(text)) => Err(text),
            Err(MediaOutcome::Retry(f)) => {
                self.gate(|g| g.last_send = Some(Instant::now()));
                return Err(f);
            }
        };
        let record = state::begin_send(&self.state, &client_id, self.peers.now_ms())
            .await
            .map_err(transient)?;
        if record.accepted {
            // Taken before a crash, but the outbox had not marked it yet.
            return Ok(());
        }
        if record.interrupted || record.held {
            return self.hold(peer, &token, msg, &client_id, record.held).await;
        }
        let result = match item {
            Ok(Some(item)) => {
                self.client
                    .send_media(peer, Some(&token), item, &client_id)
                    .await
            }
            Ok(None) => {
                self.client
                    .send_text(peer, Some(&token), &text_of(msg), &client_id)
                    .await
            }
            Err(line) => {
                self.client
                    .send_text(peer, Some(&token), &line, &client_id)
                    .await
            }
        };
        self.settle(peer, &client_id, record, result).await
    }

    /// Stores how an attempt with `client_id` ended and says what the outbox should do.
    async fn settle(
        &self,
        peer: &str,
        client_id: &str,
        record: state::SendRecord,
        result: Result<(), scv_wechat::Error>,
    ) -> Result<(), SendError> {
        let e = match result {
            // Recorded first, in the same poll that read WeChat's answer: a crash before this
            // commit leaves the record in `sending`, and the item is then held, not repeated.
            Ok(()) => return self.accepted(peer, client_id).await,
            Err(e) => e,
        };
        self.gate(|g| g.last_send = Some(Instant::now()));
        let failure = failure::failure(&e, &self.key);
        match failure.class {
            Class::SlowDown(_) if failure.code == SEND_REFUSED => {
                let throttle_seen = self.gate(|g| g.last_accepted == Some(false));
                let waited_out = record
                    .first_refused_ms
                    .is_some_and(|t| self.peers.now_ms() - t >= ASSUME_DELIVERED_AFTER_MS);
                if record.ambiguous && (!throttle_seen || waited_out) {
                    tracing::info!(account = %self.account, "a retried send was refused as a repeat; an earlier attempt was taken");
                    return self.accepted(peer, client_id).await;
                }
                self.finish(client_id, SendOutcome::Refused).await;
                Err(self.refused(failure).await)
            }
            Class::SlowDown(d) => {
                self.finish(client_id, SendOutcome::NotTaken).await;
                self.gate(|g| g.hold_until = Some(Instant::now() + d));
                Err(failure)
            }
            Class::Fatal | Class::Rejected | Class::WindowClosed => {
                self.finish(client_id, SendOutcome::NotTaken).await;
                Err(failure)
            }
            Class::Transient => {
                // A timeout, 5xx or broken connection may come after the platform took it.
                self.finish(client_id, SendOutcome::Unknown).await;
                Err(failure)
            }
        }
    }

    /// WeChat refused a send (`ret=-2`): every send of the account holds, longer after each
    /// refusal in a row, and a restart keeps the hold.
    async fn refused(&self, failure: SendError) -> SendError {
        let hold = self.gate(|g| {
            g.refusals = g.refusals.saturating_add(1);
            g.last_accepted = Some(false);
            let factor = 1u32 << (g.refusals - 1).min(16);
            let hold = self
                .tuning
                .slow_down_base
                .saturating_mul(factor)
                .min(self.tuning.slow_down_cap);
            g.hold_until = Some(Instant::now() + hold);
            hold
        });
        let until_ms = self.peers.now_ms().saturating_add(hold.as_millis() as i64);
        if let Err(e) = state::save_hold(&self.state, until_ms).await {
            tracing::warn!(account = %self.account, error = %e, "cannot store the send hold; a restart will not keep it");
        }
        // The outbox shows it in the account's health: "sends failing: ...; retry in N s".
        failure.with_class(Class::SlowDown(hold))
    }

    /// An item whose earlier attempt the process died during (see [`super::held`]): kept for
    /// `/again` instead of sent again, with a note in its place. The note is an item of its own
    /// (its own `client_id`); a crash during the note sends the note again under that id, since
    /// a repeated note is only noise and a lost one would hide the reply.
    async fn hold(
        &self,
        peer: &str,
        token: &str,
        msg: &Outbound,
        client_id: &str,
        already_held: bool,
    ) -> Result<(), SendError> {
        let now = self.peers.now_ms();
        if !already_held {
            let reply = held::HeldReply::of(peer, client_id, msg, now);
            held::hold(&self.state, reply).await.map_err(transient)?;
            tracing::info!(account = %self.account, "a send the last run died during may have been shown; held for /again instead of sent again");
        }
        let note_id = client_id_for(&format!("{}#held", msg.idempotency_key));
        let record = state::begin_send(&self.state, &note_id, now)
            .await
            .map_err(transient)?;
        if record.accepted {
            return Ok(());
        }
        // In the reply's language when the account fixes none: the agent answers in the chat's.
        let lang = self
            .language
            .fixed()
            .or_else(|| crate::words::detect(&msg.text))
            .unwrap_or_default();
        let note = held::note(lang, &text_of(msg));
        let result = self
            .client
            .send_text(peer, Some(token), &note, &note_id)
            .await;
        self.settle(peer, &note_id, record, result).await
    }

    /// For a `Body::Media` item, the uploaded media item (`None` for any other body).
    async fn media_item(
        &self,
        peer: &str,
        msg: &Outbound,
    ) -> Result<Option<scv_wechat::message::MessageItem>, MediaOutcome> {
        let crate::conversation::Body::Media(m) = &msg.body else {
            return Ok(None);
        };
        match super::media::upload(&self.client, &self.cdn_base, peer, m, MAX_UPLOAD_BYTES).await {
            Ok(item) => Ok(Some(item)),
            Err(e) => {
                let f = failure::media_failure(&e, &self.key);
                tracing::info!(account = %self.account, code = %f.code, "a file upload failed");
                if f.class == Class::Transient {
                    return Err(MediaOutcome::Retry(f));
                }
                let lang = self.language.fixed().unwrap_or_default();
                let line = crate::words::Msg::FileNotSent {
                    path: m.name.clone(),
                    why: crate::words::FileRefused::Failed { error: f.message },
                }
                .text(lang)
                .into_owned();
                Err(MediaOutcome::Line(line))
            }
        }
    }

    /// WeChat took the send: record it (outcome and the peer's window count, one commit) before
    /// anything else, then reset the refusal hold.
    async fn accepted(&self, peer: &str, client_id: &str) -> Result<(), SendError> {
        let recorded = self.peers.record_accepted(peer, client_id).await;
        if let Err(e) = recorded {
            tracing::warn!(account = %self.account, error = %e, "cannot record an accepted send");
        }
        self.gate(|g| {
            g.last_send = Some(Instant::now());
            g.refusals = 0;
            g.last_accepted = Some(true);
        });
        Ok(())
    }

    async fn finish(&self, client_id: &str, outcome: SendOutcome) {
        if let Err(e) =
            state::finish_send(&self.state, client_id, outcome, self.peers.now_ms()).await
        {
            tracing::warn!(account = %self.account, error = %e, "cannot record a send's outcome");
        }
    }

    /// The peer's typing ticket: cached, fetched when missing or stale, `None` after a failure.
    async fn ticket(&self, peer: &str, token: Option<&str>) -> Option<TypingTicket> {
        let cached = self.tickets.lock().ok().and_then(|t| match t.get(peer) {
            Some(Ticket::Have(t, at)) if at.elapsed() < TICKET_FRESH => Some(Some(t.clone())),
            Some(Ticket::Failed(at)) if at.elapsed() < TICKET_RETRY => Some(None),
            _ => None,
        });
        if let Some(c) = cached {
            return c;
        }
        let fetched = self.client.get_config(peer, token).await;
        let entry = match &fetched {
            Ok(Some(t)) => Ticket::Have(t.clone(), Instant::now()),
            Ok(None) => Ticket::Failed(Instant::now()),
            Err(e) => {
                tracing::debug!(account = %self.account, error = %e, "getconfig failed; no typing indicator");
                Ticket::Failed(Instant::now())
            }
        };
        if let Ok(mut t) = self.tickets.lock() {
            t.insert(peer.to_string(), entry);
        }
        fetched.ok().flatten()
    }
}

impl ChatSender for WechatSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: MAX_CHARS,
            min_interval: self.tuning.min_send_interval,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        // iLink names no message id worth keeping: WeChat messages are never updated.
        Box::pin(async move { self.send_one(msg).await.map(|()| Sent::default()) })
    }

    fn stream_mode(&self) -> crate::conversation::StreamMode {
        // No editing: a long answer goes out in finished parts while the model still writes.
        crate::conversation::StreamMode::Chunks
    }

    fn fetch<'a>(
        &'a self,
        media: &'a crate::conversation::MediaRef,
        _reply: &'a ReplyContext,
        dest: &'a std::path::Path,
        max_bytes: u64,
    ) -> BoxFuture<'a, Result<u64, SendError>> {
        Box::pin(async move {
            super::media::fetch(&self.client, &self.cdn_base, media, dest, max_bytes)
                .await
                .map_err(|e| failure::media_failure(&e, &self.key))
        })
    }

    fn typing<'a>(
        &'a self,
        chat: &'a ChatId,
        reply: &'a ReplyContext,
        on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let peer = chat.as_str();
            let token = match self.peers.get(peer).await {
                Ok(Some(w)) => Some(w.context_token),
                _ => Reply::parse(reply).context_token,
            };
            let ticket = if on {
                self.ticket(peer, token.as_deref()).await
            } else {
                self.tickets.lock().ok().and_then(|t| match t.get(peer) {
                    Some(Ticket::Have(t, _)) => Some(t.clone()),
                    _ => None,
                })
            };
            let Some(ticket) = ticket else { return };
            let status = if on {
                TypingStatus::Typing
            } else {
                TypingStatus::Cancel
            };
            if let Err(e) = self.client.send_typing(peer, &ticket, status).await {
                tracing::debug!(account = %self.account, error = %e, "sendtyping failed");
            }
        })
    }
}

fn transient(e: crate::store::StoreError) -> SendError {
    SendError::transient(general::STORE, e.to_string())
}

/// What WeChat shows for an outbox item: its text, whatever its body (WeChat has only text),
/// through the official client's Markdown filter; a text the filter would empty (only an
/// image) goes out as written rather than as nothing.
fn text_of(msg: &Outbound) -> String {
    let shown = super::render::for_wechat(&msg.text);
    if shown.trim().is_empty() {
        msg.text.clone()
    } else {
        shown
    }
}

#[cfg(test)]
mod tests;
