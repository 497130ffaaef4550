//! The daemon with one QQ account, built by the real platform factory, against the fake QQ open
//! platform over real sockets.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::Agent;
use scv_bridge::config::Config;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::{ComponentHealth, ComponentState};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::InstantAgent;
use scv_qq::fake::{FakeConfig, FakeQq, SentRecord};

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(20);

/// The account every test runs.
pub const ACCOUNT: &str = "qq:bot";

/// The owner's `user_openid` in the tests.
pub const OWNER: &str = "OWNER0000000000000000000000000001";

/// How to start.
pub struct Setup {
    pub fake: FakeConfig,
    /// Extra lines of the `[qq.bot]` table.
    pub table: String,
    /// Credentials to store before the daemon starts.
    pub credentials: Credentials,
    pub agent: Arc<InstantAgent>,
}

impl Setup {
    /// An owner-only account whose stored owner is [`OWNER`], with an echo agent.
    pub fn owned() -> Self {
        let fake = fake_config();
        Setup {
            credentials: login(&fake).with("owner_id", OWNER),
            fake,
            table: "senders = \"owner\"\n".into(),
            agent: Arc::new(InstantAgent::default()),
        }
    }
}

/// The fake with a short heartbeat, so a silent link shows within the test's time.
pub fn fake_config() -> FakeConfig {
    FakeConfig {
        heartbeat_interval: Duration::from_millis(500),
        ..FakeConfig::default()
    }
}

/// What `login qq` stores for the fake's bot.
pub fn login(fake: &FakeConfig) -> Credentials {
    Credentials::default()
        .with("app_id", &fake.app_id)
        .with("app_secret", &fake.app_secret)
        .with("bot_id", &fake.bot_id)
        .with("bot_name", &fake.bot_name)
}

/// Writes the configuration pointing at `base_url` with `table` lines and loads it.
pub fn write_config(dir: &Path, base_url: &str, table: &str) -> Config {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[qq.bot]\napi_base = \"{base_url}\"\ntoken_base = \"{base_url}\"\n{table}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
    );
    std::fs::write(&path, text).expect("write config");
    Config::load(&path).expect("config")
}

/// A running daemon with one QQ account and its fake.
pub struct Harness {
    pub fake: FakeQq,
    pub daemon: RunningDaemon,
    pub agent: Arc<InstantAgent>,
    pub conversation: Arc<Conversation>,
    pub config: Config,
    pub dir: tempfile::TempDir,
}

impl Harness {
    /// Starts the fake, stores credentials, starts the daemon.
    pub async fn start(setup: Setup) -> Harness {
        let fake = FakeQq::start(setup.fake).await.expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), fake.base_url(), &setup.table);
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        creds
            .save(ACCOUNT, &setup.credentials)
            .expect("save credentials");
        Self::start_daemon(fake, dir, config, setup.agent).await
    }

    /// Starts the daemon on a prepared fake, directory and configuration (a restart).
    pub async fn start_daemon(
        fake: FakeQq,
        dir: tempfile::TempDir,
        config: Config,
        agent: Arc<InstantAgent>,
    ) -> Harness {
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let (agent_dyn, slot2, agent_config): (Arc<dyn Agent>, _, _) =
            (agent.clone(), slot.clone(), config.agent.clone());
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

    /// Waits until the gateway session is up (READY seen by the fake's socket).
    pub async fn connected(&self) {
        self.wait_state(ComponentState::Connected).await;
        self.until("a live gateway socket", |f| f.live()).await;
    }

    /// Waits until `cond` holds on the fake.
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeQq) -> bool) {
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

    /// What the bot sent to `to` (a `user_openid` or `group_openid`), in order.
    pub fn sent_to(&self, to: &str) -> Vec<SentRecord> {
        self.fake
            .sent()
            .into_iter()
            .filter(|s| s.to == to)
            .collect()
    }

    /// The texts the bot sent to `to`, in order.
    pub fn texts_to(&self, to: &str) -> Vec<String> {
        self.sent_to(to).into_iter().map(|s| s.content).collect()
    }

    /// Stops the daemon; nothing may be abandoned. Returns the fake and the directory.
    pub async fn stop(self) -> (FakeQq, tempfile::TempDir, Config) {
        let report = self.daemon.stop().await;
        assert!(
            report.abandoned.is_empty(),
            "abandoned: {:?}",
            report.abandoned
        );
        (self.fake, self.dir, self.config)
    }
}
