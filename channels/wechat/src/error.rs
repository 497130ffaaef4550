//! The client's error type. Each variant says what failed; [`Error::class`] says what to do.

use std::time::Duration;

use crate::classify::{ErrorClass, Outcome, classify};
use crate::endpoint::Endpoint;

/// A failed iLink call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server or a gateway answered with a non-2xx status.
    #[error("wechat {endpoint}: HTTP {status}")]
    Http {
        /// The endpoint called.
        endpoint: Endpoint,
        /// The HTTP status.
        status: u16,
    },
    /// HTTP 200 with a non-zero `ret`/`errcode` in the body.
    #[error("wechat {endpoint}: platform refused ({}): {errmsg:?}", codes(*.ret, *.errcode))]
    Api {
        /// The endpoint called.
        endpoint: Endpoint,
        /// `ret`, if present.
        ret: Option<i64>,
        /// `errcode`, if present.
        errcode: Option<i64>,
        /// `errmsg`, possibly empty.
        errmsg: String,
    },
    /// The request never got an answer (connect, TLS, reset).
    #[error("wechat {endpoint}: network error: {}", scv_net::transport(source))]
    Network {
        /// The endpoint called.
        endpoint: Endpoint,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// Our client timeout fired.
    #[error("wechat {endpoint}: no answer within {after:?}")]
    Timeout {
        /// The endpoint called.
        endpoint: Endpoint,
        /// The timeout that fired.
        after: Duration,
    },
    /// The body was not the JSON this endpoint returns.
    #[error("wechat {endpoint}: malformed response: {detail}")]
    Malformed {
        /// The endpoint called.
        endpoint: Endpoint,
        /// What was wrong (never the body itself, which may carry credentials).
        detail: String,
    },
    /// A call that needs a bot token was made on a client without one.
    #[error("wechat {endpoint}: no bot token: log in first")]
    NoToken {
        /// The endpoint called.
        endpoint: Endpoint,
    },
    /// Login said `confirmed` but left out a credential.
    #[error("wechat login confirmed without {field}")]
    IncompleteLogin {
        /// The missing field.
        field: &'static str,
    },
    /// The base URL (or a redirect host) cannot be used.
    #[error("wechat: invalid base URL {url:?}: {detail}")]
    InvalidBaseUrl {
        /// The URL given.
        url: String,
        /// Why it was rejected.
        detail: String,
    },
}

impl Error {
    /// What to do about this error: retry, stop (and re-login?), or slow down.
    pub fn class(&self) -> ErrorClass {
        let (endpoint, outcome) = match self {
            Error::Http { endpoint, status } => (*endpoint, Outcome::Http(*status)),
            Error::Api {
                endpoint,
                ret,
                errcode,
                ..
            } => (
                *endpoint,
                Outcome::Api {
                    ret: *ret,
                    errcode: *errcode,
                },
            ),
            Error::Network { endpoint, .. } => (*endpoint, Outcome::Network),
            Error::Timeout { endpoint, .. } => (*endpoint, Outcome::Timeout),
            Error::Malformed { endpoint, .. } => (*endpoint, Outcome::Malformed),
            Error::NoToken { endpoint } => (*endpoint, Outcome::MissingCredentials),
            Error::IncompleteLogin { .. } => {
                (Endpoint::GetQrcodeStatus, Outcome::MissingCredentials)
            }
            Error::InvalidBaseUrl { .. } => (Endpoint::GetUpdates, Outcome::BadConfig),
        };
        classify(endpoint, outcome)
    }

    /// Whether this is the platform's "session expired" (-14): only a new login helps.
    pub fn is_session_expired(&self) -> bool {
        matches!(self, Error::Api { ret, errcode, .. }
            if *ret == Some(crate::classify::SESSION_EXPIRED)
                || *errcode == Some(crate::classify::SESSION_EXPIRED))
    }

    /// The endpoint that failed, when there was a call.
    pub fn endpoint(&self) -> Option<Endpoint> {
        match self {
            Error::Http { endpoint, .. }
            | Error::Api { endpoint, .. }
            | Error::Network { endpoint, .. }
            | Error::Timeout { endpoint, .. }
            | Error::Malformed { endpoint, .. }
            | Error::NoToken { endpoint } => Some(*endpoint),
            Error::IncompleteLogin { .. } => Some(Endpoint::GetQrcodeStatus),
            Error::InvalidBaseUrl { .. } => None,
        }
    }
}

/// "ret -2", "errcode -14" or "ret -14, errcode -14": only the codes that were present.
fn codes(ret: Option<i64>, errcode: Option<i64>) -> String {
    match (ret, errcode) {
        (Some(r), Some(e)) => format!("ret {r}, errcode {e}"),
        (Some(r), None) => format!("ret {r}"),
        (None, Some(e)) => format!("errcode {e}"),
        (None, None) => "no code".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_failed() {
        let e = Error::Api {
            endpoint: Endpoint::SendMessage,
            ret: Some(-2),
            errcode: None,
            errmsg: "prepare failed".into(),
        };
        let text = e.to_string();
        assert!(
            text.contains("sendmessage") && text.contains("-2") && text.contains("prepare failed"),
            "{text}"
        );
        assert!(matches!(e.class(), ErrorClass::SlowDown(_)));
        assert!(!e.is_session_expired());
        let e = Error::Api {
            endpoint: Endpoint::GetUpdates,
            ret: None,
            errcode: Some(-14),
            errmsg: String::new(),
        };
        assert!(e.is_session_expired());
        assert_eq!(e.class(), ErrorClass::Fatal { relogin: true });
        assert_eq!(
            Error::NoToken {
                endpoint: Endpoint::SendTyping
            }
            .class(),
            ErrorClass::Fatal { relogin: true }
        );
        let e = Error::InvalidBaseUrl {
            url: "x".into(),
            detail: "y".into(),
        };
        assert_eq!(e.class(), ErrorClass::Fatal { relogin: false });
        assert_eq!(e.endpoint(), None);
    }
}
