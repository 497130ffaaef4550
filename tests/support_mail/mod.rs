//! A daemon with one mail account against a real Dovecot, an in-memory mail chat, a fake
//! OpenAI-compatible model and a manual clock.
#![allow(dead_code)]

mod model;
// The mail server harness is shared with `channels/mail`'s own tests.
#[path = "../../channels/mail/tests/support/mod.rs"]
mod server;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::TimeZone;
use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::clock::Clock;
use scv_bridge::config::{AccountKey, AccountSpec, Channel, Config, CredentialsMode};
use scv_bridge::conversation::{
    AccountLink, Attachment, ChatId, Conversation, Inbound, PlatformMsgId, ReplyContext, SenderId,
};
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::mail::MailEnv;
use scv_bridge::protocol::{ComponentHealth, MailCounts, Purpose, RemoteTools, Senders};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{
    BackoffPolicy, Component, ComponentFactory, HealthHandle, LifecyclePolicy,
};
use scv_bridge::testing::FakeFactory;
use tokio_util::sync::CancellationToken;

pub use model::FakeModel;
pub use server::MailServer;

/// Every log line of this test binary, at trace level (for the privacy check).
pub fn logs() -> String {
    let buf = log_buffer();
    String::from_utf8_lossy(&buf.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

fn log_buffer() -> &'static Arc<Mutex<Vec<u8>>> {
    static BUF: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    BUF.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let w = buf.clone();
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                std::iter::once("trace")
                    .chain(scv_bridge::mail::QUIET_PROTOCOL_LOGS.iter().copied())
                    .collect::<Vec<_>>()
                    .join(","),
            )
            .with_ansi(false)
            .with_writer(move || LogWriter(w.clone()))
            .try_init();
        buf
    })
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct NoAgent;

impl Agent for NoAgent {
    fn turn(
        &self,
        _r: TurnRequest,
        _c: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async { Err(AgentError::new(AgentErrorKind::Unavailable, "none")) })
    }
    fn reset<'a>(&'a self, _s: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Mail accounts are real; every other account is a fake that just stays connected.
struct TestFactory {
    platform: Arc<PlatformFactory>,
    fake: Arc<FakeFactory>,
}

impl ComponentFactory for TestFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        match spec.key.channel {
            Channel::Mail => self.platform.build(spec),
            _ => self.fake.build(spec),
        }
    }
}

/// Builds a chat agent over the daemon's store.
pub type AgentMaker = Arc<dyn Fn(&scv_bridge::store::Store) -> Arc<dyn Agent> + Send + Sync>;

/// The mail chat's account and its owner.
pub const CHAT: &str = "wechat:chat";
/// The owner's user id (the chat id of the mail chat).
pub const OWNER: &str = "owner";
/// The mail account.
pub const MAIL: &str = "mail:box";

/// One daemon with one mail account, restartable on the same state directory.
pub struct Harness {
    pub server: MailServer,
    pub dir: tempfile::TempDir,
    pub clock: Clock,
    pub chat: Arc<MemoryChannel>,
    pub model: FakeModel,
    pub extra: String,
    pub password: String,
    pub env: MailEnv,
    pub daemon: Option<RunningDaemon>,
    pub conv: Option<Arc<Conversation>>,
    /// The chat's purpose: `Mail` (a mail chat) or `Chat` (an ordinary chat with the agent).
    pub chat_purpose: Purpose,
    /// Builds the agent behind the chat over the daemon's store (by default one that is
    /// never reachable).
    pub agent: AgentMaker,
    /// Run the confirm service as the daemon does, asking in the chat (`notify`).
    pub with_confirm: bool,
    attachment: Option<Attachment>,
}

impl Harness {
    /// A mail server, a fake model and settings lines added to `[mail.box]`.
    pub async fn new(extra: &str) -> Harness {
        let _ = log_buffer();
        Harness::with_server(extra, &[]).await
    }

