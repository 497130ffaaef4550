//! The mail area, beside conversation and confirm: the account component that watches one
//! mailbox, claims and triages new mail ([`triage`]) and sends digests to the account's mail chat
//! (`report_to`). It is built from its account's port like every chat platform
//! (`adapters::platform`), and keeps its own tables (claims, decisions, digests, drafted
//! replies), which the port lends it as [`crate::port::Tables`].
//!
//! - `watch`: the IMAP loop (baseline, claim, decide, IDLE).
//! - `report`: digests (build, send once, the daily cap) and the health counters.
//! - `chat`: the owner's commands in the mail chat (`/digest`, `/reply N`) and reply confirmation.

mod chat;
mod crash_points;
mod failure;
mod judge;
pub mod probe;
mod report;
pub mod triage;
mod watch;
use crash_points::CrashPoint;
pub use crash_points::TestHooks;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use chrono_tz::Tz;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_mail::{ImapSettings, MailError, Password, Security, SmtpSettings};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use chat::{MailChatRouter, ReplyConfirmation, TextConfirmation};

use crate::clock::Clock;
use crate::config::{AccountKey, AccountSpec, AgentConfig, ChannelSettings, MailSettings, MailTls};
use crate::failure::{Action, general};
use crate::mail::triage::model::{OpenAiTriage, TriageModel};
use crate::port::{AccountPort, Owners, Relay, Tables};
use crate::secrets::Credentials;
use crate::store::StoreError;
use crate::supervisor::{Component, ComponentError, HealthHandle};

/// What every mail account shares, set in the ports by the composition root
/// (`adapters::PlatformParts::ports`) and found by each account in its own port
/// (`AccountPort::shared`): the mail environment, and the agent configuration the triage model
/// is made from at each build (so a rebuilt account reads the model key anew). Only mail names
/// this type, so no other platform reaches the agent configuration through it.
#[derive(Clone)]
pub struct MailShared {
    env: MailEnv,
    agent: AgentConfig,
}

impl MailShared {
    /// What mail accounts built from these ports share.
    pub fn new(env: MailEnv, agent: AgentConfig) -> Self {
        MailShared { env, agent }
    }
}

/// What the port lends a mail account beyond its own login, cut from it once at build. The
/// names are the ones the digests (`report.rs`) read.
#[derive(Clone)]
struct Lent {
    /// Its own tables: claims, decisions, digests, drafted replies.
    store: Tables,
    /// The pipeline of the account its digests and mail-chat answers go out through.
    conversation: Relay,
    /// Who owns the account `report_to` names (the owner's chat is the mail chat); owners only,
    /// never another login's secrets.
    credentials: Owners,
}

/// Log directives a daemon must add to its filter: async-imap and lettre log raw protocol
/// lines (headers and bodies) at trace/debug level, which would put mail text in the logs.
pub const QUIET_PROTOCOL_LOGS: &[&str] = &["async_imap=info", "lettre=info"];

/// Minutes between digests when the account sets none.
const DEFAULT_INTERVAL_MINUTES: u64 = 60;
/// Digests a day when the account sets no cap.
const DEFAULT_MAX_DIGESTS: u32 = 12;

/// What every mail account shares: the time zone, the clock, the mail-chat router.
#[derive(Clone)]
pub struct MailEnv {
    /// The configured `timezone`: days and budgets reset at its midnight (machine zone if none).
    pub timezone: Option<Tz>,
    /// Where "now" comes from (tests use a manual clock).
    pub clock: Clock,
    /// Routes the owner's mail-chat messages to the mail accounts reporting there.
    pub router: Arc<MailChatRouter>,
    /// A model to use instead of the agent endpoint (benchmarks); `None` uses `[agent]`.
    pub model: Option<Arc<dyn TriageModel>>,
    /// Crash points for tests.
    pub hooks: Arc<TestHooks>,
}

impl MailEnv {
    /// The environment of a running daemon: system clock, fresh router.
    pub fn new(timezone: Option<Tz>) -> Self {
        MailEnv {
            timezone,
            clock: Clock::system(),
            router: MailChatRouter::new(),
            model: None,
            hooks: Arc::default(),
        }
    }
}

impl Default for MailEnv {
    fn default() -> Self {
        MailEnv::new(None)
    }
}

/// One mail account's settings and shared state, used by its loops and by the chat router.
pub(crate) struct Account {
    key: AccountKey,
    id: String,
    settings: MailSettings,
    report_to: Option<AccountKey>,
    /// The language of its digests (`auto`: the mail chat's remembered one).
    language: crate::words::Language,
    /// Its port: its own login (the password, the reply address).
    port: AccountPort,
    ctx: Lent,
    env: MailEnv,
    model: Option<Arc<dyn TriageModel>>,
    budget: u64,
    interval: chrono::Duration,
    max_digests: u32,
    /// Serializes digest building between the timer and `/digest`.
    digest_lock: tokio::sync::Mutex<()>,
    /// New report items (or `/digest`) wake the digest loop.
    wake: Notify,
    last_check: AtomicU64,
}

/// The mail platform's name for people (its `adapters::Platform` value says it too).
pub const LABEL: &str = "mail";

/// The stored login's field holding the mailbox password (written by mail's login steps).
pub const PASSWORD_FIELD: &str = "password";

