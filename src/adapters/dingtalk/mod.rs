//! The DingTalk account component: the Stream-mode connection feeding the conversation
//! pipeline, and a sender that keeps to DingTalk's rules (spec `dingtalk-stream.md`).
//!
//! One run: load the stored login (client id and secret), settle the owner (`owner` in the
//! configuration, else the paired one), attach to the pipeline, then run the connection. Each
//! robot message is journaled, then its push is ACKed (robot messages are never pushed again,
//! so the journal must hold it first); a pairing code is judged before any policy. Bad
//! credentials or an app that refuses Stream mode end the run as `failed` with the fix; every
//! other trouble reconnects inside the connection (fresh ticket, backoff with jitter).
//!
//! - [`inbound`]: robot messages → `Inbound`, drop reasons.
//! - [`intake`]: one run's connection, journal-then-ACK, pairing, health.
//! - [`sender`]: the `ChatSender` (markdown, webhook or robot API, questions, files).
//! - [`cards`]: answers streamed into AI cards, when a card template is configured.
//! - [`questions`]: questions on template cards with callback buttons, when configured.
//! - [`typing`]: the thinking reaction on the owner's message while the agent works.
//! - [`failure`]: the one table from the crate's errors to `Failure`.

mod cards;
mod failure;
mod inbound;
mod intake;
pub mod login;
mod pace;
mod platform;
mod probe;
mod questions;
mod reply;
mod sender;
mod settings;
mod typing;
pub use platform::PLATFORM;
pub use sender::{CAPABILITIES, DingTalkSender, MAX_CHARS};
pub use settings::DingtalkSettings;

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::AccountSpec;
use crate::failure::Action;
use crate::port::pairing::{CODE_FIELD, EXPIRES_FIELD, OWNER_FIELD, Pairing};
use crate::port::{AccountPort, LoginError, StoredLogin};
use crate::secrets::Credentials;
use crate::supervisor::{Capabilities, Component, ComponentError, HealthHandle, unix_now};

/// The component for one DingTalk account.
pub fn build(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(DingTalkComponent::new(port))
}

/// One DingTalk account: the Stream connection in, the sender out.
pub struct DingTalkComponent {
    spec: AccountSpec,
    settings: DingtalkSettings,
    port: AccountPort,
}

/// What the login stored (see `scv-bridge login dingtalk`).
struct Login {
    client_id: String,
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
        let (Some(client_id), Some(secret)) = (
            field(login::CLIENT_ID_FIELD),
            field(login::CLIENT_SECRET_FIELD),
        ) else {
            return Err(LoginError(
                "the stored login lacks the client id or the client secret",
            ));
        };
        let pairing = field(CODE_FIELD).zip(field(EXPIRES_FIELD).and_then(|e| e.parse().ok()));
        Ok(Login {
            client_id,
            secret,
            owner: field(OWNER_FIELD),
            pairing,
            credentials: creds,
        })
    }
}

impl DingTalkComponent {
    /// The component for the port's account.
    pub fn new(port: AccountPort) -> Self {
        let spec = port.spec().clone();
        let settings = DingtalkSettings::of(&spec.settings);
        DingTalkComponent {
            spec,
            settings,
            port,
        }
    }

    async fn run_inner(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        let login: Login = self.port.login().await?;
        let client =
            login::client(&self.settings, &login.client_id, &login.secret).map_err(|e| {
                ComponentError::fatal(
                    failure::BAD_BASE_URL,
                    e,
                    Action::Reload {
                        first: format!(
                            "check api_base and oapi_base under [dingtalk.{}]",
                            self.spec.key.account
                        )
                        .into(),
                    },
                )
            })?;
        let (owner, pairing) = self.owner(&login);
        let mut sender = DingTalkSender::new(client.clone(), self.spec.key.clone())
            .with_language(self.spec.language);
        if let Some(template) = login::card_template(&self.settings) {
            sender = sender.with_cards(template, self.port.state().clone(), health.clone());
        }
        if let Some(template) = login::question_template(&self.settings) {
            sender = sender.with_question_cards(template);
        }
        if self.settings.thinking_reaction == Some(false) {
            sender = sender.without_thinking();
        }
        let sender = Arc::new(sender);
        let idle_timeout = self
            .settings
            .idle_timeout_seconds
            .map_or(scv_dingtalk::limits::IDLE_TIMEOUT, Duration::from_secs);
        let mut run = intake::Run::start(intake::Setup {
            port: self.port.clone(),
            client,
            owner,
            pairing,
            credentials: login.credentials,
            sender,
            health,
            idle_timeout,
        });
        run.run(cancel).await
    }

    /// The owner (configured, else paired) and the code that may pair one, when none is
    /// configured.
    fn owner(&self, login: &Login) -> (Option<String>, Option<Pairing>) {
        if let Some(id) = login::owner_of(&self.settings) {
            return (Some(id), None);
        }
        let pairing = login
            .pairing
            .as_ref()
            .map(|(code, exp)| Pairing::new(code.clone(), *exp))
            .filter(|p| p.is_open(unix_now()));
        (login.owner.clone(), pairing)
    }
}

impl Component for DingTalkComponent {
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
