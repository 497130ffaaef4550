//! The daemon: configuration, store, credentials, supervisor and control socket, wired together.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{AccountKey, Config};
use crate::confirm::{
    CapabilityLookup, Clock, ConfirmError, ConfirmParts, ConfirmService, ConfirmSettings,
};
use crate::control::{self, CommandError, Handler};
use crate::conversation::{Conversation, Hooks, Outbox};
use crate::protocol::{DaemonCommand, DaemonStatus, ErrorCode};
use crate::secrets::CredentialStore;
use crate::store::{Store, StoreGuard};
use crate::supervisor::{
    ComponentFactory, HealthRegistry, LifecyclePolicy, ReloadReport, Supervisor,
};

mod accounts;
mod agent_reload;
pub mod console_keys;
mod console_link;
mod lock;
mod owner;
mod reload;
mod same_bot;
mod speech_reload;

pub use accounts::ChannelSet;
pub use console_keys::ConsoleKeys;

/// The state every control command works on.
pub struct Core {
    config: Mutex<Config>,
    store: Store,
    credentials: CredentialStore,
    supervisor: Supervisor,
    conversation: Option<Arc<Conversation>>,
    confirm: Option<Arc<ConfirmService>>,
    /// `send` to the owner and its scheduler (with the pipeline).
    owner: Option<Arc<crate::owner::OwnerService>>,
    /// The web console's links and sessions (the console serves them; `console_link` makes one).
    console_keys: ConsoleKeys,
    /// Where the console is served, set once it listens (`console_listen`).
    console_listen: std::sync::OnceLock<std::net::SocketAddr>,
}

/// What the daemon runs: the component factory and, when accounts chat, the conversation pipeline.
pub struct Wiring {
    /// Builds each account's component.
    pub factory: Arc<dyn ComponentFactory>,
    /// The pipeline the components feed (for `/status`, confirm questions and shutdown).
    pub conversation: Option<Arc<Conversation>>,
    /// Owner questions (`confirm_ask` / `confirm_status`); without it they answer `unsupported`.
    pub confirm: Option<Arc<ConfirmService>>,
}

impl Wiring {
    /// Components only, no conversation pipeline (tests of the lifecycle).
    pub fn components(factory: Arc<dyn ComponentFactory>) -> Self {
        Wiring {
            factory,
            conversation: None,
            confirm: None,
        }
    }
}

impl Core {
    /// The status report: one health entry per configured account, sorted by id.
    pub fn status(&self) -> DaemonStatus {
        let mut status = self.status_with(self.supervisor.registry().snapshot());
        status.agent = self.agent_health();
        status.speech = self.speech_health();
        status.agents = self.named_agents_health();
        status.console = self.console_status(None);
        status.deliveries = self.deliveries();
        status
    }

    /// Each named agent's status row (`[agents.NAME]`), when the daemon runs a pipeline.
    fn named_agents_health(
        &self,
    ) -> std::collections::BTreeMap<String, crate::protocol::AgentHealth> {
        let conversation = self.conversation.as_ref();
        conversation
            .map(|c| c.named_agents_health())
            .unwrap_or_default()
    }

    /// The `deliveries` object of the status: proactive messages by state, read from memory.
    fn deliveries(&self) -> Option<Box<crate::protocol::DeliveryCounts>> {
        self.conversation
            .as_ref()
            .map(|c| Box::new(c.outbox().deliveries()))
    }

    /// The `agent` object of the status, when the daemon runs a conversation pipeline.
    fn agent_health(&self) -> Option<Box<crate::protocol::AgentHealth>> {
        self.conversation
            .as_ref()
            .map(|c| Box::new(c.agent_health()))
    }

    fn status_with(&self, components: Vec<crate::protocol::ComponentHealth>) -> DaemonStatus {
        DaemonStatus {
            components,
            ..DaemonStatus::new(env!("CARGO_PKG_VERSION"), std::process::id())
        }
    }

    /// The health registry (read lock-free).
    pub fn registry(&self) -> Arc<crate::supervisor::HealthRegistry> {
        self.supervisor.registry()
    }

    /// The conversation pipeline, when the daemon runs one.
    pub fn conversation(&self) -> Option<&Arc<Conversation>> {
        self.conversation.as_ref()
    }

    /// The confirm service, when the daemon runs one.
    pub fn confirm(&self) -> Option<&Arc<ConfirmService>> {
        self.confirm.as_ref()
    }