/// The component for one mail account, from its port.
pub fn build(port: AccountPort) -> Arc<dyn Component> {
    let spec = port.spec().clone();
    // Ports without mail's shared part are a test's own (the daemon's always carry it); an
    // account built from them says it cannot run rather than run without its router.
    let (ChannelSettings::Mail(settings), Some(shared)) =
        (&spec.settings, port.shared::<MailShared>())
    else {
        return crate::port::unavailable(port, LABEL);
    };
    let env = shared.env.clone();
    let model = env.model.clone().or_else(|| {
        OpenAiTriage::from_config(&shared.agent).map(|m| Arc::new(m) as Arc<dyn TriageModel>)
    });
    let ctx = Lent {
        store: port.tables().clone(),
        conversation: port.relay(),
        credentials: port.owners(),
    };
    let account = Arc::new(Account {
        key: spec.key.clone(),
        id: spec.key.to_string(),
        settings: settings.clone(),
        report_to: settings.report_to.clone(),
        language: spec.language,
        port,
        ctx,
        env,
        model,
        budget: settings
            .token_budget
            .unwrap_or(crate::mail::triage::budget::DEFAULT_BUDGET),
        interval: chrono::Duration::minutes(
            settings
                .digest_interval_minutes
                .unwrap_or(DEFAULT_INTERVAL_MINUTES)
                .clamp(1, 7 * 24 * 60) as i64,
        ),
        max_digests: settings.max_digests_per_day.unwrap_or(DEFAULT_MAX_DIGESTS),
        digest_lock: tokio::sync::Mutex::new(()),
        wake: Notify::new(),
        last_check: AtomicU64::new(0),
    });
    Arc::new(MailComponent { account, spec })
}

/// The supervised component: the IMAP loop and the digest loop of one account.
struct MailComponent {
    account: Arc<Account>,
    spec: AccountSpec,
}

impl Component for MailComponent {
    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        async move {
            let acct = self.account.clone();
            acct.env.router.seed_pending(&acct).await;
            acct.env.router.register(&acct.ctx.conversation, &acct);
            let stop = cancel.child_token();
            let digests = tokio::spawn(report::digest_loop(
                acct.clone(),
                health.clone(),
                stop.clone(),
            ));
            let result = watch::watch(&acct, &self.spec, &health, &cancel).await;
            stop.cancel();
            let _ = digests.await;
            acct.refresh_health(&health).await;
            result
        }
        .boxed()
    }
}

impl Account {
    /// The watched mailbox.
    fn mailbox(&self) -> String {
        self.settings
            .mailbox
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| "INBOX".to_string())
    }

    /// The account's stored login, through its port (a missing or unreadable one is fatal
    /// with the login command, said by the port as for every platform).
    async fn login(&self) -> Result<Credentials, ComponentError> {
        self.port.login().await
    }

    /// The account's IMAP password, from its stored login.
    async fn password(&self) -> Result<Password, ComponentError> {
        match self.login().await?.get(PASSWORD_FIELD) {
            Some(p) => Ok(Password::new(p.expose())),
            None => Err(ComponentError::fatal(
                failure::NO_PASSWORD,
                "no mail password stored",
                Action::Relogin(self.key.clone()),
            )),
        }
    }

    /// The address replies are sent from: the stored `address`, else the login if it is one.
    async fn own_address(&self) -> String {
        let stored = self.login().await.ok();
        let stored = stored.and_then(|c| c.get("address").map(|a| a.expose().to_string()));
        stored.unwrap_or_else(|| own_address(&self.settings))
    }

    fn imap_settings(&self, password: Password) -> ImapSettings {
        imap_settings(&self.settings, password)
    }

    fn smtp_settings(&self, password: Password) -> Option<SmtpSettings> {
        smtp_settings(&self.settings, password)
    }

    /// Maps a mail error to what the supervisor should do: the account's table.
    fn error(&self, spec: &AccountSpec, e: &MailError) -> ComponentError {
        failure::failure(e, &spec.key)
    }
}

/// A store failure is transient: the next run retries from what was committed.
fn store_error(e: StoreError) -> ComponentError {
    ComponentError::transient(general::STORE, e.to_string())
}

fn security(tls: MailTls) -> Security {
    match tls {
        MailTls::Implicit => Security::Tls,
        MailTls::Starttls => Security::StartTls,
        MailTls::None => Security::Plain,
    }
}

/// The reply server's settings (`None` without `smtp_host`: replies are off); doctor's probe
/// and the account build them the same way.
pub fn smtp_settings(s: &MailSettings, password: Password) -> Option<SmtpSettings> {
    let host = s.smtp_host.clone()?;
    let tls = s.smtp_tls.unwrap_or(s.tls);
    let port = s.smtp_port.unwrap_or(match tls {
        MailTls::Implicit => 465,
        MailTls::Starttls => 587,
        MailTls::None => 25,
    });
    let mut out = SmtpSettings::new(
        host,
        port,
        security(tls),
        Some((s.username.clone(), password)),
    );
    out.tls_ca = s.tls_ca.as_deref().map(crate::config::expand_tilde);
    Some(out)
}

/// IMAP settings for a mail account.
pub fn imap_settings(s: &MailSettings, password: Password) -> ImapSettings {
    let port = s.imap_port.unwrap_or(match s.tls {
        MailTls::Implicit => 993,
        _ => 143,
    });
    let mut out = ImapSettings::new(
        s.imap_host.clone(),
        port,
        security(s.tls),
        s.username.clone(),
        password,
    );
    out.tls_ca = s.tls_ca.as_deref().map(crate::config::expand_tilde);
    out
}

/// The account's address when none is stored: the login if it looks like one.
fn own_address(s: &MailSettings) -> String {
    if s.username.contains('@') {
        s.username.clone()
    } else {
        format!("{}@{}", s.username, s.imap_host)
    }
}

/// How long to wait before re-checking without news: IDLE refreshes itself inside this.
const WAIT: Duration = Duration::from_secs(600);
