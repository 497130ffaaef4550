//! `/status` in Chinese reads Chinese on both lines: the account's state and the daemon's
//! summary of the whole bridge (which accounts are connected, which are not).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings};
use scv_bridge::conversation::*;
use scv_bridge::protocol::{ComponentState, Purpose, RemoteTools, Senders};
use scv_bridge::store::Store;
use scv_bridge::supervisor::{HealthCell, HealthHandle, HealthRegistry};
use scv_bridge::words::Language;
use tokio_util::sync::CancellationToken;

/// Never asked: `/status` is answered by the bridge itself.
struct NoAgent;

impl Agent for NoAgent {
    fn turn(
        &self,
        _req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async { Ok(TurnOutput::default()) })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

const OWNER: &str = "owner@im.wechat";

fn spec(key: &AccountKey, language: Language) -> AccountSpec {
    AccountSpec {
        key: key.clone(),
        enabled: true,
        workspace: None,
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language,
        media: Default::default(),
        settings: ChannelSettings::default(),
    }
}

async fn status(language: Language) -> String {
    let (store, _guard) = Store::open_in_memory().expect("store");
    let registry = Arc::new(HealthRegistry::default());
    let phone = AccountKey::new(Channel::Wechat, "phone");
    let cell = HealthCell::new(&spec(&phone, language));
    cell.set_state(ComponentState::Connected);
    registry.insert(phone.to_string(), cell.clone());
    let work = AccountKey::new(Channel::Wechat, "work");
    let other = HealthCell::new(&spec(&work, language));
    other.set_state(ComponentState::Backoff);
    registry.insert(work.to_string(), other);
    let hooks = Hooks {
        status_line: Some(scv_bridge::daemon::status_line(&registry)),
        ..Hooks::default()
    };
    let conv = Conversation::build(Outbox::new(store), Arc::new(NoAgent), hooks);
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let _attached = conv.attach(AccountLink {
        account: phone.clone(),
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        owner: Some(SenderId::new(OWNER)),
        workspace: None,
        media: Default::default(),
        channel_label: "WeChat",
        language,
        capabilities: Default::default(),
        health: HealthHandle::new(cell),
        sender: channel.clone(),
    });
    conv.accept(vec![Inbound {
        account: phone,
        chat: ChatId::new(OWNER),
        sender: SenderId::new(OWNER),
        msg_id: PlatformMsgId::new("s1"),
        text: "/status".into(),
        at_unix_ms: 1,
        reply: ReplyContext("ctx".into()),
        media: Vec::new(),
    }])
    .await
    .expect("accept");
    channel.wait_sent(1).await;
    channel.texts(OWNER)[0].clone()
}

#[tokio::test]
async fn zh_cn_status_names_the_bridge_and_its_troubled_account_in_chinese() {
    let text = status(Language::ZhCn).await;
    assert_eq!(
        text,
        "账号 wechat:phone：已连接\n桥接：2 个账号中 1 个已连接（wechat:work 等待重连）"
    );
}

#[tokio::test]
async fn en_status_keeps_the_english_summary() {
    let text = status(Language::En).await;
    assert_eq!(
        text,
        "wechat:phone: connected\nbridge: 1 of 2 accounts connected (wechat:work backoff)"
    );
}
