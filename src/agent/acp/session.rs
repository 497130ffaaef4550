//! One agent process and its handshake, and opening a chat's ACP session on it: resumed or
//! loaded (its replay dropped) from the stored id, else new.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use super::process::{Launched, StderrTail};
use super::rpc::{Rpc, RpcError};
use crate::agent::{AgentError, AgentErrorKind, SessionKey};
use crate::store::Store;

/// What `initialize` told us about the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentFacts {
    /// `agentInfo.name`.
    pub name: Option<String>,
    /// `agentInfo.version`.
    pub version: Option<String>,
    /// `session/load` works.
    pub load: bool,
    /// `session/resume` works (restores without replaying).
    pub resume: bool,
    /// `session/close` works.
    pub close: bool,
    /// Prompts may carry image blocks.
    pub image: bool,
    /// `mcpCapabilities.http`: the agent connects to MCP servers over HTTP (the owner tools).
    pub mcp_http: bool,
}

/// A running agent process with its connection.
pub struct Proc {
    /// The connection.
    pub rpc: Rpc,
    /// Its stderr tail.
    pub tail: StderrTail,
    /// What it said about itself.
    pub facts: AgentFacts,
    /// Counts processes, so a chat knows its session belongs to an earlier one.
    pub generation: u64,
    guard: Guard,
}

type Guard = std::sync::Arc<std::sync::Mutex<Option<Box<dyn Send + Sync>>>>;

/// The failure of a process that is gone (not while answering: starting, resuming), with why
/// and the tail of its stderr: the message stays and is tried again.
pub fn gone(proc: &Proc, what: &str) -> AgentError {
    AgentError::new(AgentErrorKind::Unavailable, gone_words(proc, what))
}

/// The failure of a turn whose agent process ended while answering it: counted against the
/// message (see [`AgentErrorKind::Ended`]).
pub fn ended(proc: &Proc) -> AgentError {
    AgentError::new(AgentErrorKind::Ended, gone_words(proc, "while answering"))
}

fn gone_words(proc: &Proc, what: &str) -> String {
    let why = proc.end_reason();
    match proc.tail.text() {
        t if t.is_empty() => format!("the agent process ended {what} ({why})"),
        t => format!("the agent process ended {what} ({why}): {t}"),
    }
}

/// A request's failure for people.
pub fn failed(proc: &Proc, what: &str, e: RpcError) -> AgentError {
    match e {
        RpcError::Closed => gone(proc, what),
        RpcError::Remote {
            code: -32000,
            message,
        } => AgentError::new(
            AgentErrorKind::Auth,
            format!("the agent needs authentication ({message})"),
        ),
        RpcError::Remote { message, .. } => AgentError::new(
            AgentErrorKind::Failed,
            format!("the agent refused {what}: {message}"),
        ),
    }
}

impl Proc {
    /// Starts the connection on a launched agent and sends `initialize` (no fs, no terminal).
    pub async fn start(
        launched: Launched,
        max_line: usize,
        handshake: Duration,
        generation: u64,
    ) -> Result<Proc, AgentError> {
        let rpc = Rpc::start(launched.read, launched.write, max_line);
        let mut proc = Proc {
            rpc,
            tail: launched.tail,
            facts: AgentFacts::default(),
            generation,
            guard: std::sync::Arc::new(std::sync::Mutex::new(Some(launched.guard))),
        };
        // Stdout closed: the agent is dead or broken; kill what is left of its group at once
        // rather than when the next turn notices, then say why it ended (its stderr may name
        // files or quote a model's error, never a chat's message: those go over stdin).
        let (rpc, guard, tail) = (proc.rpc.clone(), proc.guard.clone(), proc.tail.clone());
        tokio::spawn(async move {
            rpc.closed().await;
            let g = guard.lock().unwrap_or_else(|p| p.into_inner()).take();
            let unasked = g.is_some();
            drop(g);
            if unasked {
                tail.settled().await;
                let why = end_reason(&rpc, &tail);
                info!(reason = %why, stderr = %tail.text(), generation, "the agent process ended");
            }
        });
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "scv-bridge", "title": "scv-bridge", "version": env!("CARGO_PKG_VERSION")},
        });
        let init = tokio::time::timeout(handshake, proc.rpc.request("initialize", params)).await;
        let result = match init {
            Err(_) => {
                return Err(AgentError::new(
                    AgentErrorKind::Unavailable,
                    format!(
                        "the agent did not answer initialize within {} s",
                        handshake.as_secs()
                    ),
                ));
            }
            Ok(r) => r.map_err(|e| failed(&proc, "while starting", e))?,
        };
        if result.get("protocolVersion").and_then(Value::as_u64) != Some(1) {
            return Err(AgentError::new(
                AgentErrorKind::Failed,
                "the agent speaks another ACP protocol version than 1; use a release of it that speaks version 1",
            ));
        }
        proc.facts = facts(&result);
        info!(name = ?proc.facts.name, version = ?proc.facts.version, "ACP agent started");
        Ok(proc)
    }
}

impl Proc {
    /// Why the process ended, in words: what broke its output, else how it exited.
    pub fn end_reason(&self) -> String {
        end_reason(&self.rpc, &self.tail)
    }

    /// Still serving: its output is open and nobody stopped it (a stopped process's output may
    /// take a moment to close).
    pub fn alive(&self) -> bool {
        !self.rpc.is_closed()
            && self
                .guard
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
    }

