//! The daemon's status report: `DaemonStatus`, `ComponentHealth`, `AgentHealth`, `MailCounts`,
//! `ConfirmInfo`.
//!
//! Fields beyond `daemon-protocol.md` are marked "Extension": each is optional (omitted when
//! absent, defaulted when missing), so old clients ignore them (the spec ignores unknown fields)
//! and new clients read old daemons. `ComponentHealth` carries the run error's stable `code`, the
//! fix as words (`action`) and as the exact `command` to copy, and the `notes` apart from errors;
//! `error` stays as the spec says (run error and notes joined), for old clients.

use serde::{Deserialize, Serialize};

/// Everything `daemon.status` carries: the daemon and one health entry per account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonStatus {
    /// The daemon's release.
    pub version: String,
    /// The daemon's process id.
    pub pid: u32,
    /// One entry per configured account, sorted by id.
    #[serde(default)]
    pub components: Vec<ComponentHealth>,
    /// Always the default for the bridge (it runs no delegations).
    #[serde(default)]
    pub delegations: DelegationSummary,
    /// A pending daemon restart; the bridge never sends one (boxed, as `project`, so the
    /// events that carry a status stay small).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<Box<serde_json::Value>>,
    /// Present only in answers to `confirm_ask` / `confirm_status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<ConfirmInfo>,
    /// Project information; the bridge never sends one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<Box<serde_json::Value>>,
    /// Extension: the agent's health. Omitted by a daemon without a conversation pipeline and in
    /// confirm answers; clients that do not know it ignore it (unknown fields are ignored).
    /// Boxed so every event that carries a status stays small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Box<AgentHealth>>,
    /// Extension: each named agent's health (`[agents.NAME]`), by name; `agent` is the one
    /// named `default`. Omitted when there are none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub agents: std::collections::BTreeMap<String, AgentHealth>,
    /// Extension: what a `reload`, `channel_set`, `channel_reset` or `channel_logout` did to the
    /// accounts; omitted in every other answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload: Option<Box<ReloadSummary>>,
    /// Extension: where the web console is served; omitted when it is off and in confirm
    /// answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console: Option<Box<ConsoleStatus>>,
    /// Extension: the bridge's own messages to the owner by delivery state; omitted by a
    /// daemon without a conversation pipeline and in answers to confirm and send requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Box<super::DeliveryCounts>>,
    /// Extension: only in answers to `send`, `send_status` and `send_cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<Box<super::SendInfo>>,
    /// Extension: the speech server (`[speech]`); omitted by a daemon without a conversation
    /// pipeline and in confirm answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech: Option<Box<SpeechHealth>>,
}

/// Extension: the speech server as `status` shows it. Made by `speech::Speech::health`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpeechHealth {
    /// `ok`, `failing`, `not_configured`, or `unused` (configured, not called yet).
    pub state: String,
    /// The transcription model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When a call last succeeded.
    #[serde(default)]
    pub last_success_unix_seconds: Option<u64>,
    /// What the last failed call said, for people; never audio or a transcript.
    #[serde(default)]
    pub error: Option<String>,
    /// The step that fixes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// Extension: the web console as `status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleStatus {
    /// The address it listens on (`console_listen`).
    pub listen: String,
    /// A warning for people when it listens beyond this machine (a non-loopback address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The one-time login link; only in the answer to `console_link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl DaemonStatus {
    /// A status of daemon `version` (process `pid`) with no accounts and no extensions, for
    /// the daemon and clients to fill in.
    pub fn new(version: impl Into<String>, pid: u32) -> Self {
        DaemonStatus {
            version: version.into(),
            pid,
            components: Vec::new(),
            delegations: DelegationSummary::default(),
            restart: None,
            confirm: None,
            project: None,
            agent: None,
            agents: std::collections::BTreeMap::new(),
            reload: None,
            console: None,
            deliveries: None,
            send: None,
            speech: None,
        }
    }
}

/// Extension: the accounts one reconcile started, stopped and restarted, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadSummary {
    /// Started for the first time.
    #[serde(default)]
    pub started: Vec<String>,
    /// Stopped and removed (no longer configured).
    #[serde(default)]
    pub stopped: Vec<String>,
    /// Stopped and started again: changed settings or credentials, or they had failed.
    #[serde(default)]
    pub restarted: Vec<String>,
    /// Did not stop within the grace period and were abandoned.
    #[serde(default)]
    pub abandoned: Vec<String>,
}

impl ReloadSummary {
    /// One line for people: "started feishu:work; restarted wechat:phone", or "nothing changed".
    pub fn describe(&self) -> String {
        let parts: Vec<String> = [
            ("started", &self.started),
            ("restarted", &self.restarted),
            ("stopped", &self.stopped),
            ("abandoned while stopping", &self.abandoned),
        ]
        .into_iter()
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(what, ids)| format!("{what} {}", ids.join(", ")))
        .collect();
        if parts.is_empty() {
            "nothing changed".to_string()
        } else {
            parts.join("; ")
        }
    }
}

