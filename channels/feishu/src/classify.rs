//! One table from every outcome to what the caller should do about it.

use std::time::Duration;

use crate::error::Error;

/// Default delay for a slow-down signal that carries no reset header.
pub const DEFAULT_SLOW_DOWN: Duration = Duration::from_secs(1);

/// What the caller should do after an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorClass {
    /// Retry later with backoff (network, 5xx, busy, stale token).
    Transient,
    /// The platform asked us to slow down: wait exactly this long, do not raise the backoff.
    SlowDown(Duration),
    /// This request can never succeed (bad content, recalled target); the account is fine.
    Rejected {
        /// Business code.
        code: i64,
    },
    /// The account cannot work until its credentials or console settings change.
    Fatal {
        /// Why, with a hint for the user.
        reason: FatalReason,
    },
}

/// Why an account cannot work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FatalReason {
    /// App id or secret rejected.
    BadCredentials,
    /// The app is disabled, unpublished or has no bot capability.
    AppDisabled,
    /// The app lacks an API scope.
    MissingScope,
    /// The caller IP is not in the app's allow-list.
    IpNotAllowed,
    /// More than 50 long connections for this app.
    ConnectionLimit,
    /// The long connection was forbidden (HTTP 403 / Handshake-Status 403).
    Forbidden,
    /// The endpoint refused with a code the SDKs treat as a client error.
    Refused {
        /// Business code.
        code: i64,
    },
}

impl FatalReason {
    /// A short hint telling the user what to fix.
    pub fn hint(&self) -> &'static str {
        match self {
            FatalReason::BadCredentials => {
                "app id or app secret rejected: check them in the developer console"
            }
            FatalReason::AppDisabled => {
                "the app is disabled, unpublished, or its bot capability is off"
            }
            FatalReason::MissingScope => {
                "the app lacks a required API scope: add it in the console and publish a version"
            }
            FatalReason::IpNotAllowed => "this machine's IP is not in the app's IP allow-list",
            FatalReason::ConnectionLimit => "the app already has 50 long connections open",
            FatalReason::Forbidden => {
                "the long connection was forbidden: enable 'receive events via long connection'"
            }
            FatalReason::Refused { .. } => "the platform refused the long connection for this app",
        }
    }
}

/// Token-invalid codes: drop the cached token, refetch, retry once.
pub const TOKEN_INVALID_CODES: [i64; 3] = [99991663, 99991664, 99991665];

/// Maps an error to what the caller should do.
pub fn classify(err: &Error) -> ErrorClass {
    match err {
        Error::Network(_)
        | Error::WebSocket(_)
        | Error::Closed
        | Error::Stalled(_)
        | Error::Decode(_) => ErrorClass::Transient,
        Error::Invalid(_) => ErrorClass::Rejected { code: 0 },
        // Over a size limit: this item never fits; the account is fine.
        Error::TooLarge { .. } => ErrorClass::Rejected { code: 0 },
        // A local disk error (full, unwritable) may clear; the caller's backoff applies.
        Error::Io(_) => ErrorClass::Transient,
        Error::Http {
            status,
            retry_after,
        } => match status {
            429 => ErrorClass::SlowDown(retry_after.unwrap_or(DEFAULT_SLOW_DOWN)),
            _ => ErrorClass::Transient,
        },
        Error::Token { code, .. } => match code {
            10014 | 10003 => fatal(FatalReason::BadCredentials),
            _ => classify_api_code(*code, 200, None),
        },
        Error::Api {
            code,
            http_status,
            retry_after,
            ..
        } => classify_api_code(*code, *http_status, *retry_after),
        Error::Endpoint { code, .. } => match code {
            1 | 1000040343 => ErrorClass::Transient,
            1000040345 => fatal(FatalReason::BadCredentials),
            99991400 => ErrorClass::SlowDown(DEFAULT_SLOW_DOWN),
            c => fatal(FatalReason::Refused { code: *c }),
        },
        Error::Handshake {
            http_status,
            status,
            auth_code,
            ..
        } => match (status, auth_code) {
            (Some(514), Some(1000040350)) => fatal(FatalReason::ConnectionLimit),
            (Some(403), _) => fatal(FatalReason::Forbidden),
            (None, _) if *http_status == 403 => fatal(FatalReason::Forbidden),
            _ => ErrorClass::Transient,
        },
    }
}

fn fatal(reason: FatalReason) -> ErrorClass {
    ErrorClass::Fatal { reason }
}

