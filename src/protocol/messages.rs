//! Client messages, server events and the `daemon.control` commands.

use serde::{Deserialize, Serialize};

use super::status::{DaemonStatus, Purpose, RemoteTools, Senders};

/// The protocol version this daemon speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A program's name and version, exchanged in `initialize` / `initialized`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    /// The program's name.
    pub name: String,
    /// The program's version.
    pub version: String,
}

/// A message from a client, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ClientMessage {
    /// Say hello and agree on the protocol version.
    #[serde(rename = "initialize")]
    Initialize {
        /// Echoed in the answer.
        request_id: String,
        /// The client's protocol version.
        protocol_version: u32,
        /// Who the client is.
        client: PeerInfo,
    },
    /// Ask the daemon to do something.
    #[serde(rename = "daemon.control")]
    DaemonControl {
        /// Echoed in the answer.
        request_id: String,
        /// What to do.
        command: DaemonCommand,
    },
}

/// An event from the server, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ServerEvent {
    /// The answer to `initialize`.
    #[serde(rename = "initialized")]
    Initialized {
        /// The request this answers.
        request_id: String,
        /// The server's protocol version.
        protocol_version: u32,
        /// Who the server is.
        server: PeerInfo,
    },
    /// The answer to a successful `daemon.control`.
    #[serde(rename = "daemon.status")]
    DaemonStatus {
        /// The request this answers.
        request_id: String,
        /// The daemon's status (boxed: it is by far the largest event).
        status: Box<DaemonStatus>,
    },
    /// Something went wrong.
    #[serde(rename = "error")]
    Error {
        /// The request this answers; omitted when none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// A stable code.
        code: ErrorCode,
        /// For people.
        message: String,
        /// The connection is unusable after it.
        fatal: bool,
    },
}

impl ServerEvent {
    /// An `error` event.
    pub fn error(
        request_id: Option<String>,
        code: ErrorCode,
        message: impl Into<String>,
        fatal: bool,
    ) -> Self {
        ServerEvent::Error {
            request_id,
            code,
            message: message.into(),
            fatal,
        }
    }
}

/// Stable error codes of `error` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request is malformed or its values are out of range.
    InvalidRequest,
    /// The bridge does not serve this request.
    Unsupported,
    /// The named thing does not exist.
    NotFound,
    /// The request conflicts with the current state.
    Conflict,
    /// The daemon cannot do it now.
    Unavailable,
    /// A bug or an unexpected failure inside the daemon.
    Internal,
    /// A code this client does not know.
    #[serde(other)]
    Unknown,
}

/// The command inside `daemon.control`, tagged by `action`.
///
/// Additions to `daemon-protocol.md` (both additive; an old client keeps working):
/// - `channel_set`'s `enabled` is optional. Absent keeps the saved value, else the file's; old
///   clients that always send it still enable or disable. A value equal to the file's is not
///   kept as a run-time setting, so the file decides again from then on.
/// - `channel_reset` (`channel`, `account`) forgets every run-time setting of one configured
///   account (`channel_set`, `enable`, `disable`): it runs as its file table says again.
/// - `console_link` makes a one-time login link to the web console; the answer's `console`
///   carries it (an old daemon answers `unsupported`, as for any action it does not know).
///
/// `channel_set` and `channel_reset` of an account that is not in the configuration answer
/// `not_found`, naming the closest configured account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum DaemonCommand {
    /// Report the daemon's status.
    Status,
    /// Reread the configuration and reconcile the components.
    Reload,
    /// Enable or disable one account and change its settings; persisted.
    ChannelSet {
        /// `wechat`, `feishu` or `mail`.
        channel: String,
        /// The account name.
        account: String,
        /// Whether the account should run; omitted keeps the saved (else the file's) value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        enabled: Option<bool>,
        /// A new workspace; null keeps the saved one.
        #[serde(default)]
        workspace: Option<String>,
        /// A new tool grant; omitted keeps the saved one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remote_tools: Option<RemoteTools>,
        /// Who to answer; omitted keeps the saved one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        senders: Option<Senders>,
        /// The chat's purpose; omitted keeps the saved one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        purpose: Option<Purpose>,
    },
    /// Forget one account's run-time settings; it runs as the configuration file says.
    ChannelReset {
        /// `wechat`, `feishu` or `mail`.
        channel: String,
        /// The account name.
        account: String,
    },
    /// Stop the account and remove its credentials and its state.
    ChannelLogout {
        /// `wechat`, `feishu` or `mail`.
        channel: String,
        /// The account name.
        account: String,
    },
    /// Ask the owner a yes/no question.
    ConfirmAsk {
        /// The question, for people.
        question: String,
        /// `<channel>:<account>:<chat>` of the chat that started the work.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
        /// How long to wait (default 1800, at most 14400).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_seconds: Option<u64>,
    },
    /// Report where a question stands (and keep it alive).
    ConfirmStatus {
        /// The question's id.
        id: String,
    },
    /// Make a one-time login link to the web console (`scv-bridge console`).
    ConsoleLink,
    /// Extension: send a text to the owner now or later (`scv-bridge send`); the answer's
    /// `send` names it.
    Send {
        /// The text, as the owner will read it.
        text: String,
        /// `<channel>:<account>` (that account's owner chat) or `<channel>:<account>:<chat>`;
        /// omitted: the `notify` account's owner.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        /// When, in the daemon's `timezone` (`2026-03-08 09:00`, `09:00`: its next
        /// occurrence) or with an offset (RFC 3339); omitted with `in_seconds`: now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<String>,
        /// In how many seconds; not with `at`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_seconds: Option<u64>,
        /// Files to send with (or without) the text: absolute paths inside a configured
        /// account's workspace (an old daemon ignores the field; a new one checks each).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
    },
    /// Extension: report where a `send` stands.
    SendStatus {
        /// The send's id.
        id: String,
    },
    /// Extension: cancel a scheduled `send` that is not yet due (`conflict` once it is queued).
    SendCancel {
        /// The send's id.
        id: String,
    },
    /// Not served by the bridge.
    Delegations,
    /// Not served by the bridge.
    DelegationKill,
    /// Not served by the bridge.
    RestartWhenIdle,
    /// Any other action (`project_*` and future ones): not served by the bridge.
    #[serde(other)]
    Other,
}