/// Extension: the health of the agent every chat is answered by (one per daemon).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentHealth {
    /// `openai` or `scv` (`[agent] backend`).
    pub backend: String,
    /// The model name, when the backend has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether it can answer.
    pub state: AgentState,
    /// When a turn last got an answer (null: not since the daemon started).
    #[serde(default)]
    pub last_success_unix_seconds: Option<u64>,
    /// Why it is not configured or what the last failed turn said, for people; never a secret.
    #[serde(default)]
    pub error: Option<String>,
    /// The step that fixes it, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The agent processes the bridge runs (`acp`); absent for backends without a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<AgentProcesses>,
}

/// Extension: the agent processes an `acp` backend runs, made by the backend for status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentProcesses {
    /// Processes running now (one per account that has talked to the agent).
    #[serde(default)]
    pub running: u64,
    /// The agent's name and version from `initialize` (`codex-acp 0.16.0`), once one started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Chat sessions open.
    #[serde(default)]
    pub sessions: u64,
    /// The last failure (a crash with its stderr tail, a refused start), for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Whether the agent can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// Configured, and the last turn (if any) was answered.
    Ok,
    /// `[agent]` cannot work as written (known at start); nothing is answered until it is fixed.
    NotConfigured,
    /// The last turn failed; messages are kept and retried until the next answer.
    Failing,
    /// A state this client does not know (a newer daemon).
    #[serde(other)]
    Unknown,
}

impl AgentState {
    /// The words the status table prints.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Ok => "ok",
            AgentState::NotConfigured => "not configured",
            AgentState::Failing => "failing",
            AgentState::Unknown => "unknown",
        }
    }
}

/// Counts of delegated tasks; the bridge always reports zeros.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationSummary {
    /// Delegations running now.
    #[serde(default)]
    pub active: u64,
    /// Delegations finished and collected.
    #[serde(default)]
    pub reaped: u64,
}

/// The health of one channel account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentHealth {
    /// `<channel>:<account>`, e.g. `wechat:phone`.
    pub id: String,
    /// `wechat`, `feishu` or `mail`; "" when absent.
    #[serde(default)]
    pub channel: String,
    /// The account name in the configuration.
    #[serde(default)]
    pub account: String,
    /// The platform's ID of the bot account, when known.
    #[serde(default)]
    pub bot_id: Option<String>,
    /// The platform's ID of the account's owner, when known.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Whether the account should run.
    #[serde(default)]
    pub enabled: bool,
    /// Where the account is in its lifecycle.
    pub state: ComponentState,
    /// When the platform last answered successfully.
    #[serde(default)]
    pub last_success_unix_seconds: Option<u64>,
    /// The latest error, for people; never a secret.
    #[serde(default)]
    pub error: Option<String>,
    /// Restarts since the daemon started: drops of a connection that was up (attempts that never
    /// connected only grow the backoff and are not counted).
    #[serde(default)]
    pub restarts: u64,
    /// The effective tool grant (`owner` only when set so and the owner is known).
    #[serde(default)]
    pub remote_tools: RemoteTools,
    /// Who the account answers, as set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub senders: Option<Senders>,
    /// `mail` for chats that carry mail reports; omitted for ordinary chats and mail accounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<Purpose>,
    /// Mail counters; email accounts only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<MailCounts>,
    /// Extension: when the account entered its current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_unix_seconds: Option<u64>,
    /// Extension: when the next restart is due (state `backoff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_unix_seconds: Option<u64>,
    /// Extension: restarts in the last hour (the restart budget counts these).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarts_last_hour: Option<u64>,
    /// Extension: the one thing a person can do to fix a `failed` account, in words, with the
    /// command in backticks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Extension: the stable machine code of the run error (`wechat.session_expired`,
    /// `network`; listed in ARCHITECTURE.md); omitted when there is no run error. `error`
    /// stays the text for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Extension: the exact command `action` asks for, ready to copy
    /// (`scv-bridge login wechat phone`, with `--config FILE` when needed); omitted when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Extension: notes that are not failures (no owner paired, sends waiting, the agent
    /// failing), one per source. `error` still joins them after the run error, for old clients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<HealthNote>,
    /// Extension: settings changed at run time that differ from the configuration file, for
    /// people ("remote_tools: owner (set at run time; the file says none)"); omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// Extension: messages this account received and did not answer since the daemon started,
    /// by reason (`not_owner`, `duplicate`, `redelivered_copy`, ...; the same reasons as the
    /// metrics page's `messages_dropped`); omitted when none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dropped: std::collections::BTreeMap<String, u64>,
}

