//! The Telegram account component: the Bot API long poll feeding the conversation pipeline,
//! and a sender that keeps to Telegram's rules.
//!
//! One run: load the stored login, `getMe` (a refused token ends the run as `failed` with the
//! login fix), settle the owner (`owner` in the configuration, else the paired one), attach to
//! the pipeline, then poll. Each batch is read update by update (`inbound`), button presses
//! are answered at once (`buttons`), a pairing code is judged before any policy, and the
//! messages are journaled together with the next offset in one commit: only the poll after
//! that commit carries the offset, which is what confirms the batch to Telegram, so a crash
//! at any point replays the batch and the journal drops what it already has. Cancel drops the
//! in-flight poll, then confirms the stored offset once (spec §1.2).
//!
//! - [`inbound`]: updates → `Inbound`, presses, drop reasons.
//! - [`commands`]: the bot's command menu, set once per run.
//! - [`sender`]: the `ChatSender` (HTML, keyboards, edits, files, typing).
//! - [`stream`]: answers shown while written (drafts in private chats, edits in groups).
//! - [`poll`]: one run's intake loop.
//! - [`failure`]: the one table from the crate's errors to `Failure`.

mod buttons;
mod commands;
mod drafts;
mod failure;
mod inbound;
pub mod login;
mod pace;
mod platform;
mod poll;
mod probe;
mod render;
mod sender;
mod settings;
mod state;
mod stream;
pub use platform::PLATFORM;
pub use sender::{CAPABILITIES, MAX_CHARS, TelegramSender};
pub use settings::TelegramSettings;

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_telegram::{BotToken, Client};
use tokio_util::sync::CancellationToken;

use crate::config::AccountSpec;
use crate::failure::{Action, general};
use crate::port::held::HeldSends;
use crate::port::pairing::{CODE_FIELD, EXPIRES_FIELD, OWNER_FIELD, Pairing};
use crate::port::{AccountPort, LoginError, StoredLogin};
use crate::secrets::Credentials;
use crate::supervisor::{Capabilities, Component, ComponentError, HealthHandle, unix_now};

/// The adapter's timings. The defaults are Telegram's; tests shorten the poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuning {
    /// How long one long poll is held by the server (whole seconds; the spec says 25–50).
    pub poll_timeout: Duration,
    /// How long the last offset confirmation may take at shutdown; inside the stop grace.
    pub confirm_timeout: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            poll_timeout: scv_telegram::limits::DEFAULT_POLL_TIMEOUT,
            confirm_timeout: Duration::from_secs(2),
        }
    }
}

/// The component for one Telegram account.
pub fn build(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(TelegramComponent::new(port))
}

/// One Telegram account: long poll in, sender out.
pub struct TelegramComponent {
    spec: AccountSpec,
    settings: TelegramSettings,
    port: AccountPort,
    tuning: Tuning,
}

/// What the login stored (see `scv-bridge login telegram`).
struct Login {
    token: BotToken,
    owner: Option<String>,
    pairing: Option<(String, u64)>,
    /// Everything stored, rewritten once when someone pairs.
    credentials: Credentials,
}

impl StoredLogin for Login {
    fn from_credentials(creds: Credentials) -> Result<Self, LoginError> {
        let field = |n: &str| {
            creds
                .get(n)
                .map(|s| s.expose().trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let Some(token) = field(login::TOKEN_FIELD).and_then(|t| BotToken::parse(&t).ok()) else {
            return Err(LoginError("the stored login has no usable bot token"));
        };
        let pairing = field(CODE_FIELD).zip(field(EXPIRES_FIELD).and_then(|e| e.parse().ok()));
        Ok(Login {
            token,
            owner: field(OWNER_FIELD),
            pairing,
            credentials: creds,
        })
    }
}

impl TelegramComponent {
    /// The component for the port's account, with Telegram's own timings.
    pub fn new(port: AccountPort) -> Self {
        let spec = port.spec().clone();
        let settings = TelegramSettings::of(&spec.settings);
        TelegramComponent {
            spec,
            settings,
            port,
            tuning: Tuning::default(),
        }
    }

    /// The same component with other timings (tests).
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = tuning;
        self
    }

    async fn run_inner(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        let login: Login = self.port.login().await?;
        let client = Client::new(&login::base_url(&self.settings), login.token.clone())
            .map_err(|e| failure::failure(&e, &self.spec.key))?
            .with_poll_timeout(self.tuning.poll_timeout);
        let bot = tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            r = client.get_me() => r.map_err(|e| failure::failure(&e, &self.spec.key))?,
        };
        if login.token.bot_id() != Some(bot.id) {
            return Err(ComponentError::fatal(
                general::CREDENTIALS_INCOMPLETE,
                "Telegram's answer to getMe is not this token's bot",
                Action::Reload {
                    first: format!("check base_url under [telegram.{}]", self.spec.key.account)
                        .into(),
                },
            ));
        }
        let (owner, pairing) = self.owner(&login);
        let offset = state::load_offset(self.port.state(), bot.id)
            .await
            .map_err(|e| ComponentError::transient(general::STORE, e.to_string()))?;
        let held = HeldSends::new(self.port.state().clone());
        held.prune().await;
        let sender = Arc::new(
            TelegramSender::new(client.clone(), self.spec.key.clone())
                .with_streams(self.port.state().clone(), health.clone())
                .with_held(held.clone(), self.spec.language),
        );
        let menu_client = client.clone();
        let mut run = poll::Run::start(poll::Setup {
            port: self.port.clone(),
            client,
            bot,
            owner,
            pairing,
            credentials: login.credentials,
            sender,
            held,
            health,
            offset,
            confirm_timeout: self.tuning.confirm_timeout,
        });
        // Once per run, beside the first polls: a menu that is slow to set holds no message.
        let menu = async {
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = commands::set(&menu_client, &self.spec.key, self.spec.language) => {}
            }
        };
        let (polled, ()) = tokio::join!(run.poll(cancel.clone()), menu);
        polled
    }

    /// The owner (configured, else paired) and the code that may pair one, when none is
    /// configured.
    fn owner(&self, login: &Login) -> (Option<String>, Option<Pairing>) {
        if let Some(id) = self.settings.owner {
            return (Some(id.to_string()), None);
        }
        let pairing = login
            .pairing
            .as_ref()
            .map(|(code, exp)| Pairing::new(code.clone(), *exp))
            .filter(|p| p.is_open(unix_now()));
        (login.owner.clone(), pairing)
    }
}

impl Component for TelegramComponent {
    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        self.run_inner(health, cancel).boxed()
    }
}
