//! The daemon with one Telegram account, built by the real platform factory, against the fake
//! Bot API over real sockets: the fake, the stored login and the table; the rest is the shared
//! platform bed.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use scv_bridge::config::Config;
use scv_bridge::conversation::ButtonAnswers;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::testing::platform_bed::{self, Bed, BedRun};
use scv_telegram::fake::{FakeConfig, FakeHandle, FakeServer};

pub use scv_bridge::testing::platform_bed::{Presses, ScriptedAgent as TestAgent, WAIT};

/// The account every test runs.
pub const ACCOUNT: &str = "telegram:bot";

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
    platform_bed::write_config(
        dir,
        "telegram.bot",
        &format!("base_url = \"{base_url}\"\n{table}"),
    )
}

/// A running daemon with one Telegram account and its fake; the daemon's waits are the bed's.
pub struct Harness {
    pub server: Option<FakeServer>,
    pub fake: FakeHandle,
    pub agent: Arc<TestAgent>,
    pub presses: Option<Arc<Presses>>,
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
        let run = BedRun {
            answers: presses.clone().map(|p| p as Arc<dyn ButtonAnswers>),
            ..BedRun::agent(agent.clone())
        };
        let bed = Bed::start(config, ACCOUNT, run).await;
        Harness {
            server,
            fake,
            agent,
            presses,
            bed,
            dir,
        }
    }

    /// Waits until `cond` holds on the fake.
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeHandle) -> bool) {
        assert!(
            self.fake.wait_until(WAIT, cond).await,
            "timed out waiting for {what}; health {:?}",
            self.health()
        );
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
        let config = self.bed.stop().await;
        (self.server, self.fake, self.dir, config)
    }
}
