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
use crate::port::{AccountPort, Ports};
use crate::secrets::CredentialStore;
use crate::store::Store;
use crate::supervisor::{Component, ComponentError, ComponentFactory, HealthHandle};

/// The daemon's parts the platform factory builds accounts from. WeChat and Feishu get only a
/// [`AccountPort`] cut from them; mail (IMAP, triage, digests, mail chat: its own area beside
/// conversation and confirm) gets them whole.
#[derive(Clone)]
pub struct PlatformParts {
    /// Where credentials (tokens, secrets, the owner id) are kept.
    pub credentials: CredentialStore,
    /// The state store (cursors, dedupe keys, mail tables).
    pub store: Store,
    /// The conversation pipeline.
    pub conversation: Arc<Conversation>,
    /// The agent configuration (the mail triage's model endpoint).
    pub agent: AgentConfig,
    /// What mail accounts share: the `timezone`, the clock, the mail-chat router.
    pub mail: mail::MailEnv,
}

impl PlatformParts {
    /// What ports are cut from.
    pub fn ports(&self) -> Ports {
        Ports::new(
            self.store.clone(),
            self.credentials.clone(),
            self.conversation.clone(),
        )
    }
}

/// Builds the real component for each account.
pub struct PlatformFactory {
    parts: PlatformParts,
    ports: Ports,
    cards: Option<Arc<dyn feishu::CardAnswerHandler>>,
}

impl PlatformFactory {
    /// A factory building every account from `parts`.
    pub fn new(parts: PlatformParts) -> Arc<Self> {
        Arc::new(PlatformFactory {
            ports: parts.ports(),
            parts,
            cards: None,
        })
    }

    /// A factory whose Feishu accounts hand yes/no card clicks to `cards` (the confirm questions).
    pub fn with_cards(
        parts: PlatformParts,
        cards: Arc<dyn feishu::CardAnswerHandler>,
    ) -> Arc<Self> {
        Arc::new(PlatformFactory {
            ports: parts.ports(),
            parts,
            cards: Some(cards),
        })
    }
}

impl ComponentFactory for PlatformFactory {
    // A fourth platform is one line here (and its channel crate, adapter folder and login file).
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        match spec.key.channel {
            Channel::Wechat => wechat::build(self.ports.port(spec)),
            Channel::Feishu => feishu::build_with(self.ports.port(spec), self.cards.clone()),
            Channel::Mail => mail::build(spec, &self.parts),
        }
    }
}

/// A component for an account whose channel has no adapter in this build.
pub fn unavailable(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(Unavailable { port })
}

/// An account whose channel has no adapter in this build: it says so truthfully and stays `failed`.
struct Unavailable {
    port: AccountPort,
}

pub use crate::port::login_hint;

impl Component for Unavailable {
    fn run(
        self: Arc<Self>,
        _health: HealthHandle,
        _cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        async move {
            let _login: crate::secrets::Credentials = self.port.login().await?;
            let key = &self.port.spec().key;
            Err(ComponentError::fatal(
                format!(
                    "the {} channel is not available in this build",
                    channel_name(key.channel)
                ),
                format!(
                    "upgrade scv-bridge, or disable the account with `{}`",
                    crate::config::command(&format!(
                        "channel disable {} {}",
                        key.channel, key.account
                    ))
                ),
            ))
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
