//! The `scv` backend: an SCV agent server over JSON lines, one connection (child) per chat.
//!
//! A chat's connection is opened on its first turn and kept; a dead one (EOF, exit, broken line)
//! fails the turn as `Unavailable`, and the next turn opens a new one after a backoff that grows
//! with consecutive failures, so a crashing agent is not restarted in a loop.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use super::health::{
    AgentInfo, ConfigProblem, DEFAULT_MAX_MESSAGE_BYTES, Fixes, max_message_bytes,
};
use super::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use crate::config::AgentConfig;

pub mod process;
mod turn;
pub mod wire;

pub use process::Transport;
use process::{Connection, SessionParams};
use turn::{Plan, cancelled};
use wire::ClientMessage;

/// Everything the `scv` backend needs; [`ScvOptions::from_config`] fills it from `[agent]`.
#[derive(Debug, Clone)]
pub struct ScvOptions {
    /// How to reach the server.
    pub transport: Transport,
    /// How long a turn may take (`None`: no limit).
    pub turn_timeout: Option<Duration>,
    /// How long `initialize` + `session.start` may take.
    pub handshake_timeout: Duration,
    /// The wait before reopening after the first failure; doubled per further failure.
    pub restart_base: Duration,
    /// The longest wait before reopening.
    pub restart_cap: Duration,
    /// The longest line read from or written to the server.
    pub max_line: usize,
    /// After a cancel before `turn.started`, how long to wait for the turn id before dropping
    /// the connection instead.
    pub cancel_grace: Duration,
    /// The most bytes of one chat message the pipeline hands over (`[agent] max_message_bytes`).
    pub max_message_bytes: usize,
    /// The most bytes of an answer put into the chat (`[agent] max_answer_kib`).
    pub max_answer_bytes: usize,
}

impl ScvOptions {
    /// Options for `transport` with the defaults for everything else.
    pub fn new(transport: Transport) -> Self {
        ScvOptions {
            transport,
            turn_timeout: Some(Duration::from_secs(600)),
            handshake_timeout: Duration::from_secs(30),
            restart_base: Duration::from_secs(1),
            restart_cap: Duration::from_secs(300),
            max_line: 8 << 20,
            cancel_grace: Duration::from_secs(2),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_answer_bytes: crate::agent::DEFAULT_MAX_ANSWER_BYTES,
        }
    }

    /// Reads `[agent]`: `socket` if set, else `command` (default `scv`) with `args`
    /// (default `server --stdio`).
    pub fn from_config(cfg: &AgentConfig) -> Result<Self, String> {
        ScvOptions::configure(cfg).map_err(|p| p.message)
    }

    /// [`ScvOptions::from_config`], with the step that fixes what is wrong.
    pub fn configure(cfg: &AgentConfig) -> Result<Self, ConfigProblem> {
        let transport = match (&cfg.socket, &cfg.command) {
            (Some(_), Some(_)) => {
                return Err(ConfigProblem::new(
                    "set agent.socket or agent.command, not both",
                    "remove socket or command from the [agent] table of the configuration file, \
                     then restart the daemon",
                ));
            }
            (Some(s), None) => Transport::Socket(crate::config::expand_tilde(s)),
            (None, command) => Transport::Command {
                program: command.clone().unwrap_or_else(|| "scv".into()),
                args: cfg
                    .args
                    .clone()
                    .unwrap_or_else(|| vec!["server".into(), "--stdio".into()]),
            },
        };
        let mut o = ScvOptions::new(transport);
        if let Some(s) = cfg.timeout_seconds.filter(|s| *s > 0) {
            o.turn_timeout = Some(Duration::from_secs(s));
        }
        o.max_message_bytes = max_message_bytes(cfg);
        o.max_answer_bytes = crate::agent::answer::max_answer_bytes(cfg);
        Ok(o)
    }

    fn backoff(&self, failures: u32) -> Duration {
        let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
        self.restart_base
            .saturating_mul(factor)
            .min(self.restart_cap)
    }
}

