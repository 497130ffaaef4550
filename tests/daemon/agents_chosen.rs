//! Several agents behind one WeChat account (issue 47): `[agent]` and `[agents.NAME]` built as
//! the daemon builds them, over fake models on real sockets; a chat switches with `/agent`,
//! keeps the switch across a restart, each agent keeps its own history, and a stranger talks
//! to the stranger agent without tools.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use scv_bridge::agent::openai::Role;
use scv_bridge::agent::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::testing::fake_openai::{FakeOpenAi, RecordedRequest};
use scv_wechat::fake::FakeConfig;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::wechat_support::*;

/// An agent that records what it was asked (the prompt, whether tools were refused) and
/// answers `<name>: <prompt>`. A prompt starting with `slow` waits for [`Recorder::release`]
/// or its cancel; either way the test sees it ([`Recorder::started`], [`Recorder::cancelled`]).
pub struct Recorder {
    name: &'static str,
    seen: Mutex<Vec<(String, bool)>>,
    /// Lets a held (`slow`) turn answer.
    pub release: Notify,
    /// Notified when a held turn has started.
    pub started: Notify,
    /// Notified when a held turn was cancelled.
    pub cancelled: Notify,
    cancels: Mutex<usize>,
}

impl Recorder {
    pub fn new(name: &'static str) -> Arc<Self> {
        Arc::new(Recorder {
            name,
            seen: Mutex::new(Vec::new()),
            release: Notify::new(),
            started: Notify::new(),
            cancelled: Notify::new(),
            cancels: Mutex::new(0),
        })
    }

    /// Every turn's (prompt, no_tools), in order.
    pub fn seen(&self) -> Vec<(String, bool)> {
        self.seen.lock().expect("seen").clone()
    }

    /// How many held turns were cancelled.
    pub fn cancels(&self) -> usize {
        *self.cancels.lock().expect("cancels")
    }
}