    /// Answers `confirm_ask` / `confirm_status`: a status without components, carrying the question.
    async fn confirm_command(&self, command: DaemonCommand) -> Result<DaemonStatus, CommandError> {
        let svc = self.confirm.as_ref().ok_or_else(|| {
            CommandError::new(
                ErrorCode::Unsupported,
                "confirm questions need the conversation pipeline, which this daemon does not run",
            )
        })?;
        let info = match command {
            DaemonCommand::ConfirmAsk {
                question,
                parent,
                timeout_seconds,
            } => svc.ask(&question, parent.as_deref(), timeout_seconds).await,
            DaemonCommand::ConfirmStatus { id } => svc.status(&id).await,
            _ => return Err(internal("not a confirm command")),
        }
        .map_err(|e| match e {
            ConfirmError::InvalidRequest(m) => CommandError::new(ErrorCode::InvalidRequest, m),
            ConfirmError::NotFound(id) => {
                CommandError::new(ErrorCode::NotFound, format!("no question {id}"))
            }
            ConfirmError::Internal(m) => CommandError::new(ErrorCode::Internal, m),
        })?;
        let mut status = self.status_with(Vec::new());
        status.confirm = Some(info);
        Ok(status)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The credential store.
    pub fn credentials(&self) -> &CredentialStore {
        &self.credentials
    }

    /// Applies `channel_logout`: removes credentials and every stored row, then restarts it (it will report `failed`).
    pub async fn channel_logout(
        &self,
        channel: &str,
        account: &str,
    ) -> Result<ReloadReport, CommandError> {
        let config = self.config.lock().await;
        let key = account_key(channel, account)?;
        let id = key.to_string();
        let creds = self.credentials.clone();
        let id2 = id.clone();
        tokio::task::spawn_blocking(move || creds.delete(&id2))
            .await
            .map_err(|e| internal(e.to_string()))?
            .map_err(|e| CommandError::new(ErrorCode::Internal, e.to_string()))?;
        self.store.delete_account(&id).await.map_err(internal)?;
        tracing::info!(account = %id, "logged out: credentials and state removed");
        self.reconcile(&config, &[key]).await
    }

    /// Brings the supervisor in line with `config`, the stored overrides and the stored credentials.
    async fn reconcile(
        &self,
        config: &Config,
        force: &[AccountKey],
    ) -> Result<ReloadReport, CommandError> {
        let desired = self.desired(config).await?;
        let report = self.supervisor.apply(desired, force).await;
        self.show_overrides(config).await;
        self.show_same_bot(config).await;
        Ok(report)
    }
}

impl Handler for Core {
    fn status_line(&self, request_id: &str) -> Option<String> {
        let mut head = self.status_with(Vec::new());
        head.agent = self.agent_health();
        head.speech = self.speech_health();
        head.agents = self.named_agents_health();
        head.console = self.console_status(None);
        head.deliveries = self.deliveries();
        let components = self.supervisor.registry().snapshot_json();
        Some(crate::protocol::status_line(request_id, &head, &components))
    }

