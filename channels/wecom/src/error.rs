//! The crate's one error type. Each variant says what failed; `Error::class`, kept beside the
//! one table in `classify` (which imports this file, not the other way), says what the caller
//! does about it.

use std::time::Duration;

/// Anything that can go wrong talking to WeCom. Messages never carry message text or secrets.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A response frame with a non-zero `errcode` (§5). Decide by the code, never by `errmsg`.
    #[error("wecom {cmd}: refused with errcode {code} ({errmsg})")]
    Platform {
        /// The command that was refused.
        cmd: &'static str,
        /// The platform's code.
        code: i64,
        /// The platform's words, for the operator's log.
        errmsg: String,
    },
    /// No response in time: the frame may or may not have been delivered (§5, last row).
    #[error("wecom {cmd}: no answer within {after:?}; it may or may not have arrived")]
    AckTimeout {
        /// The command.
        cmd: &'static str,
        /// The wait that ran out.
        after: Duration,
    },
    /// The socket ended while the command waited for its answer (§1.6): outcome unknown.
    #[error("wecom {cmd}: the connection ended before the answer came")]
    ConnectionLost {
        /// The command.
        cmd: &'static str,
    },
    /// No subscribed connection to send on; nothing was sent.
    #[error("wecom {cmd}: not connected (the long connection is down or not subscribed yet)")]
    NotConnected {
        /// The command.
        cmd: &'static str,
    },
    /// Dialling, the socket, or an HTTP download failed below the protocol.
    #[error("wecom network error: {0}")]
    Network(String),
    /// The server closed the long connection.
    #[error("wecom closed the long connection")]
    Closed,
    /// Pings went unanswered: the link is dead (§1.4).
    #[error("wecom stopped answering pings ({missed} in a row); reconnecting")]
    Stalled {
        /// Unanswered pings.
        missed: u32,
    },
    /// Another connection subscribed as this bot and the platform dropped this one (§1.5).
    #[error(
        "another program took this WeCom bot over its long connection (disconnected_event); this one stopped and will not reconnect"
    )]
    Superseded,
    /// Subscribe refused the bot id or secret (§5).
    #[error("wecom refused the bot id or secret (errcode {code}, {errmsg})")]
    CredentialsInvalid {
        /// The last refusal's code.
        code: i64,
        /// The platform's words.
        errmsg: String,
    },
    /// An HTTP download answered with a non-2xx status (404 = the URL expired).
    #[error("wecom media download: HTTP {status}")]
    Http {
        /// The status.
        status: u16,
    },
    /// A response or a media body is not what the protocol says.
    #[error("wecom: unexpected data: {0}")]
    Decode(String),
    /// A media item whose key or bytes do not decrypt: it can never be read.
    #[error("wecom media cannot be decrypted: {0}")]
    BadMedia(String),
    /// Over a size limit (the platform's or the caller's cap); nothing was sent or kept.
    #[error("wecom: {what} is larger than the {limit}-byte limit")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The caller asked for something the platform refuses (checked before sending).
    #[error("wecom: invalid request: {0}")]
    Invalid(String),
    /// A reply handle's window has passed; nothing was sent (§4.2).
    #[error("wecom {cmd}: the reply window of this message has passed")]
    WindowClosed {
        /// The command that would have been sent.
        cmd: &'static str,
    },
    /// The configured URL cannot be used.
    #[error("wecom: invalid URL {url:?}: {detail}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// Why.
        detail: String,
    },
}

impl Error {
    /// The platform code, if the platform answered with one.
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Platform { code, .. } | Error::CredentialsInvalid { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the frame may have reached the platform although no success came back
    /// (ack timeout, connection lost after writing). A finish frame in this state must not be
    /// resent blindly (§5): record it as indeterminate.
    pub fn outcome_unknown(&self) -> bool {
        matches!(
            self,
            Error::AckTimeout { .. } | Error::ConnectionLost { .. }
        )
    }
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Self {
        // Drop the URL: media URLs are capabilities.
        Error::Network(scv_net::transport(&e.without_url()))
    }
}
