//! What the conversation tests share: an echoing agent that can be switched off, an account's
//! link on an in-memory channel, and a pipeline set up over a store in a temporary directory.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings};
use scv_bridge::conversation::*;
use scv_bridge::protocol::{Purpose, RemoteTools, Senders};
use scv_bridge::store::{Store, StoreGuard};
use scv_bridge::supervisor::{Capabilities, HealthCell, HealthHandle};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// An agent that answers `echo: <prompt>`, records every request, and can be switched off.
#[derive(Default)]
pub(crate) struct TestAgent {
    pub(crate) requests: Mutex<Vec<TurnRequest>>,
    pub(crate) calls: watch::Sender<u32>,
    pub(crate) down: Mutex<Option<AgentErrorKind>>,
    /// When set, turns wait for this before answering.
    pub(crate) gate: Mutex<Option<Arc<Notify>>>,
    pub(crate) answer: Mutex<Option<String>>,
    pub(crate) resets: AtomicU32,
}

impl TestAgent {
    /// An agent that is up.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(TestAgent::default())
    }

    /// The prompts of every request, in order.
    pub(crate) fn prompts(&self) -> Vec<String> {
        self.requests
            .lock()
            .expect("lock")
            .iter()
            .map(|r| r.prompt.clone())
            .collect()
    }

    /// Waits until the agent has been called `n` times.
    pub(crate) async fn wait_calls(&self, n: u32) {
        let _ = self.calls.subscribe().wait_for(|c| *c >= n).await;
    }
}

impl Agent for TestAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            self.requests.lock().expect("lock").push(req.clone());
            self.calls.send_modify(|c| *c += 1);
            if let Some(kind) = *self.down.lock().expect("lock") {
                return Err(AgentError::new(kind, "connection refused"));
            }
            let gate = self.gate.lock().expect("lock").clone();
            if let Some(g) = gate {
                tokio::select! {
                    _ = g.notified() => {}
                    _ = cancel.cancelled() => return Err(AgentError::new(AgentErrorKind::Cancelled, "cancelled")),
                }
            }
            let text = self
                .answer
                .lock()
                .expect("lock")
                .clone()
                .unwrap_or_else(|| format!("echo: {}", req.prompt));
            Ok(TurnOutput {
                text,
                usage: None,
                files: Vec::new(),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        self.resets.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }
}

/// The account owner's id on the memory channel.
pub(crate) const OWNER: &str = "owner@im.wechat";

/// The one account every test uses.
pub(crate) fn account() -> AccountKey {
    AccountKey::new(Channel::Wechat, "phone")
}

/// The account's link to the pipeline over `channel`, with the given senders, tools and purpose.
pub(crate) fn link(
    channel: &Arc<MemoryChannel>,
    senders: Senders,
    tools: RemoteTools,
    purpose: Purpose,
) -> AccountLink {
    let spec = AccountSpec {
        key: account(),
        enabled: true,
        workspace: None,
        senders,
        remote_tools: tools,
        approvals: Default::default(),
        purpose,
        language: Default::default(),
        media: Default::default(),
        settings: ChannelSettings::default(),
    };
    AccountLink {
        account: account(),
        senders,
        remote_tools: tools,
        approvals: Default::default(),
        purpose,
        owner: Some(SenderId::new(OWNER)),
        workspace: None,
        media: Default::default(),
        channel_label: "WeChat",
        language: Default::default(),
        capabilities: Capabilities {
            typing: true,
            ..Capabilities::default()
        },
        health: HealthHandle::new(HealthCell::new(&spec)),
        sender: channel.clone(),
    }
}

/// An inbound text message `id` from `from` in a chat of its own (the sender's).
pub(crate) fn msg(id: &str, from: &str, text: &str) -> Inbound {
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

/// The store at `path`, with its guard.
pub(crate) fn open(path: &Path) -> (Store, StoreGuard) {
    Store::open(path).expect("store")
}

/// A running pipeline with one attached account, and what keeps it alive.
pub(crate) struct Setup {
    pub(crate) conv: Arc<Conversation>,
    pub(crate) health: HealthHandle,
    pub(crate) channel: Arc<MemoryChannel>,
    pub(crate) agent: Arc<TestAgent>,
    pub(crate) _attachment: Attachment,
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) _guard: StoreGuard,
}

/// A pipeline over a fresh store with the echo agent and the memory channel attached.
pub(crate) fn setup(senders: Senders, tools: RemoteTools, purpose: Purpose) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, guard) = open(&dir.path().join("s.db"));
    let agent = TestAgent::new();
    let conv = Conversation::new(store, agent.clone());
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let l = link(&channel, senders, tools, purpose);
    let health = l.health.clone();
    let attachment = conv.attach(l);
    Setup {
        conv,
        health,
        channel,
        agent,
        _attachment: attachment,
        _dir: dir,
        _guard: guard,
    }
}
