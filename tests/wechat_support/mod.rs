//! Shared harness of the WeChat end-to-end tests: a fake iLink server, a daemon with the real
//! WeChat adapter, and an echo agent, all over real sockets.

#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::{ComponentHealth, ComponentState, DaemonCommand};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{BackoffPolicy, ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::WechatFactory;
use scv_wechat::fake::{FakeConfig, FakeHandle, FakeServer};
use tokio_util::sync::CancellationToken;

/// The owner's WeChat id (the QR scanner).
pub const OWNER: &str = "owner0001@im.wechat";
/// The account every test runs.
pub const ID: &str = "wechat:phone";
/// How long any wait may take before the test fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Answers `echo: <prompt>`; `long N` answers N numbered paragraphs; a prompt starting with
/// `hold ` waits for [`EchoAgent::release`] first (a turn that takes as long as the test likes).
/// Counts prompts.
#[derive(Default)]
pub struct EchoAgent {
    seen: Mutex<HashMap<String, usize>>,
    /// Lets one held turn answer.
    pub release: tokio::sync::Notify,
}

impl EchoAgent {
    /// How many turns answered `prompt`.
    pub fn turns(&self, prompt: &str) -> usize {
        self.seen
            .lock()
            .map(|s| s.get(prompt).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

/// The long answer for `long N`: paragraph `i` starts with `[p<i>]`, 300 characters each.
pub fn long_answer(n: usize) -> String {
    (0..n)
        .map(|i| format!("[p{i:03}] {}", "x".repeat(293)))
        .collect::<Vec<_>>()
        .join("\n\n")
}

impl Agent for EchoAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        if let Ok(mut s) = self.seen.lock() {
            *s.entry(req.prompt.clone()).or_insert(0) += 1;
        }
        let text = match req.prompt.strip_prefix("long ") {
            Some(n) => long_answer(n.trim().parse().unwrap_or(10)),
            None => format!("echo: {}", req.prompt),
        };
        let hold = req.prompt.starts_with("hold ");
        Box::pin(async move {
            if hold {
                self.release.notified().await;
            }
            Ok(TurnOutput {
                text,
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

/// Waits until the fake has taken at least `n` sends, woken by its changes; `ceiling` of paused
/// time, let pass in small steps, is only the bound (after it the caller's assertion says what
/// was sent).
pub async fn until_sent(fake: &FakeHandle, n: usize, ceiling: Duration) {
    let sent = async {
        loop {
            let changed = fake.changed();
            if fake.sent().len() >= n {
                return;
            }
            changed.await;
        }
    };
    tokio::select! {
        () = sent => {}
        () = scv_bridge::testing::let_time_pass(ceiling) => {}
    }
}

/// Test timings: pacing and holds in milliseconds, so no test sleeps for seconds.
pub fn fast_tuning() -> Tuning {
    Tuning {
        min_send_interval: Duration::from_millis(20),
        slow_down_base: Duration::from_millis(300),
        ..Tuning::default()
    }
}

/// A fake, a config directory, and (once started) a daemon.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub fake: FakeServer,
    pub config_path: PathBuf,
    pub agent: Arc<EchoAgent>,
    /// An agent to run instead of the echo agent (a test's own, such as a streaming one).
    pub agent_override: Option<Arc<dyn Agent>>,
    /// Build the agents from the configuration as the real daemon does (`[agent]` and every
    /// `[agents.NAME]`, over the daemon's store), instead of the echo agent.
    pub agents_from_config: bool,
    /// Named agents to run instead of the ones `[agents.NAME]` describes (a test's own).
    pub named_override: Vec<(String, Arc<dyn Agent>)>,
    pub conversation: Arc<Mutex<Option<Arc<Conversation>>>>,
    pub daemon: Option<RunningDaemon>,
    /// `None` runs the real factory (`PlatformFactory`) with WeChat's own timings.
    pub tuning: Option<Tuning>,
    pub policy: LifecyclePolicy,
}

impl Harness {
    /// A fake with `fake_config`, a config with `[wechat.phone]` plus `extra` lines, and the
    /// fake's initial token stored as the account's login (owner: [`OWNER`]).
    pub async fn new(fake_config: FakeConfig, extra: &str) -> Harness {
        let fake = FakeServer::start_with(fake_config).await.expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("config.toml");
        let text = format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[wechat.phone]\nbase_url = \"{}\"\n{extra}",
            dir.path().join("state").display(),
            dir.path().join("run/daemon.sock").display(),
            fake.base_url(),
        );
        std::fs::write(&config_path, text).expect("write config");
        let h = Harness {
            dir,
            fake,
            config_path,
            agent: Arc::new(EchoAgent::default()),
            agent_override: None,
            agents_from_config: false,
            named_override: Vec::new(),
            conversation: Arc::new(Mutex::new(None)),
            daemon: None,
            tuning: Some(fast_tuning()),
            policy: LifecyclePolicy::default(),
        };
        if let Some(token) = h.fake.handle().bot_token() {
            h.save_login(token.expose());
        }
        h
    }

    /// The credential store the daemon uses.
    pub fn credentials(&self) -> CredentialStore {
        CredentialStore::Files(self.dir.path().join("state").join("credentials"))
    }

    /// Stores a login as `scv-bridge login wechat phone` would.
    pub fn save_login(&self, token: &str) {
        let creds = Credentials::default()
            .with("bot_token", token)
            .with("bot_id", self.fake.handle().bot_id())
            .with("base_url", self.fake.base_url())
            .with("owner_id", OWNER);
        self.credentials().save(ID, &creds).expect("save login");
    }

    /// The loaded configuration.
    pub fn config(&self) -> Config {
        Config::load(&self.config_path).expect("config")
    }

    /// Starts the daemon.
    pub async fn start(&mut self) {
        let agent: Arc<dyn Agent> = match &self.agent_override {
            Some(a) => a.clone(),
            None => self.agent.clone(),
        };
        let overridden = self.agent_override.is_some();
        let slot = self.conversation.clone();
        let tuning = self.tuning.clone();
        let (config, from_config) = (self.config(), self.agents_from_config);
        let overrides = self.named_override.clone();
        let make = move |creds: &CredentialStore, store: &scv_bridge::store::Store| {
            let agent = match from_config && !overridden {
                true => scv_bridge::agent::build(&config.agent, store.clone()),
                false => agent,
            };
            let conversation = Conversation::new(store.clone(), agent);
            // The named agents and the accounts' choices, as the composition root sets them.
            let mut named = match from_config {
                true => scv_bridge::agent::registry::build_named(&config.agents, store),
                false => Default::default(),
            };
            named.extend(overrides);
            conversation.set_agents(named, config.choices.clone());
            if let Ok(mut s) = slot.lock() {
                *s = Some(conversation.clone());
            }
            let ctx = PlatformParts {
                credentials: creds.clone(),
                store: store.clone(),
                conversation,
                agent: AgentConfig::default(),
                mail: Default::default(),
            };
            let f: Arc<dyn ComponentFactory> = match tuning {
                Some(tuning) => Arc::new(WechatFactory { parts: ctx, tuning }),
                None => PlatformFactory::new(ctx),
            };
            f
        };
        // The daemon knows the pipeline (as in production), so status and metrics see it.
        let pipeline = self.conversation.clone();
        let wire = move |c: &CredentialStore, s: &scv_bridge::store::Store, _: &_| {
            let factory = make(c, s);
            let conversation = pipeline.lock().ok().and_then(|p| p.clone());
            daemon::Wiring {
                factory,
                conversation,
                confirm: None,
            }
        };
        let d = daemon::start_with(self.config(), wire, self.policy.clone())
            .await
            .expect("daemon starts");
        self.daemon = Some(d);
    }

    /// Stops the daemon and waits for it.
    pub async fn stop(&mut self) {
        if let Some(d) = self.daemon.take() {
            let report = d.stop().await;
            assert!(report.abandoned.is_empty(), "stopped in time: {report:?}");
        }
    }

    /// The running daemon.
    pub fn daemon(&self) -> &RunningDaemon {
        self.daemon.as_ref().expect("daemon running")
    }

    /// The pipeline of the running daemon.
    pub fn conversation(&self) -> Arc<Conversation> {
        self.conversation
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .expect("daemon started")
    }

    /// The account's health as `scv-bridge status` reports it (over the control socket).
    pub async fn status(&self) -> ComponentHealth {
        let s = scv_bridge::client::request(&self.daemon().socket, DaemonCommand::Status)
            .await
            .expect("status");
        s.components
            .into_iter()
            .find(|c| c.id == ID)
            .expect("account in status")
    }

    /// Waits until the account is in `state`.
    pub async fn wait_state(&self, state: ComponentState) {
        let registry = self.daemon().core.registry();
        within(
            scv_bridge::testing::wait_for_state(&registry, ID, state),
            &format!("state {state:?}"),
        )
        .await;
    }

    /// Waits until the account's health satisfies `ok`.
    pub async fn wait_health(&self, what: &str, ok: impl Fn(&ComponentHealth) -> bool) {
        let registry = self.daemon().core.registry();
        within(
            async {
                loop {
                    let cell = registry.cell(ID).expect("cell");
                    let mut rx = cell.subscribe();
                    if ok(&cell.get()) {
                        return;
                    }
                    let _ = tokio::time::timeout(Duration::from_millis(50), rx.changed()).await;
                }
            },
            what,
        )
        .await;
    }

    /// Waits until the fake accepted at least `n` sends; returns their texts.
    pub async fn wait_sent(&self, n: usize) -> Vec<String> {
        let sent = self.fake.handle().wait_for_sent(n, PATIENCE).await;
        assert!(sent.len() >= n, "expected {n} sends, got {}", sent.len());
        sent.into_iter().map(|m| m.text).collect()
    }

    /// Waits until the pipeline is quiet (every journaled message answered and sent), to show
    /// that nothing more happens. Whatever came in the same poll as the last message seen
    /// answered is journaled with it, so it holds the barrier too.
    pub async fn settle(&self) {
        within(self.conversation().quiescent(), "the pipeline to go quiet").await;
    }

    /// The socket path of the configuration.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("run/daemon.sock")
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        self.dir.path()
    }
}

/// A policy whose restarts come after milliseconds, for storms.
pub fn quick_policy() -> LifecyclePolicy {
    LifecyclePolicy {
        backoff: BackoffPolicy {
            base: Duration::from_millis(20),
            cap: Duration::from_millis(200),
        },
        ..LifecyclePolicy::default()
    }
}

/// Runs `fut`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<T>(fut: impl Future<Output = T>, what: &str) -> T {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}
