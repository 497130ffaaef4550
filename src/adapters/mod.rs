//! WeChat, Feishu, Telegram, WeCom, DingTalk and QQ, each a platform crate turned into a
//! `Component` over an account port;
//! the platform registry (`platform`, one value per channel, mail's included) and the factory
//! that builds each account through it, from its port (mail is its own area, `crate::mail`,
//! built from the port like every other platform).

pub mod dingtalk;
#[cfg(feature = "testing")]
pub mod echo;
pub mod feishu;
mod fences;
mod mail_platform;
#[cfg(any(test, feature = "testing"))]
pub mod memory;
pub mod platform;
pub mod qq;
pub mod telegram;
pub mod wechat;
pub mod wecom;

pub use platform::Platform;

use std::sync::Arc;

use crate::config::{AccountSpec, AgentConfig, Channel};
use crate::conversation::Conversation;
use crate::port::Ports;
use crate::secrets::CredentialStore;
use crate::store::Store;
use crate::supervisor::{Component, ComponentFactory};

/// The daemon's parts the platform factory cuts every account's port from
/// ([`crate::port::AccountPort`]); no platform sees them whole. Made by the composition root
/// and the tests' daemons.
#[derive(Clone)]
pub struct PlatformParts {
    /// Where credentials (tokens, secrets, the owner id) are kept.
    pub credentials: CredentialStore,
    /// The state store (cursors, dedupe keys, mail tables).
    pub store: Store,
    /// The conversation pipeline.
    pub conversation: Arc<Conversation>,
    /// The agent configuration (the mail triage's model endpoint, lent to mail's accounts only).
    pub agent: AgentConfig,
    /// What mail accounts share: the `timezone`, the clock, the mail-chat router.
    pub mail: crate::mail::MailEnv,
}

impl PlatformParts {
    /// What ports are cut from; mail's accounts find what they share in them
    /// ([`crate::mail::MailShared`]: the mail environment and the triage's agent endpoint).
    pub fn ports(&self) -> Ports {
        Ports::new(
            self.store.clone(),
            self.credentials.clone(),
            self.conversation.clone(),
        )
        .with_shared(crate::mail::MailShared::new(
            self.mail.clone(),
            self.agent.clone(),
        ))
    }
}

/// Builds the real component for each account, through its platform, from its port.
pub struct PlatformFactory {
    ports: Ports,
}

impl PlatformFactory {
    /// A factory building every account from `parts`.
    pub fn new(parts: PlatformParts) -> Arc<Self> {
        Arc::new(PlatformFactory {
            ports: parts.ports(),
        })
    }

    /// A factory whose accounts hand the owner's button presses (Feishu card clicks) to
    /// `answers` (the confirm questions).
    pub fn with_answers(
        parts: PlatformParts,
        answers: Arc<dyn crate::conversation::ButtonAnswers>,
    ) -> Arc<Self> {
        Arc::new(PlatformFactory {
            ports: parts.ports().with_answers(answers),
        })
    }
}

impl ComponentFactory for PlatformFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        platform(spec.key.channel).build(self.ports.port(spec))
    }
}

pub use crate::port::{login_hint, unavailable};

/// The platform serving `channel`: the only match on `Channel` above `ids`.
pub fn platform(channel: Channel) -> &'static dyn Platform {
    match channel {
        Channel::Wechat => &wechat::PLATFORM,
        Channel::Feishu => &feishu::PLATFORM,
        Channel::Telegram => &telegram::PLATFORM,
        Channel::Wecom => &wecom::PLATFORM,
        Channel::Dingtalk => &dingtalk::PLATFORM,
        Channel::Qq => &qq::PLATFORM,
        Channel::Mail => &mail_platform::PLATFORM,
        #[cfg(feature = "testing")]
        Channel::Echo => &echo::PLATFORM,
    }
}

/// Every platform, in configuration order.
pub fn all() -> impl Iterator<Item = &'static dyn Platform> {
    Channel::ALL.into_iter().map(platform)
}

/// What an account of `channel` can do, known without running it (a question queued while its
/// account is offline): the composition root hands this lookup to the confirm service, so the
/// core reads capabilities and never names a platform.
pub fn capabilities(channel: Channel) -> crate::supervisor::Capabilities {
    platform(channel).capabilities()
}