impl ComponentHealth {
    /// A fresh entry for an account that has not started yet.
    pub fn new(channel: &str, account: &str, enabled: bool) -> Self {
        ComponentHealth {
            id: format!("{channel}:{account}"),
            channel: channel.to_string(),
            account: account.to_string(),
            bot_id: None,
            user_id: None,
            enabled,
            state: if enabled {
                ComponentState::Starting
            } else {
                ComponentState::Disabled
            },
            last_success_unix_seconds: None,
            error: None,
            restarts: 0,
            remote_tools: RemoteTools::None,
            senders: None,
            purpose: None,
            mail: None,
            since_unix_seconds: None,
            next_retry_unix_seconds: None,
            restarts_last_hour: None,
            action: None,
            code: None,
            command: None,
            notes: Vec::new(),
            overrides: Vec::new(),
            dropped: Default::default(),
        }
    }
}

/// Extension: one note on an account's health, apart from its errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthNote {
    /// Which part of the daemon keeps the note.
    pub source: NoteSource,
    /// The note, for people; never a secret or message text.
    pub text: String,
}

/// Where a health note comes from; each source keeps its own note, so one clearing its note never
/// erases another's. Notes are shown after the run error, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteSource {
    /// The platform side of the account (e.g. no owner paired yet).
    Account,
    /// The send path: replies failing, throttled or waiting for a window.
    Sends,
    /// The agent behind the conversation.
    Agent,
    /// Confirm questions waiting for a way to reach the owner.
    Confirm,
    /// The stored login (e.g. the same bot logged in to from another account).
    Login,
    /// The state store (e.g. the disk is full, so no new input is taken).
    Store,
    /// Media the owner sent, downloading for a while (the chat's next messages wait for it).
    Media,
    /// Feishu's streaming cards (e.g. CardKit refused them, so answers go out whole).
    Cards,
    /// A source this client does not know (a newer daemon).
    #[serde(other)]
    Unknown,
}

/// The lifecycle state of an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentState {
    /// Off in the configuration.
    Disabled,
    /// Starting up, not yet connected.
    Starting,
    /// Running and connected to its platform.
    Connected,
    /// Running, not connected.
    Disconnected,
    /// Waiting before a restart after a failure.
    Backoff,
    /// Shutting down.
    Stopping,
    /// Shut down.
    Stopped,
    /// Stopped after an error it cannot recover from; not restarted until config or credentials change.
    Failed,
    /// A state this client does not know (a newer daemon).
    #[serde(other)]
    Unknown,
}

impl ComponentState {
    /// The snake_case spelling used on the wire and in the status table.
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentState::Disabled => "disabled",
            ComponentState::Starting => "starting",
            ComponentState::Connected => "connected",
            ComponentState::Disconnected => "disconnected",
            ComponentState::Backoff => "backoff",
            ComponentState::Stopping => "stopping",
            ComponentState::Stopped => "stopped",
            ComponentState::Failed => "failed",
            ComponentState::Unknown => "unknown",
        }
    }
}

/// Who an account answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Senders {
    /// Only the authenticated owner (the default).
    #[default]
    Owner,
    /// Anyone who can reach the bot; everyone but the owner stays tool-free.
    Anyone,
}

/// Who may use tools through an account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteTools {
    /// Every remote session is tool-free (the default).
    #[default]
    None,
    /// The authenticated owner gets full, auto-approved tools.
    Owner,
}

/// What a chat account is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// Conversations with a model (the default).
    #[default]
    Chat,
    /// Carries only mail reports; no model, no tools, never logged.
    Mail,
}

/// Mail counters of an email account; counts only, never mail text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MailCounts {
    /// Mail claimed and not yet decided.
    pub claimed: u64,
    /// Report items waiting to be sent to the mail chat.
    pub queued: u64,
    /// Mail decided today (the account's local day).
    pub seen_today: u64,
    /// Of those, mail a model triaged.
    pub triaged_today: u64,
    /// Of those, mail reported to the owner.
    pub reported_today: u64,
    /// Model tokens spent today.
    pub tokens_today: u64,
    /// The daily token budget.
    pub token_budget: u64,
    /// Digest messages sent to the mail chat in the last 24 hours.
    pub messages_24h: u64,
    /// When the mailbox was last checked.
    pub last_check_unix_seconds: Option<u64>,
}

/// Where one confirm question stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmInfo {
    /// The question's id.
    pub id: String,
    /// Its state.
    pub state: ConfirmState,
    /// `<channel>:<account>` whose owner was asked.
    pub chat: String,
    /// When no answer counts as no.
    pub deadline_unix_seconds: u64,
    /// Extension: why a `failed` question failed, for people; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The state of a confirm question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmState {
    /// Sent, or being stored for sending; waiting.
    Pending,
    /// The owner said yes.
    Yes,
    /// The owner said no.
    No,
    /// No answer before the deadline (counts as no).
    Expired,
    /// Nobody asked about it for a minute.
    Withdrawn,
    /// Could not be handed to the chat, or its answer was lost.
    Failed,
    /// A state this client does not know.
    #[serde(other)]
    Unknown,
}
