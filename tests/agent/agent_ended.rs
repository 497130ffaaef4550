//! Misbehaving agents never block a chat, through the pipeline: a message that ends the ACP
//! agent each time is tried three times, then answered with a note and dropped (counted); a
//! stranger's such message never restarts the owner's agent; `/stop` and `/new` release a
//! message kept for a retry while the agent is down.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::{
    AcpAgent, AcpOptions, Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest,
};
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings};
use scv_bridge::conversation::*;
use scv_bridge::protocol::{Purpose, RemoteTools, Senders};
use scv_bridge::store::{Store, StoreGuard};
use scv_bridge::supervisor::{Capabilities, HealthCell, HealthHandle, NoteSource};
use scv_bridge::testing::fake_acp::FakeAcp;
use tokio_util::sync::CancellationToken;

const OWNER: &str = "owner@im.wechat";
const STRANGER: &str = "stranger@im.wechat";

fn account() -> AccountKey {
    AccountKey::new(Channel::Wechat, "phone")
}

fn link(channel: &Arc<MemoryChannel>) -> AccountLink {
    let spec = AccountSpec {
        key: account(),
        enabled: true,
        workspace: None,
        senders: Senders::Anyone,
        remote_tools: RemoteTools::Owner,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language: Default::default(),
        media: Default::default(),
        settings: ChannelSettings::default(),
    };
    AccountLink {
        account: account(),
        senders: Senders::Anyone,
        remote_tools: RemoteTools::Owner,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        owner: Some(SenderId::new(OWNER)),
        workspace: None,
        media: Default::default(),
        channel_label: "WeChat",
        language: Default::default(),
        capabilities: Capabilities::default(),
        health: HealthHandle::new(HealthCell::new(&spec)),
        sender: channel.clone(),
    }
}

fn msg(id: &str, from: &str, text: &str) -> Inbound {
    Inbound {
        account: account(),
        chat: ChatId::new(from),
        sender: SenderId::new(from),
        msg_id: PlatformMsgId::new(id),
        text: text.to_string(),
        at_unix_ms: 1,
        reply: ReplyContext(format!("ctx-{id}")),
        media: Vec::new(),
    }
}

struct Bed {
    conv: Arc<Conversation>,
    channel: Arc<MemoryChannel>,
    health: HealthHandle,
    /// How long a wanted text may take before the test fails instead of hanging (real time
    /// only: a paused clock jumps to any timer while the store's thread works).
    patience: Option<Duration>,
    _attachment: Attachment,
    _dir: tempfile::TempDir,
    _guard: StoreGuard,
}

fn bed(agent: Arc<dyn Agent>) -> Bed {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, guard) = Store::open(&dir.path().join("s.db")).expect("store");
    let conv = Conversation::new(store, agent);
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let l = link(&channel);
    let health = l.health.clone();
    let attachment = conv.attach(l);
    Bed {
        conv,
        channel,
        health,
        patience: None,
        _attachment: attachment,
        _dir: dir,
        _guard: guard,
    }
}

impl Bed {
    /// Waits (on the channel's sends) until `chat` was sent a text `wanted` accepts; `patience`
    /// without one fails the test instead of hanging it.
    async fn text_where(&self, chat: &str, wanted: impl Fn(&str) -> bool) -> String {
        let find = async {
            loop {
                let n = self.channel.sent().len();
                if let Some(t) = self.channel.texts(chat).into_iter().find(|t| wanted(t)) {
                    return t;
                }
                self.channel.wait_sent(n + 1).await;
            }
        };
        match self.patience {
            None => find.await,
            Some(p) => match tokio::time::timeout(p, find).await {
                Ok(t) => t,
                Err(_) => panic!("not sent; {chat} got {:?}", self.channel.texts(chat)),
            },
        }
    }
}

fn acp(fake: &FakeAcp) -> Arc<dyn Agent> {
    Arc::new(AcpAgent::new(AcpOptions::new(Arc::new(fake.clone())), None))
}

#[tokio::test(start_paused = true)]
async fn a_message_that_ends_the_agent_three_times_is_answered_with_a_note_and_dropped() {
    let fake = FakeAcp::new();
    let b = bed(acp(&fake));
    b.conv
        .accept(vec![msg("m1", OWNER, "CRASH")])
        .await
        .expect("accept");
    let note = b.text_where(OWNER, |t| t.contains("it is dropped")).await;
    assert_eq!(
        note,
        "The agent stopped while answering this, 3 times; it is dropped: the agent process \
         ended while answering (its output ended): thread 'main' panicked | panic: boom. Send \
         it again in other words, or /new to start afresh."
    );
    let prompts = fake.log().prompts.len();
    assert_eq!(prompts, 3, "tried three times");
    assert_eq!(b.conv.stats().get(&account(), "dropped_agent_ended"), 1);
    let texts = b.channel.texts(OWNER);
    assert!(
        texts[0].starts_with("The agent is not answering: the agent process ended"),
        "the owner heard once that it is retried: {texts:?}"
    );
    // The chat is free: the next message is answered, and the dropped one is never asked again.
    b.conv
        .accept(vec![msg("m2", OWNER, "hi")])
        .await
        .expect("accept");
    b.text_where(OWNER, |t| t == "hello world").await;
    assert_eq!(fake.log().prompts.len(), prompts + 1);
    assert!(
        b.health.get().error.is_none(),
        "the agent note went with the message: {:?}",
        b.health.get().error
    );
}

