//! The WeChat account component: the iLink long poll feeding the conversation pipeline, and a
//! sender that keeps to WeChat's rules.
//!
//! One run: load the stored login (never written here, so a task stopping after a new login
//! cannot overwrite it), attach to the pipeline, `notifystart`, then poll. Each batch is
//! filtered (bot echoes, redelivered copies), each sender's latest context token is stored, the
//! batch is journaled by [`Conversation::accept`](crate::conversation::Conversation::accept), and
//! only then is the new cursor stored: the server never replays what it delivered. `-14` ends
//! the run as `failed` with the re-login hint; other errors end it for the supervisor to back
//! off. Cancel drops the in-flight poll at once and sends `notifystop`.
//!
//! - [`inbound`]: `WeixinMessage` → `Inbound`, item descriptions, the copy filter.
//! - [`sender`]: the `ChatSender` (send window, pacing, `-2` hold, typing).
//! - [`state`]: the cursor, peers and send outcomes in the account's own state.
//! - [`held`]: replies a crash may have cut off, held for the chat's `/again`.

mod failure;
mod held;
mod inbound;
mod login;
mod media;
mod platform;
mod probe;
mod render;
mod sender;
mod settings;
mod state;
pub use platform::PLATFORM;
pub use settings::WechatSettings;

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_wechat::{BotToken, Client};
use tokio_util::sync::CancellationToken;

pub use sender::{CAPABILITIES, MAX_CHARS, WINDOW_CLOSED, client_id_for};

use crate::config::AccountSpec;
use crate::failure::general;
use crate::port::{AccountPort, LinkParts, LoginError, StorePause, StoredLogin};
use crate::secrets::Credentials;
use crate::supervisor::{Capabilities, Component, ComponentError, HealthHandle};
use inbound::Copies;
use state::Peers;

/// The send window when the configuration sets none: 24 h after the peer's last message.
pub const DEFAULT_WINDOW_HOURS: u64 = 24;
/// Sends per inbound message when the configuration sets none (WeChat allows about 10).
pub const DEFAULT_SENDS_PER_MESSAGE: u32 = 10;

/// WeChat's declared pace: one send a second over the whole account (field evidence: about
/// three sends in a second trip a bot-wide throttle for an hour), so also one per chat. Kept by
/// its sender (one send at a time per account, `min_send_interval` apart; configurable).
pub const PACE: crate::port::pace::Pace = crate::port::pace::Pace {
    per_chat: Duration::from_secs(1),
    per_bot: Duration::from_secs(1),
    per_group: Duration::ZERO,
};

/// The adapter's timings. The defaults are WeChat's rules; tests shorten them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuning {
    /// Least time between two sends of the account (WeChat throttles bursts of the whole bot).
    pub min_send_interval: Duration,
    /// The hold after a first `ret=-2`; each further refusal doubles it.
    pub slow_down_base: Duration,
    /// The longest hold (WeChat's throttle lasts up to about an hour).
    pub slow_down_cap: Duration,
    /// A message without a creation time whose sender and content match one seen less than
    /// this long ago is a redelivered copy (messages with one are matched on it instead).
    pub copy_window: Duration,
    /// How long `notifystop` may take at shutdown; well inside the supervisor's stop grace.
    pub notify_stop_timeout: Duration,
    /// How much longer than the server's suggested hold a long poll may take before it counts
    /// as unanswered (the spec recommends 5–10 s).
    pub poll_margin: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            min_send_interval: PACE.per_bot,
            slow_down_base: scv_wechat::classify::SEND_SLOW_DOWN,
            slow_down_cap: Duration::from_secs(3600),
            // Copies come 1–5 s apart (spec §7); a person repeating themselves takes longer.
            copy_window: Duration::from_secs(5),
            notify_stop_timeout: Duration::from_secs(2),
            poll_margin: scv_wechat::client::DEFAULT_POLL_MARGIN,
        }
    }
}

impl Tuning {
    /// WeChat's rules with what the account configured (`min_send_interval_ms`).
    pub fn for_settings(settings: &WechatSettings) -> Self {
        let mut tuning = Tuning::default();
        if let Some(ms) = settings.min_send_interval_ms {
            tuning.min_send_interval = Duration::from_millis(ms);
        }
        tuning
    }
}

/// The component for one WeChat account.
pub fn build(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(WechatComponent::new(port))
}

/// One WeChat account: long poll in, sender out.
pub struct WechatComponent {
    spec: AccountSpec,
    settings: WechatSettings,
    port: AccountPort,
    tuning: Tuning,
}

