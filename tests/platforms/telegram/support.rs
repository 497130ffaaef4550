//! The daemon with one Telegram account, built by the real platform factory, against the fake
//! Bot API over real sockets.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::Config;
use scv_bridge::conversation::{ButtonAnswers, ButtonPress, Conversation, PressOutcome};
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::{ComponentHealth, ComponentState};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_telegram::fake::{FakeConfig, FakeHandle, FakeServer};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(20);

/// The account every test runs.
pub const ACCOUNT: &str = "telegram:bot";

/// An agent that answers `answer(prompt)`, optionally holding every turn until released.
pub struct TestAgent {
    gate: watch::Sender<bool>,
    turns: watch::Sender<usize>,
    answer: Box<dyn Fn(&str) -> String + Send + Sync>,
    /// Streams the answer in this many parts, each written when the test calls `next_part`
    /// (0: the whole answer at once, no events).
    parts: usize,
    go: tokio::sync::Semaphore,
    pub prompts: Mutex<Vec<String>>,
    pub attachments: Mutex<Vec<scv_bridge::agent::Attachment>>,
}

impl TestAgent {
    /// Answers "echo: <prompt>" at once.
    pub fn echo() -> Arc<Self> {
        Self::answering(|p| format!("echo: {p}"))
    }

    /// Answers with `answer(prompt)` at once.
    pub fn answering(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(TestAgent {
            gate: watch::channel(true).0,
            turns: watch::channel(0).0,
            answer: Box::new(answer),
            parts: 0,
            go: tokio::sync::Semaphore::new(0),
            prompts: Mutex::default(),
            attachments: Mutex::default(),
        })
    }

    /// Writes `text` as streamed events in `parts` parts, each when `next_part` lets it, and
    /// ends the turn at one more `next_part`.
    pub fn streaming(text: String, parts: usize) -> Arc<Self> {
        let mut agent = Self::answering(move |_| text.clone());
        if let Some(a) = Arc::get_mut(&mut agent) {
            a.parts = parts;
        }
        agent
    }

    /// Lets a streaming agent write its next part (or end its turn).
    pub fn next_part(&self) {
        self.go.add_permits(1);
    }

    /// Turns started so far.
    pub fn turns(&self) -> usize {
        *self.turns.borrow()
    }

    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

impl Agent for TestAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            self.turns.send_modify(|t| *t += 1);
            if let Ok(mut p) = self.prompts.lock() {
                p.push(req.prompt.clone());
            }
            if let Ok(mut a) = self.attachments.lock() {
                a.extend(req.attachments.iter().cloned());
            }
            let mut gate = self.gate.subscribe();
            tokio::select! {
                _ = gate.wait_for(|open| *open) => {}
                _ = cancel.cancelled() => {
                    return Err(AgentError::new(scv_bridge::agent::AgentErrorKind::Cancelled, "cancelled"));
                }
            }
            let text = (self.answer)(&req.prompt);
            if self.parts > 0 {
                let chars: Vec<char> = text.chars().collect();
                let size = chars.len().div_ceil(self.parts);
                let steps = chars.chunks(size).map(Some).chain([None]);
                for part in steps {
                    tokio::select! {
                        p = self.go.acquire() => p.map(|p| p.forget()).unwrap_or(()),
                        _ = cancel.cancelled() => {
                            return Err(AgentError::new(scv_bridge::agent::AgentErrorKind::Cancelled, "cancelled"));
                        }
                    }
                    if let Some(part) = part {
                        req.events.text(&part.iter().collect::<String>());
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

/// Records every button press handed to the port's answers; the first per question counts.
#[derive(Default)]
pub struct Presses {
    pub seen: Mutex<Vec<ButtonPress>>,
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
    /// Extra lines of the `[telegram.bot]` table.
    pub table: String,
    /// Credentials to store before the daemon starts (`None`: the caller stores them).
    pub credentials: Option<Credentials>,
    pub agent: Arc<TestAgent>,
    pub presses: Option<Arc<Presses>>,
}

impl Setup {
    /// An owner-only account whose stored owner is the fake's owner, with an echo agent.
    pub fn owned() -> Self {
        let fake = FakeConfig::default();
        Setup {
            credentials: Some(login(&fake).with("owner_id", fake.owner_id.to_string())),
            fake,
            table: "senders = \"owner\"\n".into(),
            agent: TestAgent::echo(),
            presses: None,
        }
    }
}

/// What `login telegram` stores for the fake's bot.
pub fn login(fake: &FakeConfig) -> Credentials {
    let id = fake
        .token
        .split_once(':')
        .map(|(i, _)| i)
        .unwrap_or_default();
    Credentials::default()
        .with("bot_token", &fake.token)
        .with("bot_id", id)
        .with("bot_username", &fake.bot_username)
}

/// Writes the configuration pointing at `base_url` with `table` lines and loads it.
pub fn write_config(dir: &Path, base_url: &str, table: &str) -> Config {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[telegram.bot]\nbase_url = \"{base_url}\"\n{table}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
    );
    std::fs::write(&path, text).expect("write config");
    Config::load(&path).expect("config")
}

/// A running daemon with one Telegram account and its fake.
pub struct Harness {
    pub server: Option<FakeServer>,
    pub fake: FakeHandle,
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
        let server = FakeServer::start_with(setup.fake).await.expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), &server.base_url(), &setup.table);
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        if let Some(c) = &setup.credentials {
            creds.save(ACCOUNT, c).expect("save credentials");
        }
        let fake = server.handle();
        Self::start_daemon(Some(server), fake, dir, config, setup.agent, setup.presses).await
    }

    /// Starts the daemon on a prepared fake, directory and configuration (a restart).
    pub async fn start_daemon(
        server: Option<FakeServer>,
        fake: FakeHandle,
        dir: tempfile::TempDir,
        config: Config,
        agent: Arc<TestAgent>,
        presses: Option<Arc<Presses>>,
    ) -> Harness {
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let (agent_dyn, slot2, agent_config): (Arc<dyn Agent>, _, _) =
            (agent.clone(), slot.clone(), config.agent.clone());
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
                match answers {
                    Some(a) => PlatformFactory::with_answers(parts, a),
                    None => PlatformFactory::new(parts),
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
            server,
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
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeHandle) -> bool) {
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

    /// Waits until the pipeline is quiet (after the fake shows the last input confirmed).
    pub async fn settle(&self) {
        let quiet = tokio::time::timeout(WAIT, self.conversation.quiescent()).await;
        assert!(quiet.is_ok(), "the pipeline never went quiet");
    }

    /// Waits until the server holds no update (the daemon confirmed everything), then until
    /// the pipeline is quiet.
    pub async fn drain(&self) {
        self.until("every update confirmed", |f| f.pending() == 0)
            .await;
        self.settle().await;
    }

    /// Texts the bot sent to `chat`, in order.
    pub fn texts_to(&self, chat: i64) -> Vec<String> {
        self.fake
            .sent()
            .into_iter()
            .filter(|s| s.chat_id == chat)
            .map(|s| s.text)
            .collect()
    }

    /// Stops the daemon; nothing may be abandoned. Returns the fake and the directory.
    pub async fn stop(self) -> (Option<FakeServer>, FakeHandle, tempfile::TempDir, Config) {
        let report = self.daemon.stop().await;
        assert!(
            report.abandoned.is_empty(),
            "abandoned: {:?}",
            report.abandoned
        );
        (self.server, self.fake, self.dir, self.config)
    }
}