    async fn handle(&self, command: DaemonCommand) -> Result<DaemonStatus, CommandError> {
        let report = match command {
            DaemonCommand::Status => None,
            DaemonCommand::Reload => Some(self.reload().await?),
            DaemonCommand::ChannelSet {
                channel,
                account,
                enabled,
                workspace,
                remote_tools,
                senders,
                purpose,
            } => {
                let cmd = ChannelSet {
                    channel,
                    account,
                    enabled,
                    workspace,
                    senders,
                    remote_tools,
                    purpose,
                };
                Some(self.channel_set(cmd).await?)
            }
            DaemonCommand::ChannelReset { channel, account } => {
                Some(self.channel_reset(&channel, &account).await?)
            }
            DaemonCommand::ChannelLogout { channel, account } => {
                Some(self.channel_logout(&channel, &account).await?)
            }
            c @ (DaemonCommand::ConfirmAsk { .. } | DaemonCommand::ConfirmStatus { .. }) => {
                return self.confirm_command(c).await;
            }
            DaemonCommand::ConsoleLink => return self.console_link(),
            c @ (DaemonCommand::Send { .. }
            | DaemonCommand::SendStatus { .. }
            | DaemonCommand::SendCancel { .. }) => return self.owner_command(c).await,
            DaemonCommand::Delegations
            | DaemonCommand::DelegationKill
            | DaemonCommand::RestartWhenIdle => {
                return Err(CommandError::new(
                    ErrorCode::Unsupported,
                    "delegations are not served by the bridge",
                ));
            }
            DaemonCommand::Other => {
                return Err(CommandError::new(
                    ErrorCode::Unsupported,
                    "project commands are not served by the bridge",
                ));
            }
        };
        let mut status = self.status();
        status.reload = report.map(|r| Box::new(summary(r)));
        Ok(status)
    }
}

/// The wire form of what a reconcile did.
fn summary(r: ReloadReport) -> crate::protocol::ReloadSummary {
    crate::protocol::ReloadSummary {
        started: r.started,
        stopped: r.stopped,
        restarted: r.restarted,
        abandoned: r.abandoned,
    }
}

fn internal(e: impl ToString) -> CommandError {
    CommandError::new(ErrorCode::Internal, e.to_string())
}

fn account_key(channel: &str, account: &str) -> Result<AccountKey, CommandError> {
    AccountKey::parse(&format!("{channel}:{account}")).ok_or_else(|| {
        CommandError::new(
            ErrorCode::InvalidRequest,
            format!(
                "expected channel {} and an account name of letters, digits, '-' or '_', found '{channel}:{account}'",
                crate::config::Channel::ALL.map(|c| c.as_str()).join(", ")
            ),
        )
    })
}

/// The confirm service and the pipeline it plugs into, built in that order as the daemon wires
/// them: the service over the outbox alone (with every account's capabilities from the
/// adapters and `registry`), then the pipeline with the service as its answer interceptor,
/// approver and delivery observer, and `/status`'s second line from `registry`.
pub fn confirm_and_pipeline(
    store: &Store,
    credentials: &CredentialStore,
    clock: Clock,
    registry: &Arc<HealthRegistry>,
    agent: Arc<dyn crate::agent::Agent>,
) -> (Arc<ConfirmService>, Arc<Conversation>) {
    let outbox = Outbox::new(store.clone());
    let capabilities: CapabilityLookup =
        Arc::new(|account| crate::adapters::capabilities(account.channel));
    let confirm = ConfirmService::new(ConfirmParts {
        store: store.clone(),
        outbox: outbox.clone(),
        credentials: credentials.clone(),
        clock,
        capabilities,
        registry: registry.clone(),
    });
    let hooks = Hooks {
        status_line: Some(status_line(registry)),
        ..confirm.hooks()
    };
    (confirm, Conversation::build(outbox, agent, hooks))
}

/// `/status`'s second line for a pipeline built before the daemon: the bridge summary of
/// `registry` (the one [`start_with`] hands its `wire`) when asked, in the chat's language.
pub fn status_line(
    registry: &Arc<HealthRegistry>,
) -> Arc<dyn Fn() -> crate::words::Bridge + Send + Sync> {
    let registry = registry.clone();
    Arc::new(move || crate::words::Bridge::of(&registry.snapshot()))
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Another daemon holds this state directory.
    #[error("another scv-bridge daemon is already running with state directory {0}; stop it first")]
    Locked(PathBuf),
    /// The state directory could not be prepared.
    #[error("cannot prepare the state directory {path}: {source}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// No credential store works.
    #[error(transparent)]
    Secrets(#[from] crate::secrets::SecretsError),
    /// The control socket could not be bound.
    #[error(transparent)]
    Bind(#[from] control::BindError),
    /// The initial reconcile failed.
    #[error("cannot start the accounts: {0}")]
    Start(String),
}

/// A running daemon; `shutdown` then `wait` stops it.
pub struct RunningDaemon {
    /// The control socket.
    pub socket: PathBuf,
    /// Cancelling this stops the daemon.
    pub shutdown: CancellationToken,
    /// The shared state (for tests and in-process callers).
    pub core: Arc<Core>,
    task: JoinHandle<ReloadReport>,
}

impl RunningDaemon {
    /// Waits until the daemon has stopped every account, flushed the store and removed its socket.
    pub async fn wait(self) -> ReloadReport {
        self.task.await.unwrap_or_default()
    }

    /// Stops the daemon and waits for it.
    pub async fn stop(self) -> ReloadReport {
        self.shutdown.cancel();
        self.wait().await
    }
}

/// Starts the daemon: takes the state directory's lock, opens the store, binds the socket, starts the accounts.
///
/// `make_factory` builds the component factory from the opened credential store and store.
pub async fn start<F>(
    config: Config,
    make_factory: F,
    policy: LifecyclePolicy,
) -> Result<RunningDaemon, StartError>
where
    F: FnOnce(&CredentialStore, &Store) -> Arc<dyn ComponentFactory>,
{
    start_with(
        config,
        |c, s, _| Wiring::components(make_factory(c, s)),
        policy,
    )
    .await
}

/// Starts the daemon with its full wiring (components and conversation pipeline); see [`start`].
///
/// `wire` gets the credential store, the store and the health registry the accounts will
/// report into (made first, so what it builds can be given everything at construction).
pub async fn start_with<F>(
    config: Config,
    wire: F,
    policy: LifecyclePolicy,
) -> Result<RunningDaemon, StartError>
where
    F: FnOnce(&CredentialStore, &Store, &Arc<HealthRegistry>) -> Wiring,
{
    let lock = lock::lock_state_dir(&config.state_dir)?;
    let (store, store_guard) = Store::open(&config.state_dir.join("state.db"))?;
    let credentials = {
        let (mode, dir) = (config.credentials, config.state_dir.clone());
        tokio::task::spawn_blocking(move || CredentialStore::open(mode, &dir))
            .await
            .map_err(|e| StartError::Start(e.to_string()))??
    };
    let listener = control::bind(&config.socket).await?;
    let socket = config.socket.clone();
    let registry = Arc::new(HealthRegistry::default());
    let wiring = wire(&credentials, &store, &registry);
    // The daemon's one clock is the confirm service's (a test's paused or hand-moved one).
    let clock = wiring
        .confirm
        .as_ref()
        .map_or_else(crate::clock::Clock::system, |c| c.clock().clone());
    let owner = owner::build(
        &config,
        &store,
        &credentials,
        &registry,
        wiring.conversation.as_ref(),
        wiring.confirm.as_ref(),
        clock.clone(),
    );
    let core = Arc::new(Core {
        config: Mutex::new(config.clone()),
        store,
        credentials,
        supervisor: Supervisor::with_registry(wiring.factory, policy, registry),
        conversation: wiring.conversation,
        confirm: wiring.confirm,
        owner,
        console_keys: ConsoleKeys::new(clock),
        console_listen: std::sync::OnceLock::new(),
    });
    core.apply_speech(&config);
    if let Some(c) = &core.confirm {
        // Before the accounts start, so a replayed or early answer finds its question.
        c.set_routes(config.owner.routes.clone());
        c.start(ConfirmSettings::from_config(&config)).await?;
    }
    if let Some(c) = &core.conversation
        && let Err(e) = c.outbox().refresh_deliveries().await
    {
        tracing::warn!(error = %e, "cannot count the outbox's delivery states");
    }
    core.reconcile(&config, &[])
        .await
        .map_err(|e| StartError::Start(e.message))?;
    if let Some(o) = &core.owner {
        o.start();
        owner::offer_tools(o, core.confirm.as_ref(), core.conversation.as_ref()).await;
    }
    tracing::info!(socket = %socket.display(), accounts = config.accounts.len(), "scv-bridge is running");
    let shutdown = CancellationToken::new();
    if let Some(addr) = config.metrics_listen {
        let c = core.clone();
        let page = move || -> futures_util::future::BoxFuture<'static, String> {
            let c = c.clone();
            Box::pin(async move {
                let mut snap = crate::metrics::Snapshot {
                    components: c.supervisor.registry().snapshot(),
                    ..Default::default()
                };
                if let Some(v) = &c.conversation {
                    snap.counters = v.stats().snapshot();
                    snap.agent = Some(v.agent_health());
                    snap.deliveries = Some(v.outbox().deliveries());
                    snap.now_unix_seconds = crate::supervisor::unix_now();
                    match v.outbox_depth().await {
                        Ok(d) => snap.outbox_depth = d,
                        Err(e) => tracing::warn!(error = %e, "cannot read the outbox depth"),
                    }
                }
                if let Some(confirm) = &c.confirm {
                    snap.confirm = confirm.outcome_counts().await;
                }
                crate::metrics::render(&snap)
            })
        };
        let stop = shutdown.clone();
        tokio::spawn(async move {
            if let Err(e) = crate::metrics::serve(addr, page, stop).await {
                tracing::error!(%addr, error = %e, "cannot serve metrics");
            }
        });
    }
    crate::sd_notify::notify("READY=1");
    if let Some(every) = crate::sd_notify::watchdog_interval() {
        tokio::spawn(crate::sd_notify::feed_watchdog(
            core.store.clone(),
            every,
            shutdown.clone(),
        ));
    }
    let task = tokio::spawn(serve_until_shutdown(
        core.clone(),
        listener,
        shutdown.clone(),
        store_guard,
        lock,
        socket.clone(),
    ));
    Ok(RunningDaemon {
        socket,
        shutdown,
        core,
        task,
    })
}

async fn serve_until_shutdown(
    core: Arc<Core>,
    listener: tokio::net::UnixListener,
    shutdown: CancellationToken,
    store_guard: StoreGuard,
    lock: std::fs::File,
    socket: PathBuf,
) -> ReloadReport {
    control::serve(listener, core.clone(), shutdown).await;
    crate::sd_notify::notify("STOPPING=1");
    if let Some(c) = &core.confirm {
        c.stop();
    }
    if let Some(o) = &core.owner {
        o.stop();
    }
    let report = core.supervisor.shutdown().await;
    if let Some(conv) = &core.conversation {
        conv.close(core.supervisor.stop_grace()).await;
    }
    let _ = tokio::task::spawn_blocking(move || store_guard.close()).await;
    let _ = std::fs::remove_file(&socket);
    drop(lock);
    tracing::info!(abandoned = ?report.abandoned, "scv-bridge stopped");
    report
}
