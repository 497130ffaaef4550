//! The daemon with one WeCom account, built by the real platform factory, against the fake
//! WeCom long connection over real sockets.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::clock::Clock;
use scv_bridge::config::{AccountSpec, Config};
use scv_bridge::conversation::{ButtonAnswers, ButtonPress, Conversation, PressOutcome};
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::port::Ports;
use scv_bridge::protocol::{ComponentHealth, ComponentState};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_wecom::fake::{FakeConfig, FakeWeCom};
use tokio_util::sync::CancellationToken;

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(20);

/// The account every test runs.
pub const ACCOUNT: &str = "wecom:bot";

/// The owner's userid (mixed case on purpose: ids are case-sensitive).
pub const OWNER: &str = "ZhangSan";

/// An agent that answers `answer(prompt)` at once and records what it was asked.
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

/// Records every button press handed to the port's answers.
#[derive(Default)]
pub struct Presses {
    pub seen: Mutex<Vec<ButtonPress>>,
}

impl Presses {
    pub fn seen(&self) -> Vec<ButtonPress> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl ButtonAnswers for Presses {
    fn press(&self, press: ButtonPress) -> BoxFuture<'_, PressOutcome> {
        if let Ok(mut s) = self.seen.lock() {
            s.push(press);
        }
        Box::pin(async { PressOutcome::NotOpen(None) })
    }
}

/// How to start.
pub struct Setup {
    pub fake: FakeConfig,
    /// Extra lines of the `[wecom.bot]` table.
    pub table: String,
    /// Credentials to store before the daemon starts (`None`: the caller stores them).
    pub credentials: Option<Credentials>,
    pub agent: Arc<TestAgent>,
    /// Another agent in its place (a streaming one); `agent` then records nothing.
    pub other_agent: Option<Arc<dyn Agent>>,
    pub presses: Option<Arc<Presses>>,
    /// The daemon's clock, moved by hand (`None`: the wall clock).
    pub clock: Option<Clock>,
}

impl Setup {
    /// An owner-only account whose configured owner is [`OWNER`], with an echo agent.
    pub fn owned() -> Self {
        let fake = FakeConfig::default();
        Setup {
            credentials: Some(login(&fake)),
            fake,
            table: format!("senders = \"owner\"\nowner = \"{OWNER}\"\n"),
            agent: TestAgent::echo(),
            other_agent: None,
            presses: None,
            clock: None,
        }
    }
}

/// What `login wecom` stores for the fake's bot.
pub fn login(fake: &FakeConfig) -> Credentials {
    Credentials::default()
        .with("bot_id", &fake.bot_id)
        .with("secret", &fake.secret)
}

/// Writes the configuration pointing at `url` with `table` lines and loads it.
pub fn write_config(dir: &Path, url: &str, table: &str) -> Config {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[wecom.bot]\nurl = \"{url}\"\n{table}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
    );
    std::fs::write(&path, text).expect("write config");
    Config::load(&path).expect("config")
}

/// What runs the account: the agent, the presses' receiver, the clock.
struct Run {
    agent: Arc<dyn Agent>,
    presses: Option<Arc<Presses>>,
    clock: Option<Clock>,
}

/// Builds the WeCom account on ports with a clock of the test's own.
struct Clocked(Ports);

impl ComponentFactory for Clocked {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        scv_bridge::adapters::wecom::build(self.0.port(spec))
    }
}

/// A running daemon with one WeCom account and its fake.
pub struct Harness {
    pub fake: Arc<FakeWeCom>,
    pub daemon: RunningDaemon,
    pub agent: Arc<TestAgent>,
    pub conversation: Arc<Conversation>,
    pub credentials: CredentialStore,
    pub config: Config,
    pub presses: Option<Arc<Presses>>,
    pub dir: tempfile::TempDir,
}

