//! The `acp` backend: an Agent Client Protocol agent (codex-acp, claude-agent-acp,
//! `gemini --experimental-acp`) as a child process speaking JSON-RPC over stdio.
//!
//! One agent process per ACCOUNT, one ACP session per chat in it: ACP agents hold many sessions
//! per process (codex and claude both do), and one process per chat would cost a node runtime
//! (~100 MB) per chat. All chats of an account share its workspace and policy source, so nothing
//! leaks between them that the owner did not already share. A dead process fails its running
//! turns as `Unavailable` with its stderr tail; the next turn starts a new one after a backoff
//! that doubles per consecutive failure, and resumes the chat's session there.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::health::{
    AgentInfo, ConfigProblem, DEFAULT_MAX_MESSAGE_BYTES, Fixes, max_message_bytes,
};
use super::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use crate::config::AgentConfig;
use crate::ids::AccountKey;
use crate::protocol::AgentProcesses;
use crate::store::Store;
use crate::words::Msg;

pub mod permission;
pub mod process;
pub mod rpc;
pub mod session;
pub mod turn;

pub use process::{CommandLauncher, Launched, Launcher, StderrTail};
use session::{Proc, Stored};

/// Everything the `acp` backend needs; [`AcpOptions::configure`] fills it from `[agent]`.
#[derive(Clone)]
pub struct AcpOptions {
    /// Starts the agent process.
    pub launcher: Arc<dyn Launcher>,
    /// How long `initialize` may take.
    pub handshake_timeout: Duration,
    /// The wait before restarting after the first failure; doubled per further failure.
    pub restart_base: Duration,
    /// The longest wait before restarting.
    pub restart_cap: Duration,
    /// The longest line read from the agent (tool output and model lists are large).
    pub max_line: usize,
    /// After `session/cancel`, how long to wait for the agent to end the turn.
    pub cancel_grace: Duration,
    /// How long a permission question waits for the owner before it counts as a no.
    pub approval_timeout: Duration,
    /// Offer "always" in permission questions when the agent offers it; the approver still
    /// offers it only where the account allows it (`approvals = "ask_or_always"`).
    pub offer_always: bool,
    /// The most bytes of one chat message the pipeline hands over.
    pub max_message_bytes: usize,
    /// A turn ends when the agent sends nothing for this long (`[agent] timeout_seconds`).
    pub idle_timeout: Option<Duration>,
    /// The most bytes of an answer put into the chat (`[agent] max_answer_kib`).
    pub max_answer_bytes: usize,
    /// Whose stored sessions these are (`[agents.NAME]`; `None` for `[agent]`), see
    /// [`crate::agent::SessionKey::scoped`].
    pub scope: Option<String>,
}

impl AcpOptions {
    /// Options for `launcher` with the defaults for everything else.
    pub fn new(launcher: Arc<dyn Launcher>) -> Self {
        AcpOptions {
            launcher,
            handshake_timeout: Duration::from_secs(60),
            restart_base: Duration::from_secs(1),
            restart_cap: Duration::from_secs(300),
            max_line: 16 << 20,
            cancel_grace: Duration::from_secs(10),
            // Just past the confirm question's own 30 minutes: that one expires first and says so.
            approval_timeout: Duration::from_secs(1830),
            offer_always: true,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            idle_timeout: None,
            max_answer_bytes: crate::agent::DEFAULT_MAX_ANSWER_BYTES,
            scope: None,
        }
    }

