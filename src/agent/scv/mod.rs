//! The `scv` backend: an SCV agent server over JSON lines, one connection (child) per chat.
//!
//! A chat's connection is opened on its first turn and kept; a dead one (EOF, exit, broken line)
//! fails the turn as `Unavailable`, and the next turn opens a new one after a backoff that grows
//! with consecutive failures, so a crashing agent is not restarted in a loop.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use super::{
    Agent, AgentError, AgentErrorKind, ApprovalRequest, Approver, SessionKey, TurnOutput,
    TurnRequest,
};
use crate::config::AgentConfig;

pub mod process;
pub mod wire;

pub use process::Transport;
use process::{Connection, Incoming, SessionParams, kind};
use wire::{ClientMessage, Event};

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
        }
    }

    /// Reads `[agent]`: `socket` if set, else `command` (default `scv`) with `args`
    /// (default `server --stdio`).
    pub fn from_config(cfg: &AgentConfig) -> Result<Self, String> {
        let transport = match (&cfg.socket, &cfg.command) {
            (Some(_), Some(_)) => {
                return Err("set agent.socket or agent.command, not both".into());
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
            cwd: workspace(&req),
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
            deadline: self.opts.turn_timeout.map(|t| Instant::now() + t),
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

    /// Runs one turn: `turn.start`, then events until the turn ends, the connection dies or
    /// `cancel` fires. Approval requests are answered at once, or asked of the owner while the
    /// turn's events keep being read; the time spent waiting for the owner does not count
    /// against the turn's deadline.
    async fn turn_on(
        &self,
        conn: &mut Connection,
        plan: Plan<'_>,
        cancel: &CancellationToken,
    ) -> Ended {
        let dead = |e: AgentError| Ended {
            result: Err(e),
            alive: false,
        };
        let done = |result| Ended {
            result,
            alive: true,
        };
        let rid = conn.request_id();
        let start = ClientMessage::TurnStart {
            request_id: rid.clone(),
            session_id: conn.session_id.clone(),
            prompt: plan.prompt.to_string(),
        };
        if let Err(e) = conn.send(&start).await {
            return dead(e);
        }
        let mut deadline = plan.deadline;
        let mut asked: FuturesUnordered<BoxFuture<'static, (Value, bool)>> =
            FuturesUnordered::new();
        let mut asking_since: Option<Instant> = None;
        // However the turn ends, questions still open are withdrawn from the chat.
        let asking = CancellationToken::new();
        let _withdraw = asking.clone().drop_guard();
        let mut turn: Option<Value> = None;
        let mut deltas = String::new();
        let mut completed: Option<String> = None;
        loop {
            let inc = tokio::select! {
                biased;
                _ = cancel.cancelled() => return self.cancel_turn(conn, turn, &rid).await,
                _ = sleep_until_some(deadline.filter(|_| asked.is_empty())) => {
                    let mut ended = self.cancel_turn(conn, turn, &rid).await;
                    let limit = self.opts.turn_timeout.unwrap_or_default().as_secs_f64();
                    ended.result = Err(AgentError::new(
                        AgentErrorKind::Unavailable,
                        format!("the agent did not answer within {limit} s"),
                    ));
                    return ended;
                }
                Some((approval_id, approved)) = asked.next(), if !asked.is_empty() => {
                    if asked.is_empty()
                        && let Some(since) = asking_since.take()
                    {
                        deadline = deadline.map(|d| d + since.elapsed());
                    }
                    info!(approved, "the owner decided an approval request");
                    if let Err(e) = resolve(conn, approval_id, approved).await {
                        return dead(e);
                    }
                    continue;
                }
                inc = conn.next() => inc,
            };
            let ev = match inc {
                Incoming::Closed(why) => {
                    return dead(AgentError::new(AgentErrorKind::Unavailable, why));
                }
                Incoming::Event(ev, _) => ev,
            };
            let ours = |t: &Option<Value>| turn.is_some() && (t.is_none() || *t == turn);
            match ev {
                Event::TurnStarted {
                    request_id,
                    turn_id,
                } if turn.is_none()
                    && request_id.as_ref().is_none_or(|r| r.as_str() == Some(&rid)) =>
                {
                    turn = Some(turn_id);
                }
                Event::Delta { turn_id, content } if ours(&turn_id) => deltas.push_str(&content),
                Event::Completed { turn_id, content } if ours(&turn_id) => {
                    completed = Some(content)
                }
                Event::ApprovalRequested {
                    approval_id,
                    name,
                    summary,
                    risk,
                } => match (&plan.approver, plan.auto_approve) {
                    (Some(approver), false) => {
                        info!(tool = %name, "asking the owner to approve a tool call");
                        if asked.is_empty() {
                            asking_since = Some(Instant::now());
                        }
                        let request = ApprovalRequest {
                            session: plan.session.clone(),
                            tool: name,
                            summary,
                            risk,
                        };
                        let decided = approver.approve(request, asking.child_token());
                        asked.push(Box::pin(async move { (approval_id, decided.await) }));
                    }
                    (_, approved) => {
                        info!(tool = %name, approved, "answering an approval request");
                        if let Err(e) = resolve(conn, approval_id, approved).await {
                            return dead(e);
                        }
                    }
                },
                Event::TurnCompleted { turn_id, usage } if ours(&turn_id) => {
                    let text = completed.unwrap_or(deltas);
                    if text.trim().is_empty() {
                        return done(Err(AgentError::new(
                            AgentErrorKind::Failed,
                            "the agent finished the turn without an answer",
                        )));
                    }
                    return done(Ok(TurnOutput { text, usage }));
                }
                Event::TurnFailed { turn_id, message } if ours(&turn_id) => {
                    return done(Err(AgentError::new(
                        AgentErrorKind::Failed,
                        format!("the agent failed: {message}"),
                    )));
                }
                Event::TurnCancelled { turn_id } if ours(&turn_id) => {
                    return done(Err(AgentError::new(
                        AgentErrorKind::Cancelled,
                        "the agent cancelled the turn",
                    )));
                }
                Event::Error {
                    request_id,
                    message,
                    fatal,
                } => {
                    if fatal {
                        return dead(AgentError::new(
                            AgentErrorKind::Unavailable,
                            format!("the agent is going away: {message}"),
                        ));
                    }
                    if request_id.as_ref().and_then(Value::as_str) == Some(&rid) {
                        return done(Err(AgentError::new(
                            AgentErrorKind::Failed,
                            format!("the agent refused the turn: {message}"),
                        )));
                    }
                    warn!(%message, "the agent reported an error");
                }
                other => debug!(event = kind(&other), "ignored agent event"),
            }
        }
    }

    /// Sends `turn.cancel` and returns at once; before the turn id is known, waits a little for it
    /// and otherwise drops the connection, which stops the turn for certain.
    async fn cancel_turn(&self, conn: &mut Connection, turn: Option<Value>, rid: &str) -> Ended {
        let turn = match turn {
            Some(t) => Some(t),
            None => {
                let wait = async {
                    loop {
                        match conn.next().await {
                            Incoming::Event(
                                Event::TurnStarted {
                                    request_id,
                                    turn_id,
                                },
                                _,
                            ) if request_id.as_ref().is_none_or(|r| r.as_str() == Some(rid)) => {
                                return Some(turn_id);
                            }
                            Incoming::Closed(_) => return None,
                            Incoming::Event(..) => {}
                        }
                    }
                };
                tokio::time::timeout(self.opts.cancel_grace, wait)
                    .await
                    .ok()
                    .flatten()
            }
        };
        let Some(turn_id) = turn else {
            return Ended {
                result: Err(cancelled()),
                alive: false,
            };
        };
        let request_id = conn.request_id();
        let msg = ClientMessage::TurnCancel {
            request_id,
            session_id: conn.session_id.clone(),
            turn_id,
        };
        let alive = conn.send(&msg).await.is_ok();
        Ended {
            result: Err(cancelled()),
            alive,
        }
    }
}

/// What one turn runs under.
struct Plan<'a> {
    /// Approve every request without asking.
    auto_approve: bool,
    /// Ask the owner instead (owner sessions with `approvals = "ask"`).
    approver: Option<Arc<dyn Approver>>,
    /// The chat, where the owner is asked.
    session: &'a SessionKey,
    /// The user's text.
    prompt: &'a str,
    /// When the turn gives up (extended by the time spent waiting for the owner).
    deadline: Option<Instant>,
}

/// Sends `approval.resolve`.
async fn resolve(
    conn: &mut Connection,
    approval_id: Value,
    approved: bool,
) -> Result<(), AgentError> {
    let answer = ClientMessage::ApprovalResolve {
        request_id: conn.request_id(),
        session_id: conn.session_id.clone(),
        approval_id,
        approved,
    };
    conn.send(&answer).await
}

fn cancelled() -> AgentError {
    AgentError::new(AgentErrorKind::Cancelled, "the turn was cancelled")
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The account's workspace, or the daemon's directory when none is configured.
fn workspace(req: &TurnRequest) -> String {
    req.workspace
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"))
        .to_string_lossy()
        .into_owned()
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
