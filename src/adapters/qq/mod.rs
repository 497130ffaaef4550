//! The QQ account component: the official bot gateway (a WebSocket) feeding the conversation
//! pipeline, and a sender that writes only in reply, as QQ allows (spec `qq-bot.md`).
//!
//! One run: load the stored login, fetch a token and `users/@me` (a refused AppID or
//! AppSecret ends the run as `failed` with the login fix), settle the owner (`owner` in the
//! configuration, else the paired one), attach to the pipeline, then run the gateway from the
//! stored Resume cursor. The gateway has no per-event ack: each message is journaled together
//! with its cursor in one commit, and only then is the cursor handed to the gateway for the next
//! Resume, so a crash at any point replays the event and the journal drops what it already has
//! (it deduplicates on QQ's message id, which QQ may push twice, spec §2.3).
//!
//! - [`inbound`]: dispatches → `Inbound`, drop reasons.
//! - [`intake`]: one run's gateway loop (journal, then commit; pairing; health).
//! - [`sender`]: the `ChatSender` (passive replies inside their windows, plain text).
//! - [`failure`]: the one table from the crate's errors to `Failure`.

mod buttons;
mod failure;
mod inbound;
mod intake;
pub mod login;
mod media;
mod platform;
mod probe;
mod render;
mod sender;
mod settings;
mod state;
mod webhook;
pub use platform::PLATFORM;
pub use sender::{CAPABILITIES, QqSender};
pub use settings::QqSettings;

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_qq::Client;
use scv_qq::gateway::GatewayOptions;
use tokio_util::sync::CancellationToken;

use crate::config::AccountSpec;
use crate::port::pairing::{CODE_FIELD, EXPIRES_FIELD, OWNER_FIELD, Pairing};
use crate::port::{AccountPort, LoginError, StoredLogin};
use crate::secrets::Credentials;
use crate::supervisor::{Capabilities, Component, ComponentError, HealthHandle, unix_now};

/// The component for one QQ account.
pub fn build(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(QqComponent::new(port))
}

/// The gateway's timings. The defaults are QQ's; tests shorten the retries.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// First wait after a failed socket (doubling to `max_retry`).
    pub first_retry: std::time::Duration,
    /// Longest wait between failed sockets.
    pub max_retry: std::time::Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        let g = GatewayOptions::default();
        Tuning {
            first_retry: g.first_retry,
            max_retry: g.max_retry,
        }
    }
}

/// One QQ account: gateway in, passive replies out.
pub struct QqComponent {
    spec: AccountSpec,
    settings: QqSettings,
    port: AccountPort,
    tuning: Tuning,
}

/// What the login stored (see `scv-bridge login qq`).
struct Login {
    app_id: String,
    secret: String,
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
        let (Some(app_id), Some(secret)) = (field(login::APP_ID_FIELD), field(login::SECRET_FIELD))
        else {
            return Err(LoginError("the stored login has no AppID or AppSecret"));
        };
        let pairing = field(CODE_FIELD).zip(field(EXPIRES_FIELD).and_then(|e| e.parse().ok()));
        Ok(Login {
            app_id,
            secret,
            owner: field(OWNER_FIELD),
            pairing,
            credentials: creds,
        })
    }
}

impl QqComponent {
    /// The component for the port's account, with QQ's own timings.
    pub fn new(port: AccountPort) -> Self {
        let spec = port.spec().clone();
        let settings = QqSettings::of(&spec.settings);
        QqComponent {
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
        let key = &self.spec.key;
        let login: Login = self.port.login().await?;
        let options = login::options(&self.settings, &login.app_id, &login.secret);
        let client = Client::new(options).map_err(|e| failure::bad_base_url(e.to_string(), key))?;
        let bot = tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            r = client.check_login() => r.map_err(|e| failure::failure(&e, key))?,
        };
        let (owner, pairing) = self.owner(&login);
        let resume = state::load_cursor(self.port.state(), &bot.id)
            .await
            .map_err(|e| {
                ComponentError::transient(crate::failure::general::STORE, e.to_string())
            })?;
        let sender = Arc::new(
            QqSender::new(
                client.clone(),
                key.clone(),
                self.port.state().clone(),
                self.port.clock().clone(),
                self.spec.language,
            )
            .with_buttons(self.settings.buttons.unwrap_or(false)),
        );
        let gateway = GatewayOptions {
            first_retry: self.tuning.first_retry,
            max_retry: self.tuning.max_retry,
            resume_from: resume,
            ..GatewayOptions::default()
        };
        let setup = intake::Setup {
            port: self.port.clone(),
            client,
            bot,
            owner,
            pairing,
            credentials: login.credentials,
            sender,
            health,
        };
        if self.settings.webhook.unwrap_or(false) {
            let listen = self.settings.webhook_listen.as_deref();
            let key = scv_qq::webhook::WebhookKey::from_secret(&scv_qq::Secret::new(login.secret));
            return intake::Run::start(setup)
                .run_webhook(listen.unwrap_or(webhook::DEFAULT_LISTEN), key, cancel)
                .await;
        }
        intake::Run::start(setup).run(gateway, cancel).await
    }

    /// The owner (configured, else paired) and the code that may pair one, when none is
    /// configured.
    fn owner(&self, login: &Login) -> (Option<String>, Option<Pairing>) {
        if let Some(id) = self
            .settings
            .owner
            .as_ref()
            .filter(|o| !o.trim().is_empty())
        {
            return (Some(id.trim().to_string()), None);
        }
        let pairing = login
            .pairing
            .as_ref()
            .map(|(code, exp)| Pairing::new(code.clone(), *exp))
            .filter(|p| p.is_open(unix_now()));
        (login.owner.clone(), pairing)
    }
}

impl Component for QqComponent {
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
