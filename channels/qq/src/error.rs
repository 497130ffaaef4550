//! The one error type of the crate. Each variant says what failed; `Error::class`, kept beside
//! the one table in `classify` (which imports this file, not the other way), says what the
//! caller does about it. Texts never carry message content, tokens or secrets: only call names,
//! codes and the platform's own `message`.

use std::fmt;
use std::time::Duration;

/// Which call failed; printed in errors and logs. Stable names: the daemon may show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// `POST /app/getAppAccessToken`.
    Token,
    /// `GET /users/@me`.
    Me,
    /// `GET /gateway/bot`.
    Gateway,
    /// The gateway WebSocket itself.
    Socket,
    /// `POST /v2/users/{openid}/messages`.
    SendC2c,
    /// `POST /v2/groups/{group_openid}/messages`.
    SendGroup,
    /// `POST /v2/{users|groups}/…/files`.
    Upload,
    /// `PUT /interactions/{id}`.
    Interaction,
    /// `GET` of an inbound attachment URL.
    Download,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Call::Token => "getAppAccessToken",
            Call::Me => "users/@me",
            Call::Gateway => "gateway/bot",
            Call::Socket => "gateway socket",
            Call::SendC2c => "send (C2C)",
            Call::SendGroup => "send (group)",
            Call::Upload => "upload media",
            Call::Interaction => "acknowledge button click",
            Call::Download => "download attachment",
        })
    }
}

/// A failed QQ call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request never got an answer (connect, TLS, reset).
    #[error("qq {call}: network error: {detail}")]
    Network {
        /// The call.
        call: Call,
        /// The transport's words (no URL: attachment URLs carry access keys).
        detail: String,
    },
    /// Our client timeout fired; a send may still have gone out (§4.2).
    #[error("qq {call}: no answer within {after:?}")]
    Timeout {
        /// The call.
        call: Call,
        /// The timeout.
        after: Duration,
    },
    /// The platform refused: a non-2xx status or a body with an error `code` (201/202 "async
    /// success" with an error body counts: the message was not delivered, §6).
    #[error("qq {call}: refused (HTTP {http_status}, code {code}): {message:?}")]
    Api {
        /// The call.
        call: Call,
        /// HTTP status.
        http_status: u16,
        /// Business code (`code`, else `err_code`; 0 when the body had none).
        code: i64,
        /// The platform's `message`, cut to 200 characters.
        message: String,
        /// For a rate-limit signal: how long to hold (the client's 1 s doubling to 60 s, since
        /// the platform documents no `retry_after`).
        retry_after: Option<Duration>,
    },
    /// The token endpoint gave no `access_token` (bad AppID/AppSecret, or its own failure).
    #[error("qq getAppAccessToken: no token (code {code}): {message:?}")]
    Token {
        /// `code` from the body (100007 bad appid, 100016 bad secret, 100002 internal error).
        code: i64,
        /// The platform's `message`.
        message: String,
    },
    /// A body that is not the documented JSON.
    #[error("qq {call}: malformed response: {detail}")]
    Malformed {
        /// The call.
        call: Call,
        /// What was wrong (never the body itself).
        detail: String,
    },
    /// The gateway closed the socket with this close code (0: no close frame, a dropped link).
    #[error("qq gateway closed the connection with code {code}")]
    GatewayClosed {
        /// The WebSocket close code (§1.3 table).
        code: u16,
    },
    /// Two heartbeats went out and the first was never acknowledged: a zombie link.
    #[error("qq gateway: no heartbeat ACK within {0:?}; reconnecting")]
    HeartbeatLost(Duration),
    /// `/gateway/bot` says no session starts are left today (§1.3).
    #[error("qq gateway: session start limit reached; next start in {reset_after:?}")]
    SessionLimit {
        /// When starts are available again.
        reset_after: Duration,
    },
    /// Over a size limit (ours or the platform's); nothing was sent or kept.
    #[error("qq {call}: over the size limit ({limit} bytes, or characters for text)")]
    TooLarge {
        /// The call.
        call: Call,
        /// The limit exceeded (bytes, or characters for text).
        limit: u64,
    },
    /// The caller asked for something the platform cannot do; not sent.
    #[error("qq {call}: invalid request: {detail}")]
    Invalid {
        /// The call.
        call: Call,
        /// What was wrong.
        detail: &'static str,
    },
}

impl Error {
    /// The business code, when the platform gave one.
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Api { code, .. } | Error::Token { code, .. } => Some(*code),
            Error::GatewayClosed { code } => Some(i64::from(*code)),
            _ => None,
        }
    }

    /// A transport failure of `call`, without the URL (attachment and gateway URLs may carry
    /// access keys).
    pub(crate) fn network(call: Call, e: reqwest::Error) -> Self {
        if e.is_timeout() {
            return Error::Timeout {
                call,
                after: crate::limits::API_TIMEOUT,
            };
        }
        Error::Network {
            call,
            detail: scv_net::transport(&e.without_url()),
        }
    }
}