    /// Reads `[agent]`: `command` (required), `args`, `env`; group records go next to the store.
    pub fn configure(cfg: &AgentConfig, state_dir: Option<PathBuf>) -> Result<Self, ConfigProblem> {
        let Some(program) = cfg.command.clone().filter(|c| !c.trim().is_empty()) else {
            return Err(ConfigProblem::new(
                "backend = \"acp\" needs agent.command (the ACP agent to start, e.g. codex-acp)",
                "set command (and args) in the [agent] table of the configuration file (`scv-bridge config example` shows \
                 acp examples), then restart the daemon",
            ));
        };
        let mut env: Vec<(String, String)> = cfg
            .env
            .as_ref()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        // A key `scv-bridge login agent` stored reaches the agent as the variable `api_key_env`
        // names, unless the daemon's own environment already sets it.
        if let (Some(var), Some(key)) = (&cfg.api_key_env, &cfg.stored_api_key)
            && std::env::var_os(var).is_none()
        {
            env.push((var.clone(), key.expose().to_string()));
        }
        let launcher = CommandLauncher {
            program,
            args: cfg.args.clone().unwrap_or_default(),
            env,
            record_dir: state_dir,
        };
        let mut o = AcpOptions::new(Arc::new(launcher));
        o.max_message_bytes = max_message_bytes(cfg);
        o.max_answer_bytes = crate::agent::answer::max_answer_bytes(cfg);
        o.scope = cfg.scope.clone();
        o.idle_timeout = cfg
            .timeout_seconds
            .filter(|s| *s > 0)
            .map(Duration::from_secs);
        Ok(o)
    }

    fn backoff(&self, failures: u32) -> Duration {
        let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
        self.restart_base
            .saturating_mul(factor)
            .min(self.restart_cap)
    }
}

/// An account's agent process and its restart bookkeeping.
#[derive(Default)]
struct Slot {
    proc: Option<Arc<Proc>>,
    failures: u32,
    last_failure: Option<Instant>,
}

/// An account's slot, shared by the turns that start or use its process.
type SharedSlot = Arc<tokio::sync::Mutex<Slot>>;

/// A chat's session as last opened.
#[derive(Default)]
struct ChatSlot {
    /// Session id, the process generation it lives in, its policy.
    open: Option<(String, u64, bool)>,
    /// `/new` was asked: the next turn starts a new session instead of resuming.
    fresh: bool,
    /// The open session's admission to the owner tools (revoked when replaced or dropped).
    tools_grant: Option<crate::agent::tool_access::Grant>,
}

/// An ACP agent backend.
pub struct AcpAgent {
    opts: AcpOptions,
    store: Option<Store>,
    /// Per account and trust (`true`: the tool-free sessions strangers get).
    accounts: Mutex<HashMap<(AccountKey, bool), SharedSlot>>,
    chats: Mutex<HashMap<SessionKey, Arc<tokio::sync::Mutex<ChatSlot>>>>,
    generation: AtomicU64,
    live: Mutex<AgentProcesses>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AcpAgent {
    /// A backend; nothing starts until a chat's first turn. `store` keeps the chats' session ids.
    pub fn new(opts: AcpOptions, store: Option<Store>) -> Self {
        AcpAgent {
            opts,
            store,
            accounts: Mutex::default(),
            chats: Mutex::default(),
            generation: AtomicU64::new(0),
            live: Mutex::default(),
        }
    }

    /// Processes running, the agent's name, sessions open and the last error (status shows it).
    pub fn live(&self) -> AgentProcesses {
        let mut live = lock(&self.live).clone();
        live.running = lock(&self.accounts)
            .values()
            .filter(|s| {
                s.try_lock()
                    .map(|s| s.proc.as_ref().is_some_and(|p| p.alive()))
                    .unwrap_or(true)
            })
            .count() as u64;
        live.sessions = lock(&self.chats)
            .values()
            .filter(|c| c.try_lock().map(|c| c.open.is_some()).unwrap_or(true))
            .count() as u64;
        live
    }

    fn note_error(&self, e: &AgentError) {
        if e.kind != AgentErrorKind::Cancelled {
            lock(&self.live).last_error = Some(e.message.clone());
        }
    }

    async fn process(
        &self,
        account: &AccountKey,
        no_tools: bool,
        cancel: &CancellationToken,
    ) -> Result<Arc<Proc>, AgentError> {
        let slot = lock(&self.accounts)
            .entry((account.clone(), no_tools))
            .or_default()
            .clone();
        let mut s = slot.lock().await;
        if let Some(p) = &s.proc {
            if p.alive() {
                return Ok(p.clone());
            }
            s.proc = None;
            s.failures += 1;
            s.last_failure = Some(Instant::now());
        }
        if let Some(last) = s.last_failure
            && s.failures > 0
        {
            let until = last + self.opts.backoff(s.failures);
            debug!(failures = s.failures, "waiting before restarting the agent");
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {}
                _ = cancel.cancelled() => return Err(turn::cancelled()),
            }
        }
        let mut name = account.to_string().replace(':', "-");
        if no_tools {
            name.push_str("-guest");
        }
        let launched = self.opts.launcher.launch(&name).map_err(|e| {
            AgentError::new(
                AgentErrorKind::Unavailable,
                format!(
                    "cannot start the agent `{}`: {e}",
                    self.opts.launcher.describe()
                ),
            )
        });
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let started = match launched {
            Ok(l) => tokio::select! {
                p = Proc::start(l, self.opts.max_line, self.opts.handshake_timeout, generation) => p,
                _ = cancel.cancelled() => return Err(turn::cancelled()),
            },
            Err(e) => Err(e),
        };
        match started {
            Ok(p) => {
                let p = Arc::new(p);
                let agent = p.facts.name.as_ref().map(|n| match &p.facts.version {
                    Some(v) => format!("{n} {v}"),
                    None => n.clone(),
                });
                lock(&self.live).agent = agent;
                s.proc = Some(p.clone());
                Ok(p)
            }
            Err(e) => {
                s.failures += 1;
                s.last_failure = Some(Instant::now());
                Err(e)
            }
        }
    }

