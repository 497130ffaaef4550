//! The daemon with one DingTalk account, built by the real platform factory, against the fake
//! DingTalk over real sockets: the fake, the stored login and the table; the rest is the shared
//! platform bed.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::agent::Agent;
use scv_bridge::config::Config;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::testing::platform_bed::{self, Bed, BedRun};
use scv_dingtalk::fake::{FakeConfig, FakeDingTalk, SentRecord};
use serde_json::Value;

pub use scv_bridge::testing::platform_bed::{ScriptedAgent as TestAgent, WAIT};

/// The account every test runs.
pub const ACCOUNT: &str = "dingtalk:team";

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
    let lines = format!("api_base = \"{base}\"\noapi_base = \"{base}\"\n{table}");
    platform_bed::write_config(dir, "dingtalk.team", &lines)
}

/// A running daemon with one DingTalk account and its fake; the daemon's waits are the bed's.
pub struct Harness {
    pub fake: FakeDingTalk,
    pub agent: Arc<TestAgent>,
    pub bed: Bed,
    /// The directory the state lives in; kept for a restart.
    pub dir: tempfile::TempDir,
}

impl std::ops::Deref for Harness {
    type Target = Bed;
    fn deref(&self) -> &Bed {
        &self.bed
    }
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
        let bed = Bed::start(config, ACCOUNT, BedRun::agent(turns)).await;
        Harness {
            fake,
            agent,
            bed,
            dir,
        }
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

    /// Waits until the push `message_id` is ACKed, then until the pipeline is quiet.
    pub async fn acked_and_settled(&self, message_id: &str) {
        self.until("the push's ACK", |f| {
            f.acks().iter().any(|a| a.message_id == message_id)
        })
        .await;
        self.settle().await;
    }

    /// The texts the robot sent, in order (webhook replies and robot sends alike).
    pub fn texts(&self) -> Vec<String> {
        self.fake.sent().iter().map(text_of).collect()
    }

    /// Stops the daemon; nothing may be abandoned. Returns the fake and the directory.
    pub async fn stop(self) -> (FakeDingTalk, tempfile::TempDir, Config) {
        let config = self.bed.stop().await;
        (self.fake, self.dir, config)
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
