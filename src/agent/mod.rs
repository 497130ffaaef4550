//! Agent backends behind one trait: an OpenAI-compatible HTTP endpoint, or an SCV agent server.
//!
//! The conversation pipeline calls [`Agent::turn`] once per inbound message (one turn at a time per
//! chat) and sends the returned text; it never branches on the backend.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::{AgentBackend, AgentConfig};
use crate::ids::AccountKey;
use crate::ids::ChatId;
use crate::store::Store;

pub mod acp;
pub mod answer;
pub mod approval;
pub mod attachment;
pub mod events;
pub mod health;
pub mod keep;
pub mod key;
pub mod openai;
pub mod registry;
pub mod scv;
pub mod tool_access;
mod unconfigured;

pub use acp::{AcpAgent, AcpOptions};
pub use answer::{Answer, AnswerCap, DEFAULT_MAX_ANSWER_BYTES};
pub use approval::{ApprovalRequest, Approver, Decision};
pub use attachment::{Attachment, MediaKind};
pub use events::{TurnEvent, TurnEvents};
pub use health::{AgentInfo, AgentMonitor, ConfigProblem, DEFAULT_MAX_MESSAGE_BYTES, Fixes};
pub use keep::{Keep, KeepWrite, made_in as keep_made_in};
pub use openai::history::{DailyUsage, daily_usage};
pub use openai::{ChatMessage, OpenAiAgent, OpenAiOptions, Role};
pub use scv::{ScvAgent, ScvOptions, Transport};
pub use unconfigured::Unconfigured;

/// One conversation with the agent: an account's chat.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    /// The account.
    pub account: AccountKey,
    /// The chat on that account.
    pub chat: ChatId,
}

impl SessionKey {
    /// `<channel>:<account>:<chat>`: the `SCV_PARENT` value naming this chat to agent processes.
    pub fn parent(&self) -> String {
        format!("{}:{}", self.account, self.chat)
    }

    /// The key under which an agent with history `scope` (`[agents.NAME]`; `None` for `[agent]`)
    /// keeps what it remembers of this chat, so two agents behind one chat never share it.
    /// Only for what the backend stores; the session itself (approvals, `SCV_PARENT`) keeps
    /// the chat's own key.
    pub fn scoped(&self, scope: Option<&str>) -> SessionKey {
        match scope {
            None => self.clone(),
            // The unit separator never occurs in a platform's chat id.
            Some(name) => SessionKey {
                account: self.account.clone(),
                chat: ChatId(format!("{}\u{1f}{name}", self.chat.as_str())),
            },
        }
    }
}

/// One prompt to answer.
#[derive(Clone)]
pub struct TurnRequest {
    /// Whose conversation.
    pub session: SessionKey,
    /// The user's text.
    pub prompt: String,
    /// The policy's decision: this session must not use tools.
    pub no_tools: bool,
    /// The policy's decision: approve every tool request without asking.
    pub auto_approve: bool,
    /// Who decides tool requests when tools are allowed but not auto-approved
    /// (`approvals = "ask"`); without one such requests are denied.
    pub approver: Option<Arc<dyn Approver>>,
    /// The account's workspace (the agent's cwd).
    pub workspace: Option<PathBuf>,
    /// "WeChat" / "Feishu": tells the model the reader sees short plain text.
    pub channel_label: &'static str,
    /// The chat's language: the model is told to answer in it.
    pub language: crate::words::Lang,
    /// Files the owner sent with this message, saved in the workspace.
    pub attachments: Vec<Attachment>,
    /// Where the backend reports the answer as it is written and its tool steps.
    pub events: TurnEvents,
    /// The owner tools (served by `crate::mcp`), set by the pipeline only when the policy gave
    /// this session tools (the verified owner of an account with `remote_tools = "owner"`).
    pub owner_tools: Option<Arc<dyn tool_access::ToolAccess>>,
}

impl TurnRequest {
    /// Where an agent process works: the account's workspace, or the daemon's directory when
    /// none is configured.
    pub fn cwd(&self) -> String {
        self.workspace
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"))
            .to_string_lossy()
            .into_owned()
    }
}

impl std::fmt::Debug for TurnRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnRequest")
            .field("session", &self.session)
            .field("prompt_chars", &self.prompt.chars().count())
            .field("no_tools", &self.no_tools)
            .field("auto_approve", &self.auto_approve)
            .field("asks", &self.approver.is_some())
            .field("attachments", &self.attachments.len())
            .finish()
    }
}

