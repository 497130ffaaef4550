//! The daemon with one DingTalk account, built by the real platform factory, against the fake
//! DingTalk over real sockets.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::Config;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::{ComponentHealth, ComponentState};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_dingtalk::fake::{FakeConfig, FakeDingTalk, SentRecord};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(20);

/// The account every test runs.
pub const ACCOUNT: &str = "dingtalk:team";

/// An agent that answers `answer(prompt)` at once and records the prompts.
pub struct TestAgent {
    answer: Box<dyn Fn(&str) -> String + Send + Sync>,
    pub prompts: Mutex<Vec<String>>,
    pub attachments: Mutex<Vec<scv_bridge::agent::Attachment>>,
}

impl TestAgent {
    /// Answers "echo: <prompt>".
    pub fn echo() -> Arc<Self> {
        Self::answering(|p| format!("echo: {p}"))
    }

    /// Answers with `answer(prompt)`.
    pub fn answering(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(TestAgent {
            answer: Box::new(answer),
            prompts: Mutex::default(),
            attachments: Mutex::default(),
        })
    }

    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

impl Agent for TestAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            if let Ok(mut p) = self.prompts.lock() {
                p.push(req.prompt.clone());
            }
            if let Ok(mut a) = self.attachments.lock() {
                a.extend(req.attachments.iter().cloned());
            }
            Ok(TurnOutput {
                text: (self.answer)(&req.prompt),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// The fake's settings for tests: SYSTEM pings every 200 ms, so a live socket shows frames
/// well within a short idle watchdog.
pub fn fake_config() -> FakeConfig {
    FakeConfig {
        ping_every: Some(Duration::from_millis(200)),
        ..FakeConfig::default()
    }
}

/// How to start.
pub struct Setup {
    pub fake: FakeConfig,
    /// Extra lines of the `[dingtalk.team]` table.
    pub table: String,
    /// Credentials to store before the daemon starts (`None`: none).
    pub credentials: Option<Credentials>,
    pub agent: Arc<TestAgent>,
    /// Another agent to answer instead of `agent` (one that streams its answer).
    pub turns: Option<Arc<dyn Agent>>,
}

impl Setup {
    /// An owner-only account whose stored owner is the fake's first staff member, with an echo
    /// agent.
    pub fn owned() -> Self {
        let fake = fake_config();
        Setup {
            credentials: Some(login(&fake).with("owner_id", &fake.staff[0])),
            fake,
            table: "senders = \"owner\"\n".into(),
            agent: TestAgent::echo(),
            turns: None,
        }
    }
}

/// What `login dingtalk` stores for the fake's app.
pub fn login(fake: &FakeConfig) -> Credentials {
    Credentials::default()
        .with("client_id", &fake.client_id)
        .with("client_secret", &fake.client_secret)
}

/// Writes the configuration pointing both API bases at `base` with `table` lines and loads it.
pub fn write_config(dir: &Path, base: &str, table: &str) -> Config {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[dingtalk.team]\napi_base = \"{base}\"\noapi_base = \"{base}\"\n{table}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
    );
    std::fs::write(&path, text).expect("write config");
    Config::load(&path).expect("config")
}

/// A running daemon with one DingTalk account and its fake.
pub struct Harness {
    pub fake: FakeDingTalk,
    pub daemon: RunningDaemon,
    pub agent: Arc<TestAgent>,
    pub conversation: Arc<Conversation>,
    pub credentials: CredentialStore,
    pub config: Config,
    pub dir: tempfile::TempDir,
}

impl Harness {
    /// Starts the fake, stores credentials, starts the daemon.
    pub async fn start(setup: Setup) -> Harness {
        let fake = FakeDingTalk::start(setup.fake).await.expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), fake.base_url(), &setup.table);
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        if let Some(c) = &setup.credentials {
            creds.save(ACCOUNT, c).expect("save credentials");
        }
        let turns = setup.turns.unwrap_or_else(|| setup.agent.clone());
        Self::start_daemon(fake, dir, config, setup.agent, turns).await
    }

