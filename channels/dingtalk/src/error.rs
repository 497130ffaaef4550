//! The crate's one error type. Each variant says what failed; [`Error::class`] (the table in
//! [`crate::classify`](mod@crate::classify)) says what the caller does about it. No variant
//! carries message text, a secret or a response body: only codes and the platform's own short
//! message.

use std::time::Duration;

use crate::call::Call;

/// Why an HTTP 200 still means "not sent" (spec §4.3, §4.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSent {
    /// The recipient is in `flowControlledStaffIdList`: throttled, retry later.
    FlowControlled,
    /// The recipient is in `invalidStaffIdList`: never deliverable.
    InvalidRecipient,
    /// The recipient is in `filteredStaffIdList` (e.g. outside the app's visibility scope).
    Filtered,
    /// `success:false` on another call (the typing reaction).
    Refused {
        /// What the answer said.
        detail: String,
    },
    /// `success:false` on a card call, or a `deliverResults[].success:false`.
    CardRefused {
        /// The platform's `errorMsg`, if any.
        detail: String,
    },
}

/// A failed call or a refused input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Connect, TLS, reset, DNS: the request got no answer.
    #[error("dingtalk {call}: network error: {detail}")]
    Network {
        /// The call.
        call: Call,
        /// The innermost cause, without the URL (it may carry a ticket or session key).
        detail: String,
        /// The connection was never made, so nothing was sent.
        unsent: bool,
    },
    /// Our client timeout fired.
    #[error("dingtalk {call}: no answer within {after:?}")]
    Timeout {
        /// The call.
        call: Call,
        /// The timeout that fired.
        after: Duration,
    },
    /// A new-API error: HTTP 4xx/5xx with `{code, message}` (spec §0).
    #[error("dingtalk {call}: HTTP {status} {code}: {message}")]
    Api {
        /// The call.
        call: Call,
        /// HTTP status.
        status: u16,
        /// The string `code`, e.g. `Forbidden.AccessDenied.QpsLimitForApi`.
        code: String,
        /// The platform's `message`.
        message: String,
        /// `accessdenieddetail.requiredScopes` of a permission refusal: what to add in the console.
        required_scopes: Vec<String>,
        /// `Retry-After`, when a gateway sent one.
        retry_after: Option<Duration>,
    },
    /// An old-API or session-webhook refusal: HTTP 200 with `errcode != 0`.
    #[error("dingtalk {call}: errcode {errcode}: {errmsg}")]
    Errcode {
        /// The call.
        call: Call,
        /// `errcode`.
        errcode: i64,
        /// `errmsg`.
        errmsg: String,
    },
    /// HTTP 200 that is not success (spec §4.3, §4.6).
    #[error("dingtalk {call}: accepted but not sent: {reason:?}")]
    NotSent {
        /// The call.
        call: Call,
        /// Why.
        reason: NotSent,
    },
    /// A non-2xx answer without the platform's JSON (a proxy page, an expired download URL).
    #[error("dingtalk {call}: HTTP {status}")]
    Http {
        /// The call.
        call: Call,
        /// HTTP status.
        status: u16,
        /// `Retry-After`, when sent.
        retry_after: Option<Duration>,
    },
    /// A 2xx answer that is not the documented shape.
    #[error("dingtalk {call}: unexpected response: {detail}")]
    Malformed {
        /// The call.
        call: Call,
        /// What was wrong (never the body).
        detail: String,
    },
    /// The session webhook has expired (locally by its time, or errcode 300001): send
    /// through the robot API instead (spec §4.2).
    #[error("dingtalk: the session webhook has expired; send through the robot API")]
    WebhookExpired,
    /// The WebSocket upgrade was refused after a good `connections/open` (spec §1.4).
    #[error("dingtalk stream: handshake refused with HTTP {status}")]
    Handshake {
        /// HTTP status of the refusal.
        status: u16,
    },
    /// The WebSocket failed after the handshake (including an oversized frame).
    #[error("dingtalk stream: WebSocket error: {0}")]
    WebSocket(String),
    /// The server closed the socket.
    #[error("dingtalk stream: the server closed the connection")]
    Closed,
    /// No frame of any kind for this long: a zombie socket (spec §1.8).
    #[error("dingtalk stream: no frame for {0:?}; reconnecting")]
    Idle(Duration),
    /// Our WebSocket ping got no pong in time.
    #[error("dingtalk stream: no pong within {0:?}; reconnecting")]
    PongMissing(Duration),
    /// An input over a size limit (the platform's or the caller's); nothing was sent or kept.
    #[error("dingtalk: {what} is larger than the {limit}-byte limit")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A request this client refuses to send (bad input from the caller).
    #[error("dingtalk: invalid request: {0}")]
    Invalid(String),
    /// Reading or writing a local media file failed.
    #[error("dingtalk: media file error: {0}")]
    Io(String),
}

impl Error {
    /// Whether DingTalk may have acted on the call although no success came back: a timeout,
    /// a connection lost after the request left, a 5xx or an answer of an unexpected shape. A
    /// refused connection, a refusal in the body and local checks are known outcomes.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Timeout { .. } | Error::Malformed { .. } => true,
            Error::Network { unsent, .. } => !unsent,
            Error::Api { status, .. } | Error::Http { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The call that failed, when there was one.
    pub fn call(&self) -> Option<Call> {
        match self {
            Error::Network { call, .. }
            | Error::Timeout { call, .. }
            | Error::Api { call, .. }
            | Error::Errcode { call, .. }
            | Error::NotSent { call, .. }
            | Error::Http { call, .. }
            | Error::Malformed { call, .. } => Some(*call),
            Error::WebhookExpired => Some(Call::SessionWebhook),
            Error::Handshake { .. }
            | Error::WebSocket(_)
            | Error::Closed
            | Error::Idle(_)
            | Error::PongMissing(_) => Some(Call::Stream),
            Error::TooLarge { .. } | Error::Invalid(_) | Error::Io(_) => None,
        }
    }

    /// True when the access token was refused (spec §5): drop it, fetch a new one, retry once.
    pub fn is_token_invalid(&self) -> bool {
        match self {
            Error::Api { code, status, .. } => {
                (*status == 400 || *status == 401) && code == "InvalidAuthentication"
            }
            Error::Errcode { errcode, call, .. } => {
                *call != Call::SessionWebhook && matches!(errcode, 40014 | 88)
            }
            _ => false,
        }
    }

    /// True when an AI-card call failed in a way that means "answer in markdown for
    /// [`crate::limits::CARD_DEGRADE_FOR`]" (spec §4.6: 403/429/5xx, or not delivered).
    pub fn card_should_degrade(&self) -> bool {
        if !self.call().is_some_and(Call::is_card) {
            return false;
        }
        match self {
            Error::Api { status, .. } | Error::Http { status, .. } => {
                *status == 403 || *status == 429 || *status >= 500 || *status == 400
            }
            Error::NotSent { .. } => true,
            _ => false,
        }
    }
}

/// Maps a transport error, dropping its URL (a ticket, session key or token may be in it).
pub(crate) fn network(call: Call, e: reqwest::Error, after: Duration) -> Error {
    if e.is_timeout() {
        return Error::Timeout { call, after };
    }
    Error::Network {
        call,
        unsent: e.is_connect() || e.is_builder(),
        detail: scv_net::transport(&e.without_url()),
    }
}
