//! The daemon with one WeCom account, built by the real platform factory, against the fake
//! WeCom long connection over real sockets: the fake, the stored login and the table; the rest
//! is the shared platform bed.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use scv_bridge::agent::Agent;
use scv_bridge::clock::Clock;
use scv_bridge::config::Config;
use scv_bridge::conversation::ButtonAnswers;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::testing::platform_bed::{self, Bed, BedRun};
use scv_wecom::fake::{FakeConfig, FakeWeCom};

pub use scv_bridge::testing::platform_bed::{Presses, ScriptedAgent as TestAgent, WAIT};

/// The account every test runs.
pub const ACCOUNT: &str = "wecom:bot";

/// The owner's userid (mixed case on purpose: ids are case-sensitive).
pub const OWNER: &str = "ZhangSan";

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
    platform_bed::write_config(dir, "wecom.bot", &format!("url = \"{url}\"\n{table}"))
}

/// A running daemon with one WeCom account and its fake; the daemon's waits are the bed's.
pub struct Harness {
    pub fake: Arc<FakeWeCom>,
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
        let fake = Arc::new(FakeWeCom::start(setup.fake).await.expect("fake"));
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), &fake.ws_url(), &setup.table);
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        if let Some(c) = &setup.credentials {
            creds.save(ACCOUNT, c).expect("save credentials");
        }
        let agent: Arc<dyn Agent> = setup.other_agent.unwrap_or_else(|| setup.agent.clone());
        let run = BedRun {
            answers: setup.presses.clone().map(|p| p as Arc<dyn ButtonAnswers>),
            clock: setup.clock,
            ..BedRun::agent(agent)
        };
        Self::start_with(fake, dir, config, setup.agent, setup.presses, run).await
    }

    /// Starts the daemon on a prepared fake, directory and configuration (a restart).
    pub async fn start_daemon(
        fake: Arc<FakeWeCom>,
        dir: tempfile::TempDir,
        config: Config,
        agent: Arc<TestAgent>,
        presses: Option<Arc<Presses>>,
    ) -> Harness {
        let run = BedRun {
            answers: presses.clone().map(|p| p as Arc<dyn ButtonAnswers>),
            ..BedRun::agent(agent.clone())
        };
        Self::start_with(fake, dir, config, agent, presses, run).await
    }

    async fn start_with(
        fake: Arc<FakeWeCom>,
        dir: tempfile::TempDir,
        config: Config,
        agent: Arc<TestAgent>,
        presses: Option<Arc<Presses>>,
        run: BedRun,
    ) -> Harness {
        let bed = Bed::start(config, ACCOUNT, run).await;
        Harness {
            fake,
            agent,
            presses,
            bed,
            dir,
        }
    }

    /// Waits until the account is connected and the fake has its subscription.
    pub async fn connected(&self) {
        self.wait_state(scv_bridge::protocol::ComponentState::Connected)
            .await;
        self.until("the subscription", |f| f.subscribed()).await;
    }

    /// Waits until `cond` holds on the fake.
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeWeCom) -> bool) {
        assert!(
            self.fake.wait_until(WAIT, cond).await,
            "timed out waiting for {what}; health {:?}",
            self.health()
        );
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
        let config = self.bed.stop().await;
        (self.fake, self.dir, config)
    }
}
