//! The daemon with one QQ account, built by the real platform factory, against the fake QQ open
//! platform over real sockets: the fake, the stored login and the table; the rest is the
//! shared platform bed.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::config::Config;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::testing::InstantAgent;
use scv_bridge::testing::platform_bed::{self, Bed, BedRun};
use scv_qq::fake::{FakeConfig, FakeQq, SentRecord};

pub use scv_bridge::testing::platform_bed::WAIT;

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
    let lines = format!("api_base = \"{base_url}\"\ntoken_base = \"{base_url}\"\n{table}");
    platform_bed::write_config(dir, "qq.bot", &lines)
}

/// A running daemon with one QQ account and its fake; the daemon's waits are the bed's.
pub struct Harness {
    pub fake: FakeQq,
    pub agent: Arc<InstantAgent>,
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
        let bed = Bed::start(config, ACCOUNT, BedRun::agent(agent.clone())).await;
        Harness {
            fake,
            agent,
            bed,
            dir,
        }
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
        let config = self.bed.stop().await;
        (self.fake, self.dir, config)
    }
}