/// What the login stored (see `scv-bridge login wechat`).
struct Login {
    token: BotToken,
    bot_id: String,
    base_url: Option<String>,
    owner_id: Option<String>,
}

impl StoredLogin for Login {
    fn from_credentials(creds: Credentials) -> Result<Self, LoginError> {
        let field = |n: &str| {
            creds
                .get(n)
                .map(|s| s.expose().trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let (Some(token), Some(bot_id)) = (field(login::TOKEN_FIELD), field(login::BOT_ID_FIELD))
        else {
            return Err(LoginError("the stored login is incomplete"));
        };
        Ok(Login {
            token: BotToken::new(token),
            bot_id,
            base_url: field(login::BASE_URL_FIELD),
            owner_id: field(crate::secrets::OWNER_FIELD),
        })
    }
}

impl WechatComponent {
    /// The component for the port's account, with WeChat's own timings.
    pub fn new(port: AccountPort) -> Self {
        let spec = port.spec().clone();
        let settings = WechatSettings::of(&spec.settings);
        WechatComponent {
            tuning: Tuning::for_settings(&settings),
            spec,
            settings,
            port,
        }
    }

    /// The same component with other timings (tests).
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = tuning;
        self
    }

    fn id(&self) -> String {
        self.spec.key.to_string()
    }

    /// The iLink base: the configured one, else the one login returned, else the default host.
    fn base_url(&self, login: &Login) -> String {
        self.settings
            .base_url
            .clone()
            .filter(|u| !u.trim().is_empty())
            .or_else(|| login.base_url.clone())
            .unwrap_or_else(|| scv_wechat::types::DEFAULT_BASE_URL.to_string())
    }

    async fn run_inner(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        let id = self.id();
        let login: Login = self.port.login().await?;
        health.set_ids(Some(login.bot_id.clone()), login.owner_id.clone());
        let client = Client::new(&self.base_url(&login), Some(login.token.clone()))
            .map_err(|e| self.error(&e))?
            .with_poll_margin(self.tuning.poll_margin);
        let store = self.port.state().clone();
        let now = self.port.clock().now_ms() as i64;
        let purged = match state::purge_sends(&store, now).await {
            Ok(()) => held::purge(&store, now).await,
            Err(e) => Err(e),
        };
        if let Err(e) = purged {
            tracing::warn!(account = %id, error = %e, "cannot purge old send records");
        }
        let peers = Arc::new(Peers::new(store.clone(), self.port.clock().clone()));
        let window_hours = self
            .settings
            .send_window_hours
            .unwrap_or(DEFAULT_WINDOW_HOURS);
        let sender = Arc::new(
            sender::WechatSender::new(
                id.clone(),
                self.spec.key.clone(),
                client.clone(),
                store.clone(),
                peers.clone(),
                self.tuning.clone(),
                Duration::from_secs(window_hours.saturating_mul(3600)),
                self.settings
                    .sends_per_message
                    .unwrap_or(DEFAULT_SENDS_PER_MESSAGE),
            )
            .with_media(
                self.settings
                    .cdn_base_url
                    .clone()
                    .unwrap_or_else(|| scv_wechat::cdn_client::DEFAULT_CDN_BASE.to_string()),
                self.spec.language,
            ),
        );
        match state::pacing(&store).await {
            Ok((last, hold)) => sender.resume(last, hold),
            Err(e) => tracing::warn!(account = %id, error = %e, "cannot read the last send time"),
        }
        // Dropping the attachment (any return below) stops this account's chat workers.
        let _attachment = self.port.attach(LinkParts {
            health: health.clone(),
            label: "WeChat",
            capabilities: self.capabilities(),
            owner: login.owner_id.clone(),
            sender,
        });
        // The spec: once before the long poll, errors ignored (a bad token shows on the poll).
        tokio::select! {
            r = client.notify_start() => {
                if let Err(e) = r {
                    tracing::info!(account = %id, error = %e, "notifystart failed; polling anyway");
                }
            }
            _ = cancel.cancelled() => return Ok(()),
        }
        let mut cursor = state::load_cursor(&store, &login.bot_id)
            .await
            .map_err(|e| ComponentError::transient(general::STORE, e.to_string()))?;
        let mut intake = Intake {
            copies: Copies::new(self.tuning.copy_window),
            pause: StorePause::new(&health),
            cancel: cancel.clone(),
            // A `/again` the last run stored but did not queue yet.
            release_due: !self.release_held().await,
        };
        loop {
            let polled = tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                r = client.get_updates(&cursor) => r,
            };
            let updates = polled.map_err(|e| self.error(&e))?;
            let moved = (updates.cursor != cursor).then(|| updates.cursor.clone());
            let stored = self
                .take_batch(
                    &peers,
                    &mut intake,
                    &updates,
                    moved.as_deref(),
                    &login.bot_id,
                )
                .await;
            if !stored {
                break;
            }
            if let Some(next) = moved {
                cursor = next;
            }
            if updates.timed_out {
                // The server holds a poll for its suggested time and no longer: past that and
                // our margin, it is not answering. Poll again at once (the spec's advice), but
                // say so instead of showing `connected`.
                health.disconnected(unanswered_poll(client.poll_timeout()));
            } else {
                crate::port::evidence::heard(&health);
            }
        }
        // Cancelled: the in-flight poll is already dropped; say goodbye, briefly.
        match tokio::time::timeout(self.tuning.notify_stop_timeout, client.notify_stop()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(account = %id, error = %e, "notifystop failed"),
            Err(_) => tracing::debug!(account = %id, "notifystop timed out"),
        }
        Ok(())
    }