fn classify_api_code(code: i64, http_status: u16, retry_after: Option<Duration>) -> ErrorClass {
    match code {
        99991400 | 230020 | 11232 => ErrorClass::SlowDown(retry_after.unwrap_or(DEFAULT_SLOW_DOWN)),
        // Still invalid after the one retry: the next attempt refetches.
        99991663..=99991665 => ErrorClass::Transient,
        1 | 1000040343 => ErrorClass::Transient,
        // Media: metadata writing stopped, scope check failed ("retry"), hybrid-deployment
        // storage error (unconfirmed whether it clears: retried, visible in health meanwhile),
        // and the resource endpoint's 401 still there after the token refetch.
        232096 | 234019 | 234042 | 234002 => ErrorClass::Transient,
        // Media: the bot capability is off.
        234007 => fatal(FatalReason::AppDisabled),
        10014 | 10003 | 99991668 => fatal(FatalReason::BadCredentials),
        99991662 | 99991673 | 230006 => fatal(FatalReason::AppDisabled),
        99991672 => fatal(FatalReason::MissingScope),
        99991401 => fatal(FatalReason::IpNotAllowed),
        _ if http_status == 429 => ErrorClass::SlowDown(retry_after.unwrap_or(DEFAULT_SLOW_DOWN)),
        _ if http_status >= 500 => ErrorClass::Transient,
        c => ErrorClass::Rejected { code: c },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: i64, http_status: u16, retry_after: Option<Duration>) -> Error {
        Error::Api {
            code,
            msg: String::new(),
            http_status,
            retry_after,
        }
    }

    fn hs(http_status: u16, status: Option<i64>, auth_code: Option<i64>) -> Error {
        Error::Handshake {
            http_status,
            status,
            auth_code,
            msg: None,
        }
    }

    #[test]
    fn every_row() {
        use ErrorClass::*;
        let s = Duration::from_secs;
        let rows: Vec<(Error, ErrorClass)> = vec![
            (Error::Network("x".into()), Transient),
            (Error::WebSocket("x".into()), Transient),
            (Error::Closed, Transient),
            (Error::Stalled(s(3)), Transient),
            (Error::Decode("x".into()), Transient),
            (Error::Invalid("x".into()), Rejected { code: 0 }),
            (
                Error::Http {
                    status: 502,
                    retry_after: None,
                },
                Transient,
            ),
            (
                Error::Http {
                    status: 429,
                    retry_after: Some(s(7)),
                },
                SlowDown(s(7)),
            ),
            (
                Error::Http {
                    status: 429,
                    retry_after: None,
                },
                SlowDown(DEFAULT_SLOW_DOWN),
            ),
            (
                Error::Token {
                    code: 10014,
                    msg: "app secret invalid".into(),
                },
                fatal(FatalReason::BadCredentials),
            ),
            (
                Error::Token {
                    code: 10003,
                    msg: String::new(),
                },
                fatal(FatalReason::BadCredentials),
            ),
            (
                Error::Token {
                    code: 99991400,
                    msg: String::new(),
                },
                SlowDown(DEFAULT_SLOW_DOWN),
            ),
            (
                Error::Endpoint {
                    code: 1,
                    msg: "system busy".into(),
                },
                Transient,
            ),
            (
                Error::Endpoint {
                    code: 1000040343,
                    msg: String::new(),
                },
                Transient,
            ),
            (
                Error::Endpoint {
                    code: 1000040345,
                    msg: String::new(),
                },
                fatal(FatalReason::BadCredentials),
            ),
            (
                Error::Endpoint {
                    code: 42,
                    msg: String::new(),
                },
                fatal(FatalReason::Refused { code: 42 }),
            ),
            (
                hs(400, Some(514), Some(1000040350)),
                fatal(FatalReason::ConnectionLimit),
            ),
            (hs(400, Some(514), Some(1)), Transient),
            (hs(400, Some(403), None), fatal(FatalReason::Forbidden)),
            (hs(403, None, None), fatal(FatalReason::Forbidden)),
            (hs(502, None, None), Transient),
            (api(99991400, 429, Some(s(2))), SlowDown(s(2))),
            (api(230020, 400, None), SlowDown(DEFAULT_SLOW_DOWN)),
            (api(11232, 400, None), SlowDown(DEFAULT_SLOW_DOWN)),
            (api(99991663, 400, None), Transient),
            (api(99991664, 400, None), Transient),
            (api(99991665, 400, None), Transient),
            (api(99991668, 400, None), fatal(FatalReason::BadCredentials)),
            (api(99991662, 400, None), fatal(FatalReason::AppDisabled)),
            (api(99991673, 400, None), fatal(FatalReason::AppDisabled)),
            (api(230006, 400, None), fatal(FatalReason::AppDisabled)),
            (api(99991672, 400, None), fatal(FatalReason::MissingScope)),
            (api(99991401, 400, None), fatal(FatalReason::IpNotAllowed)),
            (api(230025, 400, None), Rejected { code: 230025 }),
            (api(230002, 400, None), Rejected { code: 230002 }),
            (api(230011, 400, None), Rejected { code: 230011 }),
            (api(99992361, 400, None), Rejected { code: 99992361 }),
            (api(77, 503, None), Transient),
            (Error::TooLarge { limit: 9 }, Rejected { code: 0 }),
            (Error::Io("x".into()), Transient),
            (api(232096, 400, None), Transient),
            (api(234019, 400, None), Transient),
            (api(234042, 400, None), Transient),
            (api(234002, 401, None), Transient),
            (api(234007, 400, None), fatal(FatalReason::AppDisabled)),
            (api(234037, 400, None), Rejected { code: 234037 }),
            (api(234003, 400, None), Rejected { code: 234003 }),
            (api(234006, 400, None), Rejected { code: 234006 }),
            (api(234011, 400, None), Rejected { code: 234011 }),
            (api(77, 429, Some(s(3))), SlowDown(s(3))),
        ];
        for (err, want) in rows {
            assert_eq!(classify(&err), want, "{err}");
        }
    }

    #[test]
    fn every_fatal_reason_has_a_hint() {
        for r in [
            FatalReason::BadCredentials,
            FatalReason::AppDisabled,
            FatalReason::MissingScope,
            FatalReason::IpNotAllowed,
            FatalReason::ConnectionLimit,
            FatalReason::Forbidden,
            FatalReason::Refused { code: 1 },
        ] {
            assert!(!r.hint().is_empty());
        }
    }
}