/// What a session was started with; a turn under another policy needs a new session.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Policy {
    cwd: String,
    channel: &'static str,
    no_tools: bool,
    auto_approve: bool,
}

/// One chat's connection and its restart bookkeeping.
#[derive(Default)]
struct Slot {
    conn: Option<(Connection, Policy)>,
    failures: u32,
    last_failure: Option<Instant>,
    opened_before: bool,
}

struct Cell {
    slot: tokio::sync::Mutex<Slot>,
    restarts: AtomicU32,
}

/// How a turn ended on its connection.
struct Ended {
    result: Result<TurnOutput, AgentError>,
    /// The connection can serve the next turn.
    alive: bool,
}

/// An SCV agent server backend.
pub struct ScvAgent {
    opts: ScvOptions,
    sessions: Mutex<HashMap<SessionKey, Arc<Cell>>>,
    tasks: TaskTracker,
    kill_all: CancellationToken,
}

impl ScvAgent {
    /// A backend with `opts`; nothing is started until a chat's first turn.
    pub fn new(opts: ScvOptions) -> Self {
        ScvAgent {
            opts,
            sessions: Mutex::new(HashMap::new()),
            tasks: TaskTracker::new(),
            kill_all: CancellationToken::new(),
        }
    }

    /// A backend from `[agent]`.
    pub fn from_config(cfg: &AgentConfig) -> Result<Self, String> {
        Ok(ScvAgent::new(ScvOptions::from_config(cfg)?))
    }

    /// How many times the chat's connection was reopened after its first start.
    pub fn restarts(&self, session: &SessionKey) -> u32 {
        self.cell_if_any(session)
            .map(|c| c.restarts.load(Ordering::Relaxed))
            .unwrap_or(0)
    }

    fn cell_if_any(&self, session: &SessionKey) -> Option<Arc<Cell>> {
        let map = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        map.get(session).cloned()
    }

    fn cell(&self, session: &SessionKey) -> Arc<Cell> {
        let mut map = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(session.clone())
            .or_insert_with(|| {
                Arc::new(Cell {
                    slot: tokio::sync::Mutex::new(Slot::default()),
                    restarts: AtomicU32::new(0),
                })
            })
            .clone()
    }

    async fn run(
        &self,
        req: TurnRequest,
        cancel: &CancellationToken,
    ) -> Result<TurnOutput, AgentError> {
        let cell = self.cell(&req.session);
        let mut slot = tokio::select! {
            s = cell.slot.lock() => s,
            _ = cancel.cancelled() => return Err(cancelled()),
        };
        let parent = req.session.parent();
        let policy = Policy {
            cwd: req.cwd(),
            channel: req.channel_label,
            no_tools: req.no_tools,
            auto_approve: req.auto_approve && !req.no_tools,
        };
        if slot.conn.as_ref().is_some_and(|(_, p)| *p != policy) {
            info!(session = %parent, "the chat's policy changed; starting a new agent session");
            slot.conn = None;
        }
        if slot.conn.is_none() {
            if let Some(last) = slot.last_failure
                && slot.failures > 0
            {
                let until = last + self.opts.backoff(slot.failures);
                if until > Instant::now() {
                    debug!(session = %parent, failures = slot.failures, "waiting before restarting the agent");
                    tokio::select! {
                        _ = tokio::time::sleep_until(until) => {}
                        _ = cancel.cancelled() => return Err(cancelled()),
                    }
                }
            }
            let params = SessionParams {
                parent: &parent,
                cwd: policy.cwd.clone(),
                channel: policy.channel,
                no_tools: policy.no_tools,
                auto_approve: policy.auto_approve,
            };
            let open = Connection::open(
                &self.opts.transport,
                params,
                self.opts.max_line,
                self.opts.handshake_timeout,
                &self.tasks,
                self.kill_all.child_token(),
            );
            // Dropping a half-open connection kills its child, so cancelling here is clean.
            let opened = tokio::select! {
                o = open => o,
                _ = cancel.cancelled() => return Err(cancelled()),
            };
            match opened {
                Ok(conn) => {
                    if slot.opened_before {
                        cell.restarts.fetch_add(1, Ordering::Relaxed);
                        info!(session = %parent, failures = slot.failures, "agent session restarted");
                    } else {
                        info!(session = %parent, no_tools = policy.no_tools, auto_approve = policy.auto_approve, "agent session started");
                    }
                    slot.opened_before = true;
                    slot.conn = Some((conn, policy));
                }
                Err(e) => {
                    slot.failures += 1;
                    slot.last_failure = Some(Instant::now());
                    return Err(e);
                }
            }
        }
        let Some((conn, policy)) = slot.conn.as_mut() else {
            return Err(AgentError::new(
                AgentErrorKind::Unavailable,
                "no agent session",
            ));
        };
        let plan = Plan {
            auto_approve: policy.auto_approve,
            // A tool-free session never asks: a stray request there is refused.
            approver: req.approver.clone().filter(|_| !policy.no_tools),
            session: &req.session,
            prompt: &req.prompt,
            attachments: &req.attachments,
            deadline: self.opts.turn_timeout.map(|t| Instant::now() + t),
            events: &req.events,
            // Not streamed (see turn.rs): the cap bounds what is kept and what the chat gets.
            answer: crate::agent::AnswerCap::new(
                self.opts.max_answer_bytes,
                req.workspace.clone(),
                req.language,
                crate::agent::TurnEvents::none(),
            ),
        };
        let ended = self.turn_on(conn, plan, cancel).await;
        if ended.alive {
            if ended.result.is_ok() {
                slot.failures = 0;
            }
        } else {
            slot.conn = None;
            if !matches!(&ended.result, Err(e) if e.kind == AgentErrorKind::Cancelled) {
                slot.failures += 1;
                slot.last_failure = Some(Instant::now());
            }
        }
        ended.result
    }
}

