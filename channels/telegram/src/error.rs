//! The client's error type. Each variant says what failed; `Error::class`, kept beside the one
//! table in `classify` (which imports this file, not the other way), says what to do. Made only
//! by this crate's client; the daemon reads `class()` and shows `Display`.

use std::time::Duration;

use crate::method::Method;

/// A failed Bot API call or file transfer. `Display` never carries the token (URLs are
/// stripped from transport errors) nor message text (the platform's `description` names the
/// fault, not the content).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The platform answered `{"ok": false, ...}` (spec §1.1); the HTTP status equals `code`.
    #[error("telegram {method}: {code} {description}")]
    Api {
        /// The method called.
        method: Method,
        /// `error_code` (the HTTP status when the body had none).
        code: u16,
        /// `description`, the only detail the platform gives.
        description: String,
        /// `parameters.retry_after`, seconds (429).
        retry_after: Option<u64>,
        /// `parameters.migrate_to_chat_id` (a group became a supergroup).
        migrate_to: Option<i64>,
    },
    /// A non-2xx answer without the platform's JSON (a proxy or gateway in front of it).
    #[error("telegram {method}: HTTP {status} without a Bot API answer")]
    Http {
        /// The method called.
        method: Method,
        /// The HTTP status.
        status: u16,
    },
    /// The request never got an answer (connect, TLS, reset).
    #[error("telegram {method}: network error: {}", scv_net::transport(source))]
    Network {
        /// The method called.
        method: Method,
        /// The transport error, without its URL (which holds the token).
        #[source]
        source: reqwest::Error,
    },
    /// Our client timeout fired.
    #[error("telegram {method}: no answer within {after:?}")]
    Timeout {
        /// The method called.
        method: Method,
        /// The timeout that fired.
        after: Duration,
    },
    /// The body was not the JSON this method returns.
    #[error("telegram {method}: malformed response: {detail}")]
    Malformed {
        /// The method called.
        method: Method,
        /// What was wrong (never the body itself).
        detail: String,
    },
    /// A file is over a platform limit; checked before any byte is sent or kept.
    #[error("telegram {method}: the file is {size} bytes, over the {limit}-byte limit")]
    TooBig {
        /// The upload or download.
        method: Method,
        /// The file's size (or the bytes seen so far when the server did not say).
        size: u64,
        /// The limit it is over.
        limit: u64,
    },
    /// A local file could not be read or written.
    #[error("telegram {method}: local file: {detail}")]
    Io {
        /// The upload or download.
        method: Method,
        /// What failed (the OS error; no path, which may be a user's file name).
        detail: String,
    },
    /// The base URL cannot be used.
    #[error("telegram: invalid base URL {url:?}: {detail}")]
    InvalidBaseUrl {
        /// The URL given.
        url: String,
        /// Why it was rejected.
        detail: String,
    },
}

impl Error {
    /// The method that failed, when there was a call.
    pub fn method(&self) -> Option<Method> {
        match self {
            Error::Api { method, .. }
            | Error::Http { method, .. }
            | Error::Network { method, .. }
            | Error::Timeout { method, .. }
            | Error::Malformed { method, .. }
            | Error::TooBig { method, .. }
            | Error::Io { method, .. } => Some(*method),
            Error::InvalidBaseUrl { .. } => None,
        }
    }

    /// Whether the platform may have acted on the call although no success came back: the
    /// request may have left (a timeout, a reset after sending, an answer that was not the Bot
    /// API's, a gateway's 5xx). A refused connection, a platform refusal and local checks are
    /// known outcomes: nothing was done.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Timeout { .. } | Error::Malformed { .. } => true,
            Error::Network { source, .. } => !source.is_connect() && !source.is_builder(),
            Error::Http { status, .. } => *status >= 500,
            Error::Api { code, .. } => *code >= 500,
            Error::TooBig { .. } | Error::Io { .. } => false,
            Error::InvalidBaseUrl { .. } => false,
        }
    }

    /// The platform's `description`, when it answered one.
    pub fn description(&self) -> Option<&str> {
        match self {
            Error::Api { description, .. } => Some(description),
            _ => None,
        }
    }
}
