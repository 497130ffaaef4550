//! Glue from each platform crate to the `Component` trait, and the factory that picks one per account.

mod evidence;
pub mod feishu;
pub mod mail;
#[cfg(any(test, feature = "testing"))]
pub mod memory;
pub mod wechat;

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::{AccountSpec, AgentConfig, Channel};
use crate::conversation::Conversation;
use crate::failure::{Action, Command, general};
use crate::secrets::CredentialStore;
use crate::store::Store;
use crate::supervisor::{Component, ComponentError, ComponentFactory, HealthHandle};

/// What every adapter gets to work with.
#[derive(Clone)]
pub struct AdapterContext {
    /// Where credentials (tokens, secrets, the owner id) are kept.
    pub credentials: CredentialStore,
    /// The state store (cursors, dedupe keys, adapter tables).
    pub store: Store,
    /// The conversation pipeline: `attach` while running, `accept` every inbound batch.
    pub conversation: Arc<Conversation>,
    /// The agent configuration (the mail triage's model endpoint).
    pub agent: AgentConfig,
    /// What mail accounts share: the `timezone`, the clock, the mail-chat router.
    pub mail: mail::MailEnv,
}

/// Builds the real component for each account.
pub struct PlatformFactory {
    ctx: AdapterContext,
    cards: Option<Arc<dyn feishu::CardAnswerHandler>>,
}

impl PlatformFactory {
    /// A factory handing `ctx` to every adapter.
    pub fn new(ctx: AdapterContext) -> Arc<Self> {
        Arc::new(PlatformFactory { ctx, cards: None })
    }

    /// A factory whose Feishu accounts hand yes/no card clicks to `cards` (the confirm questions).
    pub fn with_cards(ctx: AdapterContext, cards: Arc<dyn feishu::CardAnswerHandler>) -> Arc<Self> {
        Arc::new(PlatformFactory {
            ctx,
            cards: Some(cards),
        })
    }
}

impl ComponentFactory for PlatformFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        match spec.key.channel {
            Channel::Wechat => wechat::build(spec, &self.ctx),
            Channel::Feishu => feishu::build_with(spec, &self.ctx, self.cards.clone()),
            Channel::Mail => mail::build(spec, &self.ctx),
        }
    }
}

/// A component for an account whose channel has no adapter in this build.
pub fn unavailable(spec: &AccountSpec, ctx: &AdapterContext) -> Arc<dyn Component> {
    Arc::new(Unavailable {
        spec: spec.clone(),
        credentials: ctx.credentials.clone(),
    })
}

/// An account whose channel has no adapter in this build: it says so truthfully and stays `failed`.
struct Unavailable {
    spec: AccountSpec,
    credentials: CredentialStore,
}

/// The command that stores credentials for an account.
pub fn login_hint(spec: &AccountSpec) -> String {
    Action::Relogin(spec.key.clone()).to_string()
}

impl Component for Unavailable {
    fn run(
        self: Arc<Self>,
        _health: HealthHandle,
        _cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        async move {
            let id = self.spec.key.to_string();
            let creds = self.credentials.clone();
            let loaded = tokio::task::spawn_blocking(move || creds.load(&id))
                .await
                .map_err(|e| ComponentError::transient(general::TASK_FAILED, e.to_string()))?;
            let relogin = Action::Relogin(self.spec.key.clone());
            match loaded {
                Ok(None) => Err(ComponentError::fatal(
                    general::NOT_LOGGED_IN,
                    "not logged in",
                    relogin,
                )),
                Err(e) => Err(ComponentError::fatal(
                    general::CREDENTIALS_UNREADABLE,
                    format!("cannot read credentials: {e}"),
                    relogin,
                )),
                Ok(Some(_)) => Err(ComponentError::fatal(
                    general::CHANNEL_UNAVAILABLE,
                    format!(
                        "the {} channel is not available in this build",
                        channel_name(self.spec.key.channel)
                    ),
                    Action::Otherwise {
                        first: "upgrade scv-bridge".into(),
                        or: "disable the account with",
                        command: Command::Disable(self.spec.key.clone()),
                    },
                )),
            }
        }
        .boxed()
    }
}

fn channel_name(c: Channel) -> &'static str {
    match c {
        Channel::Wechat => "WeChat",
        Channel::Feishu => "Feishu",
        Channel::Mail => "mail",
    }
}