    async fn succeeded(&self, account: &AccountKey, no_tools: bool) {
        let slot = lock(&self.accounts)
            .get(&(account.clone(), no_tools))
            .cloned();
        if let Some(slot) = slot {
            slot.lock().await.failures = 0;
        }
    }

    async fn run(
        &self,
        req: TurnRequest,
        cancel: &CancellationToken,
    ) -> Result<TurnOutput, AgentError> {
        let scope = self.opts.scope.as_deref();
        let chat = lock(&self.chats)
            .entry(req.session.clone())
            .or_default()
            .clone();
        let mut cs = tokio::select! {
            c = chat.lock() => c,
            _ = cancel.cancelled() => return Err(turn::cancelled()),
        };
        let no_tools = req.no_tools;
        let proc = self.process(&req.session.account, no_tools, cancel).await?;
        let current = cs
            .open
            .as_ref()
            .filter(|(_, g, n)| *g == proc.generation && *n == no_tools)
            .map(|(id, _, _)| id.clone());
        let mut lost_earlier = false;
        let sid = match current {
            Some(id) => id,
            None => {
                let prior = if cs.fresh {
                    None
                } else if let Some((id, _, n)) = cs.open.clone() {
                    Some(Stored { id, no_tools: n })
                } else {
                    session::stored(self.store.as_ref(), &req.session.scoped(scope)).await
                };
                let cwd = req.cwd();
                let (grant, servers) = owner_tools(&req, &proc);
                let opened = tokio::select! {
                    o = session::open(&proc, &cwd, prior, no_tools, &servers) => o?,
                    _ = cancel.cancelled() => return Err(turn::cancelled()),
                };
                let stored = Stored {
                    id: opened.id.clone(),
                    no_tools,
                };
                session::remember(
                    self.store.as_ref(),
                    &req.session.scoped(scope),
                    Some(&stored),
                )
                .await;
                info!(session = %req.session.parent(), no_tools, "ACP session opened");
                cs.open = Some((opened.id.clone(), proc.generation, no_tools));
                cs.fresh = false;
                cs.tools_grant = grant;
                lost_earlier = opened.lost_earlier;
                opened.id
            }
        };
        let note = lost_earlier.then(|| Msg::AgentSessionLost.text(req.language).into_owned());
        if let Some(n) = &note {
            req.events.text(&format!("{n}\n\n"));
        }
        let t = turn::Turn {
            proc: &proc,
            sid: &sid,
            cancel_grace: self.opts.cancel_grace,
            approval_timeout: self.opts.approval_timeout,
            offer_always: self.opts.offer_always,
            idle: self.opts.idle_timeout,
            max_answer: self.opts.max_answer_bytes,
        };
        let mut out = turn::run(t, &req, cancel).await?;
        if let Some(n) = note {
            out.text = format!("{n}\n\n{}", out.text);
        }
        Ok(out)
    }
}