    /// Ends the process now (kills its group), even while turns still hold it.
    pub fn stop(&self) {
        let guard = self.guard.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(guard);
    }
}

fn end_reason(rpc: &Rpc, tail: &StderrTail) -> String {
    match (rpc.broken(), tail.exit()) {
        (Some(broken), _) => broken,
        (None, Some(exit)) => format!("it exited: {exit}"),
        (None, None) => "its output ended".into(),
    }
}

fn facts(result: &Value) -> AgentFacts {
    let caps = &result["agentCapabilities"];
    let s = |v: &Value| v.as_str().map(str::to_string);
    AgentFacts {
        name: s(&result["agentInfo"]["name"]),
        version: s(&result["agentInfo"]["version"]),
        load: caps["loadSession"].as_bool().unwrap_or(false),
        // Supported when present as an object (the schema's "empty object when supported").
        resume: caps["sessionCapabilities"]["resume"].is_object(),
        close: caps["sessionCapabilities"]["close"].is_object(),
        image: caps["promptCapabilities"]["image"]
            .as_bool()
            .unwrap_or(false),
        mcp_http: caps["mcpCapabilities"]["http"].as_bool().unwrap_or(false),
    }
}

/// What is stored per chat, so a restarted bridge continues the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// The ACP session id.
    pub id: String,
    /// The policy the session was made under: a stranger's session never serves the owner.
    pub no_tools: bool,
}

fn state_name(session: &SessionKey) -> String {
    format!("acp_session:{}", session.chat)
}

/// The chat's stored session, if any (a store error reads as none: a new session is safe).
pub async fn stored(store: Option<&Store>, session: &SessionKey) -> Option<Stored> {
    let store = store?;
    let raw = store
        .get_state(&session.account.to_string(), &state_name(session))
        .await
        .ok()??;
    serde_json::from_str(&raw).ok()
}

/// Remembers the chat's session (or forgets it: `None`).
pub async fn remember(store: Option<&Store>, session: &SessionKey, value: Option<&Stored>) {
    let Some(store) = store else {
        return;
    };
    let account = session.account.to_string();
    let name = state_name(session);
    let value = value
        .and_then(|v| serde_json::to_string(v).ok())
        .unwrap_or_default();
    if let Err(e) = store.set_state(&account, &name, &value).await {
        warn!(error = %e, "cannot store the chat's agent session; a restart starts a new one");
    }
}

/// An open session: its id and whether it continues the stored one.
pub struct Opened {
    /// The ACP session id.
    pub id: String,
    /// A stored session could not be continued: the owner is told it is a fresh one.
    pub lost_earlier: bool,
}

/// Opens the chat's session: the stored one resumed (`session/resume`) or loaded
/// (`session/load`; its replay is dropped because nothing routes the session until it returns),
/// else a new one.
pub async fn open(
    proc: &Proc,
    cwd: &str,
    prior: Option<Stored>,
    no_tools: bool,
    mcp_servers: &Value,
) -> Result<Opened, AgentError> {
    let prior = prior.filter(|p| p.no_tools == no_tools);
    let mut lost_earlier = false;
    if let Some(p) = prior {
        let params = json!({"sessionId": p.id, "cwd": cwd, "mcpServers": mcp_servers});
        let method = if proc.facts.resume {
            Some("session/resume")
        } else if proc.facts.load {
            Some("session/load")
        } else {
            None
        };
        if let Some(method) = method {
            match proc.rpc.request(method, params).await {
                Ok(_) => {
                    debug!(method, "agent session continued");
                    return Ok(Opened {
                        id: p.id,
                        lost_earlier: false,
                    });
                }
                Err(RpcError::Closed) => return Err(gone(proc, "while resuming")),
                Err(RpcError::Remote { code, .. }) => {
                    info!(
                        method,
                        code, "the agent could not continue the session; starting a new one"
                    )
                }
            }
        }
        lost_earlier = true;
    }
    let result = proc
        .rpc
        .request(
            "session/new",
            json!({"cwd": cwd, "mcpServers": mcp_servers}),
        )
        .await
        .map_err(|e| failed(proc, "to start a session", e))?;
    let Some(id) = result.get("sessionId").and_then(Value::as_str) else {
        return Err(AgentError::new(
            AgentErrorKind::Failed,
            "the agent's session/new answer has no sessionId",
        ));
    };
    if no_tools {
        set_read_only(proc, id, &result).await;
    }
    Ok(Opened {
        id: id.to_string(),
        lost_earlier,
    })
}

/// Sets a read-only mode where the agent lists one (codex's `read-only`). NOT claude's `plan`:
/// observed with claude-agent-acp 0.23.1 (tests/acp_real/acp_real.rs), in `plan` a stranger's `mkdir x`
/// ran WITHOUT a permission request, while its `default` mode asks (and hears no). Other agents'
/// modes are unconfirmed, so none is guessed; every permission request is rejected anyway.
async fn set_read_only(proc: &Proc, id: &str, new_result: &Value) {
    let listed: Vec<&str> = new_result["modes"]["availableModes"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["id"].as_str()).collect())
        .unwrap_or_default();
    let Some(mode) = ["read-only"].into_iter().find(|m| listed.contains(m)) else {
        return;
    };
    let params = json!({"sessionId": id, "modeId": mode});
    if let Err(e) = proc.rpc.request("session/set_mode", params).await {
        warn!(?e, mode, "the agent did not take the read-only mode");
    }
}