#[tokio::test(start_paused = true)]
async fn a_silent_agent_ends_the_turn_with_the_usual_note_and_a_status_error() {
    let fake = FakeAcp::new();
    let mut o = AcpOptions::new(Arc::new(fake.clone()));
    o.idle_timeout = Some(Duration::from_secs(30));
    let b = bed(Arc::new(AcpAgent::new(o, None)));
    b.conv
        .accept(vec![msg("m1", OWNER, "HANG")])
        .await
        .expect("accept");
    let told = b
        .text_where(OWNER, |t| t.starts_with("The agent is not answering"))
        .await;
    assert_eq!(
        told,
        "The agent is not answering: the agent sent nothing for 30 s. Your message is kept and \
         will be answered when it is back."
    );
    let notes = b.health.get().notes.clone();
    assert!(
        notes.iter().any(|n| n.source == NoteSource::Agent
            && n.text == "the agent is not answering: the agent sent nothing for 30 s"),
        "{notes:?}"
    );
    // And like any message that stops the agent, it is given up after three tries.
    b.text_where(OWNER, |t| t.contains("it is dropped")).await;
}

#[tokio::test(start_paused = true)]
async fn a_strangers_message_that_ends_the_agent_never_restarts_the_owners() {
    let fake = FakeAcp::new();
    let b = bed(acp(&fake));
    b.conv
        .accept(vec![msg("o1", OWNER, "hi")])
        .await
        .expect("accept");
    b.text_where(OWNER, |t| t == "hello world").await;
    b.conv
        .accept(vec![msg("s1", STRANGER, "CRASH")])
        .await
        .expect("accept");
    b.conv
        .accept(vec![msg("o2", OWNER, "hi again")])
        .await
        .expect("accept");
    let note = b
        .text_where(STRANGER, |t| t.contains("it is dropped"))
        .await;
    assert_eq!(
        note,
        "The agent stopped while answering this, 3 times; it is dropped. Send it again in other \
         words.",
        "a stranger is not shown the agent's stderr"
    );
    assert_eq!(b.channel.texts(OWNER), vec!["hello world", "hello world"]);
    let launched = fake.log().launched;
    assert_eq!(
        launched.iter().filter(|n| *n == "wechat-phone").count(),
        1,
        "the owner's agent was never restarted: {launched:?}"
    );
}

/// An agent that is down, asking to be tried again in an hour, until `up` is set.
#[derive(Default)]
struct DownForAnHour {
    prompts: Mutex<Vec<String>>,
    up: Mutex<bool>,
}

impl Agent for DownForAnHour {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            self.prompts.lock().expect("lock").push(req.prompt.clone());
            if !*self.up.lock().expect("lock") {
                let mut e = AgentError::new(AgentErrorKind::Unavailable, "HTTP 503");
                e.retry_after = Some(Duration::from_secs(3600));
                return Err(e);
            }
            Ok(TurnOutput {
                text: format!("echo: {}", req.prompt),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// The owner's `command` while a message waits out the agent's outage: it is answered with
/// `said`, the kept message is released (counted) and the next message is answered at once.
async fn releases(command: &str, said: &str) {
    let agent = Arc::new(DownForAnHour::default());
    let mut b = bed(agent.clone());
    // Real time: the retry is an hour away, and a paused clock could jump to it while the store
    // thread works.
    b.patience = Some(Duration::from_secs(20));
    b.conv
        .accept(vec![msg("m1", OWNER, "are you there")])
        .await
        .expect("accept");
    b.text_where(OWNER, |t| t.starts_with("The agent is not answering"))
        .await;
    b.conv
        .accept(vec![msg("m2", OWNER, command)])
        .await
        .expect("accept");
    b.text_where(OWNER, |t| t == said || t == "Nothing is running.")
        .await;
    assert_eq!(b.channel.texts(OWNER)[1], said);
    *agent.up.lock().expect("lock") = true;
    b.conv
        .accept(vec![msg("m3", OWNER, "next")])
        .await
        .expect("accept");
    b.text_where(OWNER, |t| t == "echo: next").await;
    assert_eq!(
        *agent.prompts.lock().expect("lock"),
        vec!["are you there", "next"],
        "the released message is not asked again"
    );
    assert_eq!(
        b.conv.stats().get(&account(), "dropped_stopped_by_owner"),
        1
    );
}

#[tokio::test]
async fn stop_releases_a_message_kept_while_the_agent_is_down() {
    releases("/stop", "Stopped.").await;
}

#[tokio::test]
async fn new_releases_a_message_kept_while_the_agent_is_down() {
    releases("/new", "Started a fresh conversation.").await;
}