    /// Like [`Harness::new`], with extra `mailserver start` options and no log capture.
    pub async fn with_server(extra: &str, args: &[&str]) -> Harness {
        let mut all = vec!["--user", "test:secret"];
        all.extend_from_slice(args);
        let server = MailServer::start(&all);
        let model = FakeModel::start().await;
        let start = chrono::Utc
            .with_ymd_and_hms(2026, 3, 2, 2, 0, 0)
            .single()
            .expect("time");
        Harness {
            server,
            dir: tempfile::tempdir().expect("tempdir"),
            clock: Clock::manual_at(start),
            chat: MemoryChannel::new(4000, Duration::ZERO),
            model,
            extra: extra.to_string(),
            password: "secret".into(),
            env: MailEnv::default(),
            daemon: None,
            conv: None,
            chat_purpose: Purpose::Mail,
            agent: Arc::new(|_| Arc::new(NoAgent)),
            with_confirm: false,
            attachment: None,
        }
    }

    fn config(&self) -> Config {
        let d = self.dir.path();
        let text = format!(
            "state_dir = \"{state}\"\nsocket = \"{sock}\"\ncredentials = \"file\"\ntimezone = \"Asia/Shanghai\"\n{notify}\
             [agent]\nbase_url = \"{model}\"\nmodel = \"fake\"\n\
             [wechat.chat]\npurpose = \"{purpose}\"\n\
             [mail.box]\nimap_host = \"127.0.0.1\"\nimap_port = {imap}\ntls = \"none\"\nusername = \"test\"\n\
             smtp_host = \"127.0.0.1\"\nsmtp_port = {smtp}\nreport_to = \"wechat:chat\"\n{extra}\n",
            state = d.join("state").display(),
            sock = d.join("run/daemon.sock").display(),
            model = self.model.base_url(),
            imap = self.server.var("IMAP_PORT"),
            smtp = self.server.var("SMTP_PORT"),
            extra = self.extra,
            notify = if self.with_confirm {
                "notify = \"wechat:chat\"\n"
            } else {
                ""
            },
            purpose = match self.chat_purpose {
                Purpose::Mail => "mail",
                _ => "chat",
            },
        );
        let path = d.join("config.toml");
        std::fs::write(&path, text).expect("write config");
        Config::load(&path).expect("config")
    }

    /// Starts (or restarts) the daemon and attaches the in-memory mail chat.
    pub async fn start(&mut self) {
        let config = self.config();
        let store = CredentialStore::open(CredentialsMode::File, &self.dir.path().join("state"))
            .expect("credentials");
        store
            .save(
                MAIL,
                &Credentials::default()
                    .with("password", self.password.clone())
                    .with("address", "test@mail.test"),
            )
            .expect("save");
        store
            .save(CHAT, &Credentials::default().with("owner_id", OWNER))
            .expect("save");
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let s2 = slot.clone();
        let mut env = MailEnv::new(config.timezone);
        env.clock = self.clock.clone();
        env.hooks = self.env.hooks.clone();
        self.env = env.clone();
        let agent = config.agent.clone();
        let chat_agent = self.agent.clone();
        let policy = LifecyclePolicy {
            backoff: BackoffPolicy {
                base: Duration::from_millis(100),
                cap: Duration::from_millis(400),
            },
            stop_grace: Duration::from_secs(3),
            ..LifecyclePolicy::default()
        };
        let (with_confirm, clock) = (self.with_confirm, self.clock.clone());
        let d = daemon::start_with(
            config,
            move |creds, store, registry| {
                let (confirm, conv) = if with_confirm {
                    let (c, conv) = daemon::confirm_and_pipeline(
                        store,
                        creds,
                        clock,
                        registry,
                        chat_agent(store),
                    );
                    (Some(c), conv)
                } else {
                    (None, Conversation::new(store.clone(), chat_agent(store)))
                };
                *s2.lock().expect("slot") = Some(conv.clone());
                let factory: Arc<dyn ComponentFactory> = Arc::new(TestFactory {
                    platform: PlatformFactory::new(PlatformParts {
                        credentials: creds.clone(),
                        store: store.clone(),
                        conversation: conv.clone(),
                        agent,
                        mail: env,
                    }),
                    fake: FakeFactory::new(),
                });
                daemon::Wiring {
                    factory,
                    // Without the confirm service the pipeline stays the test's own, as before.
                    conversation: confirm.is_some().then_some(conv),
                    confirm,
                }
            },
            policy,
        )
        .await
        .expect("daemon start");
        let conv = slot.lock().expect("slot").clone().expect("conversation");
        let cell = d.core.registry().cell(CHAT).expect("chat cell");
        let link = AccountLink {
            account: AccountKey::parse(CHAT).expect("key"),
            senders: Senders::Owner,
            remote_tools: RemoteTools::None,
            approvals: Default::default(),
            purpose: self.chat_purpose,
            owner: Some(SenderId::new(OWNER)),
            workspace: None,
            media: Default::default(),
            channel_label: "WeChat",
            language: Default::default(),
            capabilities: Default::default(),
            health: HealthHandle::new(cell),
            sender: self.chat.clone(),
        };
        self.attachment = Some(conv.attach(link));
        self.conv = Some(conv);
        self.daemon = Some(d);
    }