    /// Filters a batch, then journals it with each sender's token and the new cursor in one
    /// transaction; returns after the commit. One commit keeps the moment between "the server
    /// counts these as delivered" and "they are stored" as short as it can be.
    ///
    /// While the journal cannot commit, the batch is kept and its commit retried (with the
    /// same cursor) until it succeeds: no poll leaves meanwhile, since the server never replays
    /// what it handed out. Returns false when cancelled before the batch was stored.
    async fn take_batch(
        &self,
        peers: &Peers,
        intake: &mut Intake,
        updates: &scv_wechat::Updates,
        new_cursor: Option<&str>,
        bot_id: &str,
    ) -> bool {
        if updates.undecodable > 0 {
            tracing::warn!(account = %self.spec.key, count = updates.undecodable, "skipped messages that do not decode");
            for _ in 0..updates.undecodable {
                self.port.dropped("undecodable");
            }
        }
        let now = tokio::time::Instant::now();
        let now_ms = peers.now_ms();
        let mut keep = Vec::new();
        let mut seen = Vec::new();
        for (i, m) in updates.messages.iter().enumerate() {
            // Our own echoes (if the server sends them) and other bots are never answered.
            if m.is_from_bot() || m.from_user_id.is_empty() {
                self.port.dropped("bot_echo");
                continue;
            }
            // The one place a user's message is dropped: a copy the filter can prove.
            if let Some(copy) = intake.copies.check(m, now) {
                tracing::debug!(account = %self.spec.key, ?copy, "dropped a redelivered copy with a new id");
                self.port.dropped(copy.reason());
                continue;
            }
            if let Some(token) = m.context_token.as_ref().filter(|t| !t.is_empty()) {
                // The window runs from when we saw the message: the sender's clock may be off.
                seen.push((m.from_user_id.clone(), token.clone(), now_ms));
            }
            keep.push(i);
        }
        if keep.is_empty() && seen.is_empty() && new_cursor.is_none() {
            return true;
        }
        let again = self.take_requests(updates, &mut keep).await;
        // Tokens first, in memory: a pipeline woken by the new message must find the window open.
        peers.remember_inbound(seen.clone());
        let batch = Batch {
            keep,
            seen: Arc::new(seen),
            cursor: Arc::new(new_cursor.map(|c| (bot_id.to_string(), c.to_string()))),
            again: Arc::new(again),
            now_ms,
        };
        if !self
            .store_batch(updates, &batch, &intake.pause, &intake.cancel)
            .await
        {
            return false;
        }
        if intake.release_due || !batch.again.is_empty() {
            intake.release_due = !self.release_held().await;
        }
        if !updates.messages.is_empty() {
            // The chats' turn workers, just woken on this thread, go first: the next poll is
            // held by the server anyway, and sent from here it left ahead of the model request.
            tokio::task::yield_now().await;
        }
        true
    }

    /// Journals the pending batch with its tokens and cursor, retrying while the journal cannot
    /// commit (status says so meanwhile); false when cancelled before it was stored.
    async fn store_batch(
        &self,
        updates: &scv_wechat::Updates,
        pending: &Batch,
        pause: &StorePause,
        cancel: &CancellationToken,
    ) -> bool {
        let arrived = updates.received.unwrap_or_else(std::time::Instant::now);
        let mut attempt = 0;
        loop {
            let batch = pending
                .keep
                .iter()
                .map(|i| inbound::to_inbound(&self.spec.key, &updates.messages[*i], pending.now_ms))
                .collect();
            let (seen, cursor, again) = (
                pending.seen.clone(),
                pending.cursor.clone(),
                pending.again.clone(),
            );
            let stored = self
                .port
                .accept_with(batch, arrived, move |s| {
                    state::store_inbound(s, &seen)?;
                    held::request_in(s, &again)?;
                    match cursor.as_ref() {
                        Some((bot, c)) => state::save_cursor_in(s, bot, c),
                        None => Ok(()),
                    }
                })
                .await;
            let Err(e) = stored else {
                pause.committed(&self.spec.key);
                return true;
            };
            pause.failed(&self.spec.key, &e);
            if pause.wait(attempt, cancel).await {
                return false;
            }
            attempt += 1;
        }
    }

