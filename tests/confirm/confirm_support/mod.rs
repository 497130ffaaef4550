//! Shared pieces of the confirm tests: an echo agent, a MemoryChannel account, a test bed.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings, CredentialsMode};
use scv_bridge::confirm::{CapabilityLookup, Clock, ConfirmParts, ConfirmService, ConfirmSettings};
use scv_bridge::conversation::*;
use scv_bridge::protocol::{Purpose, RemoteTools, Senders};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::store::{Store, StoreGuard};
use scv_bridge::supervisor::{
    Capabilities, Component, ComponentError, ComponentFactory, HealthCell, HealthHandle,
    HealthRegistry,
};
use tokio_util::sync::CancellationToken;

/// The owner of `wechat:phone`; in a direct chat also the chat id.
pub const OWNER: &str = "owner@im.wechat";
/// Someone else who can write to the bot.
pub const STRANGER: &str = "stranger@im.wechat";
/// 2025-11-30 00:00:00 UTC, 08:00 in Shanghai.
pub const T0_MS: u64 = 1_764_460_800_000;

/// The account every test uses.
pub fn account() -> AccountKey {
    AccountKey::new(Channel::Wechat, "phone")
}

/// Fails the test if `f` takes longer than 20 s of real time (it never should; nothing sleeps).
pub async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out waiting")
}

/// An agent that answers `echo: <prompt>` and records prompts.
pub use scv_bridge::testing::InstantAgent as EchoAgent;

/// The spec of `key`.
pub fn spec(key: &AccountKey, senders: Senders) -> AccountSpec {
    // Every chat platform's defaults are an empty table of its own keys.
    let settings = ChannelSettings::default();
    AccountSpec {
        key: key.clone(),
        enabled: true,
        workspace: None,
        senders,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language: Default::default(),
        media: Default::default(),
        settings,
    }
}

/// The link of `key` over `channel`.
pub fn link(
    key: &AccountKey,
    channel: &Arc<MemoryChannel>,
    senders: Senders,
    health: HealthHandle,
) -> AccountLink {
    AccountLink {
        account: key.clone(),
        senders,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        owner: Some(SenderId::new(OWNER)),
        workspace: None,
        media: Default::default(),
        channel_label: "WeChat",
        language: Default::default(),
        capabilities: Capabilities::default(),
        health,
        sender: channel.clone(),
    }
}

/// A message on `wechat:phone` in `from`'s direct chat.
pub fn msg(id: &str, from: &str, text: &str) -> Inbound {
    msg_on(&account(), id, from, text)
}

/// A message on `key` in `from`'s direct chat.
pub fn msg_on(key: &AccountKey, id: &str, from: &str, text: &str) -> Inbound {
    Inbound {
        account: key.clone(),
        chat: ChatId::new(from),
        sender: SenderId::new(from),
        msg_id: PlatformMsgId::new(id),
        text: text.to_string(),
        at_unix_ms: 1,
        reply: ReplyContext(format!("ctx-{id}")),
        media: Vec::new(),
    }
}

/// Stores `wechat:phone`'s and `feishu:work`'s credentials with their owner, in files under `dir`.
pub fn save_owner(dir: &Path) -> CredentialStore {
    let creds = CredentialStore::open(CredentialsMode::File, dir).expect("credentials");
    for id in ["wechat:phone", "feishu:work"] {
        creds
            .save(
                id,
                &Credentials::default()
                    .with("bot_token", "t")
                    .with("owner_id", OWNER),
            )
            .expect("save credentials");
    }
    creds
}

/// What each account can do, as the daemon's composition root says (the real adapters').
pub fn capabilities() -> CapabilityLookup {
    Arc::new(|account: &AccountKey| scv_bridge::adapters::capabilities(account.channel))
}

/// The card a body renders to on Feishu, as JSON text (`None`: it goes out as text).
pub fn feishu_card(body: &Body) -> Option<String> {
    scv_bridge::adapters::feishu::render::card(body)
        .expect("a valid card")
        .map(|c| c.to_string())
}

/// The settings tests use: notify `wechat:phone`, deadlines in Shanghai time.
pub fn settings() -> ConfirmSettings {
    ConfirmSettings {
        notify: Some(account()),
        timezone: Some(chrono_tz::Asia::Shanghai),
        languages: Default::default(),
        always: Default::default(),
    }
}