/// Model token usage of one turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the prompt (history included).
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
    /// True when the server reported none and these are estimates from text length.
    pub estimated: bool,
}

/// The agent's answer to one turn.
#[derive(Clone, Default)]
pub struct TurnOutput {
    /// The complete answer text.
    pub text: String,
    /// Token usage, when known.
    pub usage: Option<Usage>,
    /// Files the backend handed back in its own attachment form, as paths it named (relative to
    /// the workspace or absolute); the pipeline checks each is inside the workspace before sending.
    pub files: Vec<PathBuf>,
    /// What the backend keeps of the turn (its history), stored with the answer.
    pub keep: Keep,
}

/// How a turn failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentErrorKind {
    /// The agent is not reachable or overloaded (connection refused, 5xx, 429, dead child):
    /// the message is kept and retried later.
    Unavailable,
    /// The agent refused our credentials (401/403): the owner is told; status shows it.
    Auth,
    /// The turn was cancelled (`/stop`, shutdown).
    Cancelled,
    /// This turn failed for a reason retrying will not fix (bad request, the agent's own error).
    Failed,
    /// The agent stopped while answering this message: its process ended (it exited, or wrote
    /// a line that cannot be read) or it sent nothing for the idle timeout. Kept and retried like
    /// `Unavailable`, but the message may be what ends it, so the pipeline gives it up after a
    /// few such ends instead of blocking the chat behind it.
    Ended,
}

/// A failed turn, with a message for people (never the prompt or answer text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentError {
    /// What kind of failure.
    pub kind: AgentErrorKind,
    /// For people: what failed.
    pub message: String,
    /// The agent asked us to wait this long before trying again.
    pub retry_after: Option<Duration>,
}

impl AgentError {
    /// An error of `kind`.
    pub fn new(kind: AgentErrorKind, message: impl Into<String>) -> Self {
        AgentError {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// An agent backend. Implementations keep per-session state (history, child processes) themselves.
pub trait Agent: Send + Sync + 'static {
    /// Answers one prompt. Returns promptly with `Cancelled` when `cancel` fires.
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>>;

    /// Forgets the session's history (`/new`).
    fn reset<'a>(&'a self, session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>>;

    /// Releases everything (child processes, connections) at shutdown.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Which backend and model this is, whether it can work, the fixes for its failures, and how
    /// much of a message it is handed; asked once, when the pipeline starts.
    fn describe(&self) -> AgentInfo {
        AgentInfo::new("custom")
    }

    /// The agent processes the backend runs, for status (`acp`); `None` when it runs none.
    fn processes(&self) -> Option<crate::protocol::AgentProcesses> {
        None
    }
}

/// Builds the backend `[agent]` selects; the error says which setting is missing or wrong.
///
/// The store keeps the `openai` backend's history; the `scv` server keeps its own.
pub fn from_config(cfg: &AgentConfig, store: Store) -> Result<Arc<dyn Agent>, String> {
    configure(cfg, store).map_err(|p| p.message)
}

/// [`from_config`], or when `[agent]` cannot work, an [`Unconfigured`] stand-in that says why
/// (logged once here, in status from the start, and to the owner on the first message).
pub fn build(cfg: &AgentConfig, store: Store) -> Arc<dyn Agent> {
    configure(cfg, store).unwrap_or_else(|problem| {
        tracing::error!(reason = %problem, "the agent backend is not usable; chats will report it");
        Arc::new(Unconfigured::new(cfg, problem))
    })
}

fn configure(cfg: &AgentConfig, store: Store) -> Result<Arc<dyn Agent>, ConfigProblem> {
    match cfg.backend {
        AgentBackend::Openai => {
            let opts = OpenAiOptions::configure(cfg)?;
            let agent = OpenAiAgent::new(opts, store).map_err(|e| {
                ConfigProblem::new(
                    e,
                    "restart the daemon; if this stays, report it with the daemon's log",
                )
            })?;
            Ok(Arc::new(agent))
        }
        AgentBackend::Scv => Ok(Arc::new(ScvAgent::new(ScvOptions::configure(cfg)?))),
        AgentBackend::Acp => {
            // The group records of agent processes live next to the database.
            let state_dir = store.path().parent().map(std::path::Path::to_path_buf);
            // Before any agent of ours starts: what a killed bridge left running goes now.
            if let Some(dir) = &state_dir {
                acp::process::reap_records(dir);
            }
            let opts = AcpOptions::configure(cfg, state_dir)?;
            Ok(Arc::new(AcpAgent::new(opts, Some(store))))
        }
    }
}
