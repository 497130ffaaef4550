//! The daemon with a Feishu account, against the fake Feishu over real sockets: the fake, the
//! card answers, the stored login and the table; the rest is the shared platform bed.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::feishu::{CardAnswerHandler, CardClick, ClickOutcome, build_with};
use scv_bridge::config::{AccountKey, Channel, Config};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::testing::platform_bed::{self, Bed, BedRun, Builder};
use scv_feishu::card::{Resolution, YesNoCard};
use scv_feishu::fake::{FakeConfig, FakeFeishu};

pub use scv_bridge::testing::platform_bed::ScriptedAgent as TestAgent;

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(10);

/// The account every test runs.
pub const ACCOUNT: &str = "feishu:work";

/// The owner the fake's default config names.
pub const OWNER: &str = "ou_owner";

/// A card handler like the confirm feature's: the first answer to a question counts.
#[derive(Default)]
pub struct Questions {
    /// Every click handed over.
    pub clicks: Mutex<Vec<CardClick>>,
}

impl CardAnswerHandler for Questions {
    fn answer(&self, click: CardClick) -> BoxFuture<'static, ClickOutcome> {
        let first = self
            .clicks
            .lock()
            .map(|mut c| {
                let first = !c.iter().any(|o| o.question_id == click.question_id);
                c.push(click.clone());
                first
            })
            .unwrap_or(false);
        let card = YesNoCard::new(&click.question_id, "Confirm", "Deploy now?").resolved(
            &Resolution::Answered {
                answer: click.answer,
                by: "you".into(),
                at: "14:03".into(),
            },
        );
        Box::pin(async move {
            if first {
                ClickOutcome::Recorded { card }
            } else {
                ClickOutcome::NotOpen { card: None }
            }
        })
    }
}

/// How to start.
pub struct Setup {
    /// The fake's settings.
    pub fake: FakeConfig,
    /// Extra lines of the `[feishu.work]` table (`senders`, `owner`).
    pub table: String,
    /// Credentials to store before the daemon starts (`None`: the caller stores them).
    pub credentials: Option<Credentials>,
    /// The agent.
    pub agent: Arc<TestAgent>,
    /// The card handler.
    pub cards: Option<Arc<dyn CardAnswerHandler>>,
}

impl Setup {
    /// An owner-only account whose stored owner is [`OWNER`], with an echo agent.
    pub fn owned() -> Self {
        Setup {
            fake: FakeConfig::fast(),
            table: "senders = \"owner\"\n".into(),
            credentials: Some(good_credentials(&FakeConfig::fast()).with("owner_id", OWNER)),
            agent: TestAgent::echo(),
            cards: None,
        }
    }
}

/// The app id and secret the fake accepts.
pub fn good_credentials(fake: &FakeConfig) -> Credentials {
    Credentials::default()
        .with("app_id", &fake.app_id)
        .with("app_secret", &fake.app_secret)
}

/// A running daemon with one Feishu account, its fake, and handles to look inside; the daemon's
/// waits are the bed's.
pub struct Harness {
    /// The fake Feishu.
    pub fake: FakeFeishu,
    /// The agent answering.
    pub agent: Arc<TestAgent>,
    /// The daemon, its pipeline, credentials and configuration.
    pub bed: Bed,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Harness {
    type Target = Bed;
    fn deref(&self) -> &Bed {
        &self.bed
    }
}

/// Writes the configuration for `fake` with `table` lines and loads it.
pub fn write_config(dir: &Path, fake: &FakeFeishu, table: &str) -> Config {
    let lines = format!("domain = \"{}\"\n{table}", fake.base_url());
    platform_bed::write_config(dir, "feishu.work", &lines)
}

impl Harness {
    /// Starts the fake, stores credentials, starts the daemon.
    pub async fn start(setup: Setup) -> Harness {
        let fake = FakeFeishu::start(setup.fake).await.expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), &fake, &setup.table);
        Self::start_with(
            fake,
            dir,
            config,
            setup.credentials,
            setup.agent,
            setup.cards,
        )
        .await
    }

    /// Starts the daemon on a prepared fake and configuration.
    pub async fn start_with(
        fake: FakeFeishu,
        dir: tempfile::TempDir,
        config: Config,
        credentials: Option<Credentials>,
        agent: Arc<TestAgent>,
        cards: Option<Arc<dyn CardAnswerHandler>>,
    ) -> Harness {
        let creds = CredentialStore::Files(config.state_dir.join("credentials"));
        if let Some(c) = credentials {
            creds.save(ACCOUNT, &c).expect("save credentials");
        }
        let build: Builder = Arc::new(move |port| build_with(port, cards.clone()));
        let run = BedRun {
            build: Some(build),
            ..BedRun::agent(agent.clone())
        };
        let bed = Bed::start(config, ACCOUNT, run).await;
        Harness {
            fake,
            agent,
            bed,
            _dir: dir,
        }
    }

    /// The account's key.
    pub fn key(&self) -> AccountKey {
        AccountKey::new(Channel::Feishu, "work")
    }

    /// Waits until `cond` holds on the fake.
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeFeishu) -> bool) {
        assert!(
            self.fake.wait_until(WAIT, cond).await,
            "timed out waiting for {what}"
        );
    }

    /// Texts the bot sent (or replied) to `chat`, in order.
    pub fn texts_to(&self, chat: &str) -> Vec<String> {
        self.fake
            .sent()
            .into_iter()
            .filter(|s| s.chat_id == chat)
            .map(|s| text_of(&s.content))
            .collect()
    }

    /// Stops the daemon; nothing may be abandoned.
    pub async fn stop(self) {
        self.bed.stop().await;
    }
}

/// The readable text of a sent message (text, or the markdown of a post).
pub fn text_of(content: &serde_json::Value) -> String {
    if let Some(t) = content.get("text").and_then(|t| t.as_str()) {
        return t.to_string();
    }
    content
        .pointer("/zh_cn/content/0/0/text")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .to_string()
}

/// The p2p chat id the fake gives `open_id`.
pub fn p2p_chat(open_id: &str) -> String {
    format!("oc_p2p_{open_id}")
}