/// A pipeline, a confirm service and one MemoryChannel account, over a store in `dir`.
pub struct Bed {
    pub conv: Arc<Conversation>,
    pub svc: Arc<ConfirmService>,
    pub channel: Arc<MemoryChannel>,
    pub agent: Arc<EchoAgent>,
    pub clock: Clock,
    pub health: HealthHandle,
    pub account: AccountKey,
    attachment: Option<Attachment>,
    guard: Option<StoreGuard>,
}

/// How a bed's account starts.
pub struct BedOptions {
    pub senders: Senders,
    /// Attach the account to the pipeline (false: the account is down, nothing is sent).
    pub attach: bool,
    pub settings: ConfirmSettings,
    /// The one account (`wechat:phone` by default).
    pub account: AccountKey,
    /// What accounts can do (the adapters' declarations by default).
    pub capabilities: CapabilityLookup,
}

impl Default for BedOptions {
    fn default() -> Self {
        BedOptions {
            account: account(),
            senders: Senders::Owner,
            attach: true,
            settings: settings(),
            capabilities: capabilities(),
        }
    }
}

impl Bed {
    /// A bed over the store in `dir` with the clock at `now_ms`.
    pub async fn open(dir: &Path, now_ms: u64, opts: BedOptions) -> Bed {
        let (store, guard) = Store::open(&dir.join("state.db")).expect("store");
        let agent = Arc::new(EchoAgent::default());
        let creds = save_owner(dir);
        let clock = Clock::manual(now_ms);
        let registry = Arc::new(HealthRegistry::default());
        let cell = HealthCell::new(&spec(&opts.account, opts.senders));
        registry.insert(opts.account.to_string(), cell.clone());
        let health = HealthHandle::new(cell);
        // As the daemon wires it: the service over the outbox, then the pipeline with its hooks.
        let outbox = Outbox::new(store.clone());
        let svc = ConfirmService::new(ConfirmParts {
            store,
            outbox: outbox.clone(),
            credentials: creds,
            clock: clock.clone(),
            capabilities: opts.capabilities.clone(),
            registry,
        });
        let conv = Conversation::build(outbox, agent.clone(), svc.hooks());
        svc.start(opts.settings).await.expect("start");
        let channel = MemoryChannel::new(2000, Duration::ZERO);
        let attachment = if opts.attach {
            health.connected();
            Some(conv.attach(link(&opts.account, &channel, opts.senders, health.clone())))
        } else {
            health.disconnected("network unreachable");
            None
        };
        Bed {
            conv,
            svc,
            channel,
            agent,
            clock,
            health,
            account: opts.account,
            attachment,
            guard: Some(guard),
        }
    }

    /// The owner (or anyone) writes in their direct chat.
    pub async fn say(&self, id: &str, from: &str, text: &str) {
        self.conv
            .accept(vec![msg_on(&self.account, id, from, text)])
            .await
            .expect("accept");
    }

    /// Texts sent to the owner's chat so far.
    pub fn owner_texts(&self) -> Vec<String> {
        self.channel.texts(OWNER)
    }

    /// Waits until `n` messages went out and returns the last.
    pub async fn nth_sent(&self, n: usize) -> String {
        within(self.channel.wait_sent(n)).await;
        self.channel.sent()[n - 1].text.clone()
    }

    /// Stops everything and closes the store (a clean restart; the store keeps what was committed).
    pub async fn shut(mut self) {
        self.svc.stop();
        drop(self.attachment.take());
        if let Some(g) = self.guard.take() {
            tokio::task::spawn_blocking(move || g.close())
                .await
                .expect("close store");
        }
    }
}

/// A component that attaches a MemoryChannel account to the pipeline while it runs.
pub struct MemoryComponent {
    pub conv: Arc<Conversation>,
    pub channel: Arc<MemoryChannel>,
    pub senders: Senders,
    /// The configured `remote_tools` (the daemon's tests of the owner tools set it).
    pub remote_tools: RemoteTools,
}

impl Component for MemoryComponent {
    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        Box::pin(async move {
            let link = AccountLink {
                remote_tools: self.remote_tools,
                ..link(&account(), &self.channel, self.senders, health.clone())
            };
            let attachment = self.conv.attach(link);
            health.connected();
            cancel.cancelled().await;
            drop(attachment);
            Ok(())
        })
    }
}

/// Builds a [`MemoryComponent`] for every account, all sharing one channel.
pub struct MemoryFactory {
    pub conv: Arc<Conversation>,
    pub channel: Arc<MemoryChannel>,
}

impl ComponentFactory for MemoryFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        Arc::new(MemoryComponent {
            conv: self.conv.clone(),
            channel: self.channel.clone(),
            senders: spec.senders,
            remote_tools: spec.remote_tools,
        })
    }
}