    /// Takes out of `keep` each `/again` from a chat with replies held (see [`held`]), counted
    /// as `resend_request`; returns them as (peer, message key) for the batch's commit. An
    /// `/again` from a chat with nothing held is passed on like any text.
    async fn take_requests(
        &self,
        updates: &scv_wechat::Updates,
        keep: &mut Vec<usize>,
    ) -> Vec<(String, String)> {
        let asked: Vec<usize> = keep
            .iter()
            .copied()
            .filter(|i| held::is_request(&inbound::body(&updates.messages[*i])))
            .collect();
        if asked.is_empty() {
            return Vec::new();
        }
        let peers = asked
            .iter()
            .map(|i| updates.messages[*i].from_user_id.clone())
            .collect();
        let holding = match held::peers_holding(self.port.state(), peers).await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(account = %self.spec.key, error = %e, "cannot read the held replies; /again goes on as a message");
                return Vec::new();
            }
        };
        let mut again = Vec::new();
        for i in asked {
            let m = &updates.messages[i];
            if holding.contains(&m.from_user_id) {
                keep.retain(|k| *k != i);
                self.port.dropped("resend_request");
                again.push((m.from_user_id.clone(), m.dedupe_key()));
            }
        }
        again
    }

    /// Queues the replies that stored `/again` requests release; false if the store failed
    /// (tried again after the next batch).
    async fn release_held(&self) -> bool {
        match held::release(&self.port).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(account = %self.spec.key, error = %e, "cannot queue the replies asked for again; retrying after the next poll");
                false
            }
        }
    }

    /// The one place a platform error becomes the supervisor's error: the account's table.
    fn error(&self, e: &scv_wechat::Error) -> ComponentError {
        failure::failure(e, &self.spec.key)
    }
}

/// What one run keeps between polls to take a batch in: the copy filter, whether the journal
/// is failing, and the run's cancel (a held batch's retries end on it).
struct Intake {
    copies: Copies,
    pause: StorePause,
    cancel: CancellationToken,
    /// Stored `/again` requests may wait to be queued (the store failed when they were due).
    release_due: bool,
}

/// A filtered batch the journal has yet to store: which of the poll's messages to keep, the
/// senders' tokens and the new cursor (`bot id`, cursor), kept until the commit succeeds.
struct Batch {
    keep: Vec<usize>,
    seen: Arc<Vec<(String, String, i64)>>,
    cursor: Arc<Option<(String, String)>>,
    /// `/again` requests (peer, message key), stored in the same commit.
    again: Arc<Vec<(String, String)>>,
    now_ms: i64,
}

/// Why the account shows `disconnected` while long polls go unanswered.
fn unanswered_poll(after: Duration) -> String {
    let secs = after.as_secs_f64();
    let took = if secs >= 10.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs:.1} s")
    };
    format!(
        "WeChat did not answer the long poll within {took}; polling again (if this lasts, check this machine's network)"
    )
}

impl Component for WechatComponent {
    fn capabilities(&self) -> Capabilities {
        sender::CAPABILITIES
    }

    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        self.run_inner(health, cancel).boxed()
    }
}

#[cfg(test)]
mod tuning_tests {
    use super::*;

    #[test]
    fn pacing_is_one_second_unless_the_account_sets_it() {
        let default = Tuning::for_settings(&WechatSettings::default());
        assert_eq!(default.min_send_interval, Duration::from_secs(1));
        let set = WechatSettings {
            min_send_interval_ms: Some(250),
            ..WechatSettings::default()
        };
        assert_eq!(
            Tuning::for_settings(&set).min_send_interval,
            Duration::from_millis(250)
        );
    }

    #[test]
    fn pacing_below_the_floor_is_refused_at_load() {
        let text = "[wechat.phone]\nmin_send_interval_ms = 10\n";
        let e = crate::config::Config::parse(std::path::Path::new("c.toml"), text)
            .expect_err("below the floor");
        assert!(e.to_string().contains("from 100 to 60000"), "{e}");
    }
}