/// The `mcpServers` of a session the policy gave the owner tools (`req.owner_tools` is set only
/// for the verified owner with tools granted), with the grant that admits it; `[]` otherwise, and
/// for an agent that does not take MCP servers over HTTP.
fn owner_tools(
    req: &TurnRequest,
    proc: &Proc,
) -> (Option<crate::agent::tool_access::Grant>, serde_json::Value) {
    let Some(endpoint) = req.owner_tools.as_ref().filter(|_| !req.no_tools) else {
        return (None, serde_json::json!([]));
    };
    if !proc.facts.mcp_http {
        debug!("the agent takes no MCP server over HTTP; its session has no owner tools");
        return (None, serde_json::json!([]));
    }
    let grant = endpoint.grant();
    let servers = serde_json::json!([{
        "type": "http",
        "name": "scv-bridge",
        "url": grant.url,
        "headers": [{"name": "Authorization", "value": grant.authorization}],
    }]);
    (Some(grant), servers)
}

impl Agent for AcpAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            let (account, no_tools) = (req.session.account.clone(), req.no_tools);
            let out = self.run(req, &cancel).await;
            match &out {
                Ok(_) => self.succeeded(&account, no_tools).await,
                Err(e) => {
                    info!(kind = ?e.kind, error = %e, "acp turn failed");
                    self.note_error(e);
                }
            }
            out
        })
    }

    fn processes(&self) -> Option<AgentProcesses> {
        Some(self.live())
    }

    fn reset<'a>(&'a self, session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let chat = lock(&self.chats)
                .entry(session.clone())
                .or_default()
                .clone();
            let mut cs = chat.lock().await;
            if let Some((id, generation, no_tools)) = cs.open.take() {
                let slot = lock(&self.accounts)
                    .get(&(session.account.clone(), no_tools))
                    .cloned();
                let proc = match slot {
                    Some(s) => s.lock().await.proc.clone(),
                    None => None,
                };
                // Free the old session where the agent lets us; dropping it is enough otherwise.
                if let Some(p) = proc.filter(|p| p.generation == generation && p.facts.close) {
                    let close = p
                        .rpc
                        .request("session/close", serde_json::json!({"sessionId": id}));
                    let _ = tokio::time::timeout(Duration::from_secs(5), close).await;
                }
            }
            cs.fresh = true;
            let scope = self.opts.scope.as_deref();
            session::remember(self.store.as_ref(), &session.scoped(scope), None).await;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Dropping the processes kills their groups (see process.rs).
            let slots: Vec<_> = lock(&self.accounts).drain().map(|(_, s)| s).collect();
            for s in slots {
                if let Some(p) = s.lock().await.proc.take() {
                    p.stop();
                }
            }
            lock(&self.chats).clear();
        })
    }

    fn describe(&self) -> AgentInfo {
        let mut info = AgentInfo::new("acp");
        info.model = Some(self.opts.launcher.describe());
        info.max_message_bytes = self.opts.max_message_bytes;
        info.fixes = Fixes {
            unavailable: Some(format!(
                "check that `{}` starts for the daemon's user (run it by hand; it must be on the \
                 daemon's PATH) and see its error above; kept messages are retried on their own",
                self.opts.launcher.describe()
            )),
            auth: Some(
                "give the agent its API key in the daemon's environment (OPENAI_API_KEY for \
                 codex-acp, ANTHROPIC_API_KEY for claude-agent-acp), then `systemctl --user \
                 restart scv-bridge`"
                    .into(),
            ),
            failed: Some("see the agent's error above; the next message is tried again".into()),
        };
        info
    }
}