    /// Stops the daemon (gracefully; a test stop point makes it an abrupt stop at that point).
    pub async fn stop(&mut self) {
        self.attachment = None;
        self.conv = None;
        if let Some(d) = self.daemon.take() {
            d.stop().await;
        }
    }

    /// The mail account's health.
    pub fn health(&self) -> Arc<ComponentHealth> {
        let d = self.daemon.as_ref().expect("running");
        d.core.registry().cell(MAIL).expect("mail cell").get()
    }

    /// The mail counters.
    pub fn counts(&self) -> MailCounts {
        self.health().mail.clone().unwrap_or_default()
    }

    /// Waits (on health changes, at most `secs`) until `f` holds for the mail account's health.
    pub async fn wait_health(&self, secs: u64, what: &str, f: impl Fn(&ComponentHealth) -> bool) {
        let d = self.daemon.as_ref().expect("running");
        let registry = d.core.registry();
        let r = tokio::time::timeout(Duration::from_secs(secs), async {
            loop {
                let cell = registry.cell(MAIL).expect("mail cell");
                let mut rx = cell.subscribe();
                if f(&cell.get()) {
                    return;
                }
                let _ = rx.changed().await;
            }
        })
        .await;
        assert!(
            r.is_ok(),
            "timed out waiting for {what}: {:?}",
            self.health()
        );
    }

    /// Waits until the mail chat got `n` messages.
    pub async fn wait_chat(&self, n: usize) {
        let r = tokio::time::timeout(Duration::from_secs(10), self.chat.wait_sent(n)).await;
        assert!(
            r.is_ok(),
            "timed out waiting for {n} chat messages: {:?}",
            self.chat.texts(OWNER)
        );
    }

    /// The owner writes `text` in the mail chat.
    pub async fn owner_says(&self, id: &str, text: &str) {
        let conv = self.conv.as_ref().expect("running");
        conv.accept(vec![Inbound {
            account: AccountKey::parse(CHAT).expect("key"),
            chat: ChatId::new(OWNER),
            sender: SenderId::new(OWNER),
            msg_id: PlatformMsgId::new(id),
            text: text.to_string(),
            at_unix_ms: 0,
            reply: ReplyContext::default(),
            media: Vec::new(),
        }])
        .await
        .expect("accept");
    }

    /// A plain mail from a person.
    pub async fn mail(&self, subject: &str, body: &str) {
        self.server.deliver("test@mail.test", subject, body).await;
    }

    /// A newsletter (List-Unsubscribe, Precedence: bulk).
    pub async fn bulk(&self, subject: &str, body: &str) {
        let raw = format!(
            "From: News <news@example.com>\r\nTo: test@mail.test\r\nSubject: {subject}\r\n\
             Message-ID: <{}@example.com>\r\nList-Unsubscribe: <mailto:u@example.com>\r\n\
             Precedence: bulk\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n",
            rand_id()
        );
        self.server.deliver_raw("test@mail.test", raw).await;
    }

    /// Texts the mail chat received.
    pub fn digests(&self) -> Vec<String> {
        self.chat.texts(OWNER)
    }

    /// The state directory (the store lives there).
    pub fn state_dir(&self) -> &Path {
        self.dir.path()
    }
}

fn rand_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
