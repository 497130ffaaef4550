//! The owner's language end to end: `language = "zh-CN"` answers commands in Chinese, `auto`
//! follows the owner's messages and keeps the choice across a restart, and the agent is told.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings};
use scv_bridge::conversation::*;
use scv_bridge::protocol::{Purpose, RemoteTools, Senders};
use scv_bridge::store::{Store, StoreGuard};
use scv_bridge::supervisor::{HealthCell, HealthHandle};
use scv_bridge::words::{Lang, Language, Msg};
use tokio_util::sync::CancellationToken;

/// Answers `echo: <prompt>` and records the language each turn was asked in.
#[derive(Default)]
struct EchoAgent {
    langs: Mutex<Vec<Lang>>,
}

impl Agent for EchoAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            self.langs.lock().expect("lock").push(req.language);
            Ok(TurnOutput {
                text: format!("echo: {}", req.prompt),
                usage: None,
                files: Vec::new(),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

const OWNER: &str = "owner@im.wechat";

fn account() -> AccountKey {
    AccountKey::new(Channel::Wechat, "phone")
}

fn link(channel: &Arc<MemoryChannel>, language: Language) -> AccountLink {
    let spec = AccountSpec {
        key: account(),
        enabled: true,
        workspace: None,
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language,
        media: Default::default(),
        settings: ChannelSettings::default(),
    };
    AccountLink {
        account: account(),
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
        health: HealthHandle::new(HealthCell::new(&spec)),
        sender: channel.clone(),
    }
}

fn msg(id: &str, text: &str) -> Inbound {
    Inbound {
        account: account(),
        chat: ChatId::new(OWNER),
        sender: SenderId::new(OWNER),
        msg_id: PlatformMsgId::new(id),
        text: text.to_string(),
        at_unix_ms: 1,
        reply: ReplyContext(format!("ctx-{id}")),
        media: Vec::new(),
    }
}

/// One running pipeline over the store at `path`.
struct Bridge {
    conv: Arc<Conversation>,
    channel: Arc<MemoryChannel>,
    agent: Arc<EchoAgent>,
    _attachment: Attachment,
    _guard: StoreGuard,
}

impl Bridge {
    fn start(path: &Path, language: Language) -> Bridge {
        let (store, guard) = Store::open(path).expect("store");
        let agent = Arc::new(EchoAgent::default());
        let conv = Conversation::new(store, agent.clone());
        let channel = MemoryChannel::new(2000, Duration::ZERO);
        let attachment = conv.attach(link(&channel, language));
        Bridge {
            conv,
            channel,
            agent,
            _attachment: attachment,
            _guard: guard,
        }
    }

    /// Sends `text` as the owner and returns the bridge's next text to the owner.
    async fn say(&self, id: &str, text: &str) -> String {
        let before = self.channel.texts(OWNER).len();
        self.conv.accept(vec![msg(id, text)]).await.expect("accept");
        self.channel.wait_sent(before + 1).await;
        self.channel.texts(OWNER)[before].clone()
    }
}

#[tokio::test]
async fn zh_cn_answers_help_and_status_in_chinese() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = Bridge::start(&dir.path().join("s.db"), Language::ZhCn);
    assert_eq!(b.say("c1", "/help").await, Msg::Help.text(Lang::ZhCn));
    let status = b.say("c2", "/status").await;
    let first = status.lines().next().expect("a first line");
    assert!(first.starts_with("账号 wechat:phone："), "{status}");
    assert!(
        status.lines().nth(1).expect("second").starts_with("桥接："),
        "{status}"
    );
    // An English message does not move a fixed language.
    b.say("m1", "hello").await;
    assert_eq!(b.say("c3", "/stop").await, "当前没有正在进行的回答。");
    assert_eq!(*b.agent.langs.lock().expect("lock"), [Lang::ZhCn]);
}

#[tokio::test]
async fn en_stays_english_after_a_chinese_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let b = Bridge::start(&dir.path().join("s.db"), Language::En);
    b.say("m1", "你好").await;
    assert_eq!(b.say("c1", "/stop").await, "Nothing is running.");
    assert_eq!(*b.agent.langs.lock().expect("lock"), [Lang::En]);
}

#[tokio::test]
async fn auto_switches_after_a_chinese_message_and_keeps_it_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    {
        let b = Bridge::start(&path, Language::Auto);
        assert_eq!(b.say("c1", "/help").await, Msg::Help.text(Lang::En));
        assert_eq!(
            b.say("m1", "你好，帮我看看日程").await,
            "echo: 你好，帮我看看日程"
        );
        assert_eq!(b.say("c2", "/help").await, Msg::Help.text(Lang::ZhCn));
        assert_eq!(*b.agent.langs.lock().expect("lock"), [Lang::ZhCn]);
    }
    let b = Bridge::start(&path, Language::Auto);
    assert_eq!(
        b.say("c3", "/help").await,
        Msg::Help.text(Lang::ZhCn),
        "the chat's language survives a restart"
    );
    // Back to English when the owner writes English again.
    b.say("m2", "thanks, that's all").await;
    assert_eq!(b.say("c4", "/stop").await, "Nothing is running.");
    assert_eq!(*b.agent.langs.lock().expect("lock"), [Lang::En]);
}
