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

/// What an account of `channel` can do, known without running it (a question queued while its
/// account is offline): the composition root hands this lookup to the confirm service, so the
/// core reads capabilities and never names a platform.
pub fn capabilities(channel: Channel) -> crate::supervisor::Capabilities {
    match channel {
        Channel::Wechat => wechat::CAPABILITIES,
        Channel::Feishu => feishu::CAPABILITIES,
        // A mail account's component declares nothing beyond the default: no chat to ask in.
        Channel::Mail => crate::supervisor::Capabilities::default(),
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
    format!(
        "run `{}`",
        crate::config::command(&format!("login {} {}", spec.key.channel, spec.key.account))
    )
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
                .map_err(|e| ComponentError::transient(e.to_string()))?;
            match loaded {
                Ok(None) => Err(ComponentError::fatal(
                    "not logged in",
                    login_hint(&self.spec),
                )),
                Err(e) => Err(ComponentError::fatal(
                    format!("cannot read credentials: {e}"),
                    login_hint(&self.spec),
                )),
                Ok(Some(_)) => Err(ComponentError::fatal(
                    format!(
                        "the {} channel is not available in this build",
                        channel_name(self.spec.key.channel)
                    ),
                    format!(
                        "upgrade scv-bridge, or disable the account with `{}`",
                        crate::config::command(&format!(
                            "channel disable {} {}",
                            self.spec.key.channel, self.spec.key.account
                        ))
                    ),
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