    /// Starts the daemon on a prepared fake, directory and configuration (a restart).
    pub async fn start_daemon(
        fake: FakeDingTalk,
        dir: tempfile::TempDir,
        config: Config,
        agent: Arc<TestAgent>,
        turns: Arc<dyn Agent>,
    ) -> Harness {
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let (agent_dyn, slot2, agent_config) = (turns, slot.clone(), config.agent.clone());
        let make =
            move |c: &CredentialStore, s: &scv_bridge::store::Store| -> Arc<dyn ComponentFactory> {
                let conversation = Conversation::new(s.clone(), agent_dyn);
                if let Ok(mut slot) = slot2.lock() {
                    *slot = Some(conversation.clone());
                }
                PlatformFactory::new(PlatformParts {
                    credentials: c.clone(),
                    store: s.clone(),
                    conversation,
                    agent: agent_config,
                    mail: Default::default(),
                })
            };
        let daemon = daemon::start(config.clone(), make, LifecyclePolicy::default())
            .await
            .expect("daemon starts");
        let conversation = slot
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .expect("conversation");
        Harness {
            fake,
            daemon,
            agent,
            conversation,
            credentials: creds,
            config,
            dir,
        }
    }

    /// The account's health now.
    pub fn health(&self) -> ComponentHealth {
        let cell = self.daemon.core.registry().cell(ACCOUNT).expect("cell");
        ComponentHealth::clone(&cell.get())
    }

    /// Waits until the account is in `state`.
    pub async fn wait_state(&self, state: ComponentState) {
        let registry = self.daemon.core.registry();
        let waited = tokio::time::timeout(
            WAIT,
            scv_bridge::testing::wait_for_state(&registry, ACCOUNT, state),
        )
        .await;
        assert!(waited.is_ok(), "not {state:?} in time: {:?}", self.health());
    }

    /// Waits until the account runs with a socket that takes pushes.
    pub async fn connected(&self) {
        self.wait_state(ComponentState::Connected).await;
        self.until("a socket taking pushes", |f| {
            f.deliverable_connections() == 1
        })
        .await;
    }

    /// Waits until `cond` holds on the fake.
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeDingTalk) -> bool) {
        assert!(
            self.fake.wait_until(WAIT, cond).await,
            "timed out waiting for {what}; health {:?}",
            self.health()
        );
    }

    /// Waits until `cond` holds on the account's health.
    pub async fn until_health(&self, what: &str, cond: impl Fn(&ComponentHealth) -> bool) {
        let cell = self.daemon.core.registry().cell(ACCOUNT).expect("cell");
        let mut changes = cell.subscribe();
        let waited = tokio::time::timeout(WAIT, async {
            while !cond(&cell.get()) {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        assert!(
            waited.is_ok() && cond(&cell.get()),
            "timed out waiting for {what}: {:?}",
            self.health()
        );
    }

    /// Waits until the push `message_id` is ACKed, then until the pipeline is quiet.
    pub async fn acked_and_settled(&self, message_id: &str) {
        self.until("the push's ACK", |f| {
            f.acks().iter().any(|a| a.message_id == message_id)
        })
        .await;
        let quiet = tokio::time::timeout(WAIT, self.conversation.quiescent()).await;
        assert!(quiet.is_ok(), "the pipeline never went quiet");
    }

    /// The texts the robot sent, in order (webhook replies and robot sends alike).
    pub fn texts(&self) -> Vec<String> {
        self.fake.sent().iter().map(text_of).collect()
    }

    /// Stops the daemon; nothing may be abandoned. Returns the fake and the directory.
    pub async fn stop(self) -> (FakeDingTalk, tempfile::TempDir, Config) {
        let report = self.daemon.stop().await;
        assert!(
            report.abandoned.is_empty(),
            "abandoned: {:?}",
            report.abandoned
        );
        (self.fake, self.dir, self.config)
    }
}

/// The text of one sent message: a webhook body's markdown or text, or a robot send's param.
pub fn text_of(s: &SentRecord) -> String {
    let p = &s.param;
    [
        p.pointer("/markdown/text"),
        p.pointer("/text/content"),
        p.get("text"),
        p.get("content"),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_str)
    .unwrap_or_default()
    .to_string()
}