impl Harness {
    /// Starts the fake, stores credentials, starts the daemon.
    pub async fn start(setup: Setup) -> Harness {
        let fake = Arc::new(FakeWeCom::start(setup.fake).await.expect("fake"));
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), &fake.ws_url(), &setup.table);
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        if let Some(c) = &setup.credentials {
            creds.save(ACCOUNT, c).expect("save credentials");
        }
        let agent: Arc<dyn Agent> = setup.other_agent.unwrap_or_else(|| setup.agent.clone());
        let run = Run {
            agent,
            presses: setup.presses,
            clock: setup.clock,
        };
        Self::start_with(fake, dir, config, setup.agent, run).await
    }

    /// Starts the daemon on a prepared fake, directory and configuration (a restart).
    pub async fn start_daemon(
        fake: Arc<FakeWeCom>,
        dir: tempfile::TempDir,
        config: Config,
        agent: Arc<TestAgent>,
        presses: Option<Arc<Presses>>,
    ) -> Harness {
        let run = Run {
            agent: agent.clone(),
            presses,
            clock: None,
        };
        Self::start_with(fake, dir, config, agent, run).await
    }

    async fn start_with(
        fake: Arc<FakeWeCom>,
        dir: tempfile::TempDir,
        config: Config,
        agent: Arc<TestAgent>,
        run: Run,
    ) -> Harness {
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let Run {
            agent: agent_dyn,
            presses,
            clock,
        } = run;
        let (slot2, agent_config) = (slot.clone(), config.agent.clone());
        let answers = presses.clone();
        let make =
            move |c: &CredentialStore, s: &scv_bridge::store::Store| -> Arc<dyn ComponentFactory> {
                let conversation = Conversation::new(s.clone(), agent_dyn);
                if let Ok(mut slot) = slot2.lock() {
                    *slot = Some(conversation.clone());
                }
                let parts = PlatformParts {
                    credentials: c.clone(),
                    store: s.clone(),
                    conversation,
                    agent: agent_config,
                    mail: Default::default(),
                };
                match (answers, clock.clone()) {
                    (_, Some(clock)) => Arc::new(Clocked(parts.ports().with_clock(clock))),
                    (Some(a), None) => PlatformFactory::with_answers(parts, a),
                    (None, None) => PlatformFactory::new(parts),
                }
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
            presses,
            dir,
        }
    }

    /// The account's health now.
    pub fn health(&self) -> ComponentHealth {
        let cell = self.daemon.core.registry().cell(ACCOUNT).expect("cell");
        ComponentHealth::clone(&cell.get())
    }

    /// Waits until the account is connected and the fake has its subscription.
    pub async fn connected(&self) {
        self.wait_state(ComponentState::Connected).await;
        self.until("the subscription", |f| f.subscribed()).await;
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

    /// Waits until `cond` holds on the fake.
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeWeCom) -> bool) {
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

    /// Waits until the pipeline is quiet.
    pub async fn settle(&self) {
        let quiet = tokio::time::timeout(WAIT, self.conversation.quiescent()).await;
        assert!(quiet.is_ok(), "the pipeline never went quiet");
    }

    /// Finished bubbles (answers on a message's handle), in the order they were opened.
    pub fn replies(&self) -> Vec<(String, String)> {
        self.fake
            .bubbles()
            .into_iter()
            .filter(|b| b.finished)
            .map(|b| (b.req_id, b.content))
            .collect()
    }

    /// The reply text on `req_id`, if one finished there.
    pub fn reply_to(&self, req_id: &str) -> Option<String> {
        self.replies()
            .into_iter()
            .find(|(r, _)| r == req_id)
            .map(|(_, t)| t)
    }

    /// Proactive markdown sent to `chat`, in order.
    pub fn sent_to(&self, chat: &str) -> Vec<String> {
        self.fake
            .sent()
            .into_iter()
            .filter(|s| s.cmd == "aibot_send_msg" && s.to == chat)
            .filter_map(|s| {
                s.body
                    .pointer("/markdown/content")
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            })
            .collect()
    }

    /// Stops the daemon; nothing may be abandoned.
    pub async fn stop(self) -> (Arc<FakeWeCom>, tempfile::TempDir, Config) {
        let report = self.daemon.stop().await;
        assert!(
            report.abandoned.is_empty(),
            "abandoned: {:?}",
            report.abandoned
        );
        (self.fake, self.dir, self.config)
    }
}