impl Agent for ScvAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            let session = req.session.parent();
            // `run` watches `cancel` itself, so a running turn is told `turn.cancel` rather than
            // dropped mid-write.
            let out = self.run(req, &cancel).await;
            match &out {
                Ok(o) => debug!(%session, chars = o.text.chars().count(), "scv turn answered"),
                Err(e) => info!(%session, kind = ?e.kind, error = %e, "scv turn failed"),
            }
            out
        })
    }

    fn describe(&self) -> AgentInfo {
        let mut info = AgentInfo::new("scv");
        info.max_message_bytes = self.opts.max_message_bytes;
        let unavailable = match &self.opts.transport {
            Transport::Command { program, args } => {
                let mut cmd = vec![program.clone()];
                cmd.extend(args.iter().cloned());
                format!(
                    "check that `{}` starts for the daemon's user (it must be on the daemon's PATH); \
                     kept messages are retried on their own",
                    cmd.join(" ")
                )
            }
            Transport::Socket(path) => format!(
                "start the SCV agent server listening on {} (check with `test -S {}`); kept \
                 messages are retried on their own",
                path.display(),
                path.display()
            ),
        };
        info.fixes = Fixes {
            unavailable: Some(unavailable),
            auth: None,
            failed: Some(
                "see the SCV agent server's log for its error; the next message is tried again"
                    .into(),
            ),
        };
        info
    }

    fn reset<'a>(&'a self, session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let Some(cell) = self.cell_if_any(session) else {
                return Ok(());
            };
            let mut slot = cell.slot.lock().await;
            if let Some((conn, _)) = slot.conn.as_mut() {
                let msg = ClientMessage::SessionClear {
                    request_id: conn.request_id(),
                    session_id: conn.session_id.clone(),
                };
                if conn.send(&msg).await.is_err() {
                    // A dead connection has no history to clear; the next turn starts afresh.
                    slot.conn = None;
                }
            }
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.kill_all.cancel();
            self.sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clear();
            self.tasks.close();
            if tokio::time::timeout(Duration::from_secs(5), self.tasks.wait())
                .await
                .is_err()
            {
                warn!("agent processes did not stop within 5 s");
            }
        })
    }
}
