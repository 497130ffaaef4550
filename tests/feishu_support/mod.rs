//! The daemon with a Feishu account, against the fake Feishu over real sockets.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::feishu::{CardAnswerHandler, CardClick, ClickOutcome, build_with};
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AccountKey, AccountSpec, Channel, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::{ComponentHealth, ComponentState};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_feishu::card::{Resolution, YesNoCard};
use scv_feishu::fake::{FakeConfig, FakeFeishu};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(10);

/// The account every test runs.
pub const ACCOUNT: &str = "feishu:work";

/// The owner the fake's default config names.
pub const OWNER: &str = "ou_owner";

/// An agent that echoes, optionally holding every turn until the gate opens.
pub struct TestAgent {
    gate: watch::Sender<bool>,
    /// Turns started, in a watch so a test wakes on a turn starting rather than on a clock.
    turns: watch::Sender<usize>,
    attachments: Mutex<Vec<scv_bridge::agent::Attachment>>,
}

impl TestAgent {
    /// Answers at once.
    pub fn open() -> Arc<Self> {
        Arc::new(TestAgent {
            gate: watch::channel(true).0,
            turns: watch::channel(0).0,
            attachments: Mutex::default(),
        })
    }

    /// Holds every turn until [`TestAgent::release`].
    pub fn gated() -> Arc<Self> {
        Arc::new(TestAgent {
            gate: watch::channel(false).0,
            turns: watch::channel(0).0,
            attachments: Mutex::default(),
        })
    }

    /// Lets held and future turns finish.
    pub fn release(&self) {
        self.gate.send_replace(true);
    }

    /// Turns started so far.
    pub fn turns(&self) -> usize {
        *self.turns.borrow()
    }

    /// Waits until `n` turns have started; false if [`WAIT`] passes first.
    pub async fn wait_turns(&self, n: usize) -> bool {
        let mut turns = self.turns.subscribe();
        tokio::time::timeout(WAIT, turns.wait_for(|t| *t >= n))
            .await
            .is_ok()
    }

    /// Every file the turns were handed, in order.
    pub fn attachments(&self) -> Vec<scv_bridge::agent::Attachment> {
        self.attachments
            .lock()
            .map(|a| a.clone())
            .unwrap_or_default()
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
            Ok(TurnOutput {
                text: format!("echo: {}", req.prompt),
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

/// Builds Feishu components with an optional card handler.
struct Factory {
    ctx: PlatformParts,
    cards: Option<Arc<dyn CardAnswerHandler>>,
}

impl ComponentFactory for Factory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        build_with(self.ctx.ports().port(spec), self.cards.clone())
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
            agent: TestAgent::open(),
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

/// A running daemon with one Feishu account, its fake, and handles to look inside.
pub struct Harness {
    /// The fake Feishu.
    pub fake: FakeFeishu,
    /// The daemon under test.
    pub daemon: RunningDaemon,
    /// The agent answering.
    pub agent: Arc<TestAgent>,
    /// The pipeline (to queue proactive messages and cards).
    pub conversation: Arc<Conversation>,
    /// Where the account's credentials are.
    pub credentials: CredentialStore,
    /// The loaded configuration.
    pub config: Config,
    _dir: tempfile::TempDir,
}

/// Writes the configuration for `fake` with `table` lines and loads it.
pub fn write_config(dir: &Path, fake: &FakeFeishu, table: &str) -> Config {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[feishu.work]\ndomain = \"{}\"\n{table}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
        fake.base_url(),
    );
    std::fs::write(&path, text).expect("write config");
    Config::load(&path).expect("config")
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
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let (agent_dyn, slot2, agent_config): (Arc<dyn Agent>, _, _) =
            (agent.clone(), slot.clone(), config.agent.clone());
        let make =
            move |c: &CredentialStore, s: &scv_bridge::store::Store| -> Arc<dyn ComponentFactory> {
                let conversation = Conversation::new(s.clone(), agent_dyn);
                if let Ok(mut slot) = slot2.lock() {
                    *slot = Some(conversation.clone());
                }
                Arc::new(Factory {
                    ctx: PlatformParts {
                        credentials: c.clone(),
                        store: s.clone(),
                        conversation,
                        agent: agent_config,
                        mail: Default::default(),
                    },
                    cards,
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
            credentials: creds,
            config,
            _dir: dir,
        }
    }

    /// The account's key.
    pub fn key(&self) -> AccountKey {
        AccountKey::new(Channel::Feishu, "work")
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
    pub async fn until(&self, what: &str, cond: impl Fn(&FakeFeishu) -> bool) {
        assert!(
            self.fake.wait_until(WAIT, cond).await,
            "timed out waiting for {what}"
        );
    }

    /// Waits until `cond` holds on the account's health, woken by each change of its cell.
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

    /// Waits until the pipeline is quiet, to show that something does NOT happen: call it once
    /// the platform saw the last input handled (its ACK, or the HTTP answer of a callback),
    /// because the adapter journals before it ACKs, and whatever is journaled holds the barrier
    /// until its turn and sends are done.
    pub async fn settle(&self) {
        let quiet = tokio::time::timeout(WAIT, self.conversation.quiescent()).await;
        assert!(quiet.is_ok(), "the pipeline never went quiet");
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
        let report = self.daemon.stop().await;
        assert!(
            report.abandoned.is_empty(),
            "abandoned: {:?}",
            report.abandoned
        );
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