impl Agent for Recorder {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        self.seen
            .lock()
            .expect("seen")
            .push((req.prompt.clone(), req.no_tools));
        let text = format!("{}: {}", self.name, req.prompt);
        let hold = req.prompt.starts_with("slow");
        Box::pin(async move {
            if hold {
                self.started.notify_one();
                tokio::select! {
                    _ = self.release.notified() => {}
                    _ = cancel.cancelled() => {
                        *self.cancels.lock().expect("cancels") += 1;
                        self.cancelled.notify_one();
                        return Err(AgentError::new(AgentErrorKind::Cancelled, "cancelled"));
                    }
                }
            }
            Ok(TurnOutput {
                text,
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// What the model was sent as the person's side of the conversation, oldest first.
fn user_texts(r: &RecordedRequest) -> Vec<String> {
    let users = r.messages.iter().filter(|m| m.role == Role::User);
    users.map(|m| m.content.clone()).collect()
}

/// The account answers anyone; strangers talk to `cheap`; the default agent and `claude` are
/// two fake models.
fn agents(default: &FakeOpenAi, claude: &FakeOpenAi) -> String {
    format!(
        "senders = \"anyone\"\nstranger_agent = \"cheap\"\n\
         [agent]\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"m-default\"\n\
         [agents.claude]\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"m-claude\"\n\
         [agents.cheap]\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"m-cheap\"\n",
        default.base_url(),
        claude.base_url(),
        default.base_url(),
    )
}

/// Sends `text` as the owner and returns the bridge's `n`-th send in all.
async fn say(h: &Harness, text: &str, n: usize) -> String {
    h.fake.handle().push_text(OWNER, text);
    h.wait_sent(n).await[n - 1].clone()
}

#[tokio::test]
async fn two_agents_behind_one_account_switch_per_chat_keep_apart_and_survive_a_restart() {
    let default = FakeOpenAi::start().await.expect("the default model");
    let claude = FakeOpenAi::start().await.expect("claude's model");
    let cheap = Recorder::new("cheap");
    let mut h = Harness::new(FakeConfig::default(), &agents(&default, &claude)).await;
    h.agents_from_config = true;
    h.named_override = vec![("cheap".to_string(), cheap.clone())];
    h.start().await;
    assert_eq!(say(&h, "hello", 1).await, "echo: hello");
    let list = say(&h, "/agent", 2).await;
    assert!(
        list.contains("default, cheap, claude") && list.contains("talks to default"),
        "{list}"
    );
    let switched = say(&h, "/agent claude", 3).await;
    assert!(switched.contains("now talks to claude"), "{switched}");
    // The next turn goes to the other model, which never saw the first conversation.
    assert_eq!(say(&h, "hi claude", 4).await, "echo: hi claude");
    assert_eq!(default.requests().len(), 1);
    let asked = claude.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].model, "m-claude");
    assert_eq!(user_texts(&asked[0]), ["hi claude"]);
    let status = say(&h, "/status", 5).await;
    assert!(status.ends_with("Agent: claude"), "{status}");

    // A restart keeps the chat's choice and each agent's history.
    h.stop().await;
    h.start().await;
    assert_eq!(say(&h, "again", 6).await, "echo: again");
    let asked = claude.requests();
    assert_eq!(asked.len(), 2, "the switch survived the restart");
    assert_eq!(user_texts(&asked[1]), ["hi claude", "again"]);
    assert_eq!(default.requests().len(), 1);
    let back = say(&h, "/agent default", 7).await;
    assert!(back.contains("now talks to default"), "{back}");
    assert_eq!(say(&h, "back", 8).await, "echo: back");
    let asked = default.requests();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        user_texts(&asked[1]),
        ["hello", "back"],
        "the default agent's own history, without claude's turns"
    );
    let unknown = say(&h, "/agent gpt", 9).await;
    assert!(unknown.contains("no agent named gpt"), "{unknown}");

    // A stranger talks to the stranger agent, without tools, whatever the owner picked.
    h.fake
        .handle()
        .push_text("stranger7@im.wechat", "who are you");
    assert_eq!(h.wait_sent(10).await[9], "cheap: who are you");
    assert_eq!(cheap.seen(), [("who are you".to_string(), true)]);
    h.settle().await;
    assert_eq!((default.requests().len(), claude.requests().len()), (2, 2));
    h.stop().await;
}

#[tokio::test]
async fn status_shows_a_row_for_each_named_agent() {
    let default = FakeOpenAi::start().await.expect("the default model");
    let claude = FakeOpenAi::start().await.expect("claude's model");
    let mut h = Harness::new(FakeConfig::default(), &agents(&default, &claude)).await;
    h.agents_from_config = true;
    h.start().await;
    let status = scv_bridge::client::request(
        &h.daemon().socket,
        scv_bridge::protocol::DaemonCommand::Status,
    )
    .await
    .expect("status");
    let agents = &status.agents;
    let names: Vec<&str> = agents.keys().map(String::as_str).collect();
    assert_eq!(names, ["cheap", "claude"]);
    assert_eq!(agents["claude"].model.as_deref(), Some("m-claude"));
    assert_eq!(
        status.agent.as_ref().and_then(|a| a.model.as_deref()),
        Some("m-default")
    );
    let table = scv_bridge::cli::status_table(&status, 0);
    assert!(table.contains("agent claude: openai (m-claude)"), "{table}");
    h.stop().await;
}

#[tokio::test]
async fn a_reload_adds_a_named_agent_that_a_chat_can_switch_to() {
    let default = FakeOpenAi::start().await.expect("the default model");
    let claude = FakeOpenAi::start().await.expect("claude's model");
    let base = format!(
        "[agent]\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"m-default\"\n",
        default.base_url()
    );
    let mut h = Harness::new(FakeConfig::default(), &base).await;
    h.agents_from_config = true;
    h.start().await;
    assert_eq!(say(&h, "one", 1).await, "echo: one");
    let unknown = say(&h, "/agent claude", 2).await;
    assert!(unknown.contains("no agent named claude"), "{unknown}");
    let text = std::fs::read_to_string(&h.config_path).expect("config");
    let added = format!(
        "{text}[agents.claude]\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"m-claude\"\n",
        claude.base_url()
    );
    std::fs::write(&h.config_path, added).expect("config");
    scv_bridge::client::request(
        &h.daemon().socket,
        scv_bridge::protocol::DaemonCommand::Reload,
    )
    .await
    .expect("reload");
    let switched = say(&h, "/agent claude", 3).await;
    assert!(switched.contains("now talks to claude"), "{switched}");
    assert_eq!(say(&h, "two", 4).await, "echo: two");
    assert_eq!((default.requests().len(), claude.requests().len()), (1, 1));
    h.stop().await;
}
