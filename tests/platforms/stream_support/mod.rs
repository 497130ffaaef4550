//! The daemon with a Feishu account against the fake Feishu, with an agent that writes its
//! answer through the turn's events in parts the test lets go, and an in-process restart.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::PlatformParts;
use scv_bridge::agent::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AccountSpec, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_feishu::fake::{CardRecord, FakeConfig, FakeFeishu};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(10);
/// The account every test runs.
pub const ACCOUNT: &str = "feishu:work";
/// The owner the fake's default config names.
pub const OWNER: &str = "ou_owner";
/// Paragraphs of [`answer`].
pub const PARAGRAPHS: usize = 10;

/// A 2,000-character answer: ten tagged paragraphs of CJK and Latin text.
pub fn answer() -> String {
    (0..PARAGRAPHS)
        .map(|i| {
            let body: String = "流式卡片 streams text. "
                .repeat(10)
                .chars()
                .take(190)
                .collect();
            format!("[p{i:03}] {}", body.trim_end())
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The text without its whitespace.
pub fn non_blank(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// How often each paragraph tag appears across `texts`.
pub fn tag_counts(texts: &[String]) -> Vec<usize> {
    let all = texts.concat();
    (0..PARAGRAPHS)
        .map(|i| all.matches(&format!("[p{i:03}]")).count())
        .collect()
}

/// An agent writing `text` in `parts` parts, each after a permit from the test (the first run
/// only; later runs write everything at once). A first run without permits waits until it
/// is cancelled.
pub struct PartsAgent {
    text: String,
    parts: usize,
    /// Permits to write the next part (first run).
    pub go: Semaphore,
    /// Runs started.
    pub runs: AtomicUsize,
}

impl PartsAgent {
    /// An agent writing `text` in `parts` parts.
    pub fn new(text: String, parts: usize) -> Arc<Self> {
        Arc::new(PartsAgent {
            text,
            parts,
            go: Semaphore::new(0),
            runs: AtomicUsize::new(0),
        })
    }

    /// Lets the first run write one more part.
    pub fn next_part(&self) {
        self.go.add_permits(1);
    }
}

impl Agent for PartsAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let chars: Vec<char> = self.text.chars().collect();
            let size = chars.len().div_ceil(self.parts.max(1));
            for part in chars.chunks(size) {
                if run == 0 {
                    tokio::select! {
                        p = self.go.acquire() => p.map(|p| p.forget()).unwrap_or(()),
                        _ = cancel.cancelled() => {
                            return Err(AgentError::new(AgentErrorKind::Cancelled, "cancelled"));
                        }
                    }
                }
                req.events.text(&part.iter().collect::<String>());
            }
            if run == 0 {
                // The end, too, waits for the test.
                tokio::select! {
                    p = self.go.acquire() => p.map(|p| p.forget()).unwrap_or(()),
                    _ = cancel.cancelled() => {
                        return Err(AgentError::new(AgentErrorKind::Cancelled, "cancelled"));
                    }
                }
            }
            Ok(TurnOutput {
                text: self.text.clone(),
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

struct Factory(PlatformParts);

impl ComponentFactory for Factory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        scv_bridge::adapters::feishu::build(self.0.ports().port(spec))
    }
}

/// A daemon with one owner-only Feishu account on a fake, restartable in process.
pub struct Harness {
    /// The fake Feishu (kept across restarts).
    pub fake: FakeFeishu,
    /// The daemon, while running.
    pub daemon: Option<RunningDaemon>,
    /// The pipeline of the running daemon.
    pub conversation: Option<Arc<Conversation>>,
    agent: Arc<dyn Agent>,
    config: Config,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// Starts the fake and the daemon with `agent`.
    pub async fn start(agent: Arc<dyn Agent>) -> Harness {
        let cfg = FakeConfig::fast();
        let fake = FakeFeishu::start(cfg.clone()).await.expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        let text = format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\n",
            dir.path().join("state").display(),
            dir.path().join("run").join("daemon.sock").display(),
            fake.base_url(),
        );
        std::fs::write(&path, text).expect("write config");
        let config = Config::load(&path).expect("config");
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        let c = Credentials::default()
            .with("app_id", &cfg.app_id)
            .with("app_secret", &cfg.app_secret)
            .with("owner_id", OWNER);
        creds.save(ACCOUNT, &c).expect("save credentials");
        let mut h = Harness {
            fake,
            daemon: None,
            conversation: None,
            agent,
            config,
            _dir: dir,
        };
        h.up().await;
        h
    }

    /// Starts the daemon (again) and waits until the account is connected.
    pub async fn up(&mut self) {
        let slot: Arc<std::sync::Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let (agent, slot2, agent_config) =
            (self.agent.clone(), slot.clone(), self.config.agent.clone());
        let make =
            move |c: &CredentialStore, s: &scv_bridge::store::Store| -> Arc<dyn ComponentFactory> {
                let conversation = Conversation::new(s.clone(), agent);
                if let Ok(mut slot) = slot2.lock() {
                    *slot = Some(conversation.clone());
                }
                Arc::new(Factory(PlatformParts {
                    credentials: c.clone(),
                    store: s.clone(),
                    conversation,
                    agent: agent_config,
                    mail: Default::default(),
                }))
            };
        let daemon = daemon::start(self.config.clone(), make, LifecyclePolicy::default())
            .await
            .expect("daemon starts");
        let registry = daemon.core.registry();
        let waited = tokio::time::timeout(
            WAIT,
            scv_bridge::testing::wait_for_state(&registry, ACCOUNT, ComponentState::Connected),
        )
        .await;
        assert!(waited.is_ok(), "the account never connected");
        self.conversation = slot.lock().ok().and_then(|s| s.clone());
        self.daemon = Some(daemon);
    }

    /// Stops the daemon; nothing may be abandoned.
    pub async fn down(&mut self) {
        if let Some(d) = self.daemon.take() {
            let report = d.stop().await;
            assert!(
                report.abandoned.is_empty(),
                "abandoned: {:?}",
                report.abandoned
            );
        }
        self.conversation = None;
    }

    /// Waits until `cond` holds on the fake.
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeFeishu) -> bool) {
        assert!(
            self.fake.wait_until(WAIT, cond).await,
            "timed out waiting for {what}: cards {:?}",
            self.fake.cards()
        );
    }

    /// Waits until the pipeline is quiet (every turn and send done).
    pub async fn settle(&self) {
        if let Some(c) = &self.conversation {
            let quiet = tokio::time::timeout(WAIT, c.quiescent()).await;
            assert!(quiet.is_ok(), "the pipeline never went quiet");
        }
    }

    /// The one card created so far.
    pub fn card(&self) -> CardRecord {
        let cards = self.fake.cards();
        assert_eq!(cards.len(), 1, "one card per answer: {cards:?}");
        cards[0].clone()
    }

    /// Texts of plain (non-card) messages the bot sent to the owner's chat, in order.
    pub fn plain_texts(&self) -> Vec<String> {
        self.fake
            .sent()
            .into_iter()
            .filter(|s| s.msg_type != "interactive")
            .map(|s| {
                s.content
                    .get("text")
                    .and_then(|t| t.as_str())
                    .map(String::from)
                    .or_else(|| {
                        s.content
                            .pointer("/zh_cn/content/0/0/text")
                            .and_then(|t| t.as_str())
                            .map(String::from)
                    })
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// Whether `xs` strictly increases.
pub fn strictly_increasing(xs: &[i64]) -> bool {
    xs.windows(2).all(|w| w[0] < w[1])
}
