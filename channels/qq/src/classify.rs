//! The one table from every [`Error`] to what the caller does about it (spec §6 and the close
//! codes of §1.3). Each row has a test here and, for what the fake can produce, one in
//! `tests/against_fake`.

use std::time::Duration;

use crate::error::Error;
use crate::limits::{GATEWAY_TOO_FAST_WAIT, RATE_LIMIT_FIRST_WAIT};

/// What the caller should do after an error. Made only by [`classify`]; the daemon matches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Back off and retry (network, 5xx, timeouts, the platform's own hiccups).
    Transient,
    /// The platform asked us to slow down: hold sends exactly this long, without counting a failure.
    SlowDown(Duration),
    /// This one message can never go out as it is; the account is fine.
    Rejected(Rejection),
    /// The account cannot work until a person acts.
    Fatal(Fatal),
}

/// Why one message was refused; the daemon decides per reason (queue, re-render, drop with a note).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No `msg_id`/`event_id`: active messages are off (`40034102` C2C, `40034105` group). Queue
    /// it until the owner next writes.
    NeedsTrigger,
    /// The trigger's window closed or its 5 replies are spent (`40034024`). Queue it until the
    /// owner next writes.
    WindowClosed,
    /// The `msg_id`+`msg_seq` pair was used already (`40054005`): a repeat of a delivered reply
    /// (the daemon counts it sent), else retry once with a new `msg_seq`.
    DuplicateSeq,
    /// The text held a URL (`40054010`): render links with [`crate::text::defang_links`].
    Url,
    /// The bot lacks a permission (markdown `50056`/`304036`/`50037`, keyboard `304037`, `11253`):
    /// send plain text instead; the code says which.
    Permission {
        /// Business code.
        code: i64,
    },
    /// Over a size limit; nothing was sent.
    TooLarge,
    /// The daily upload quota is used up (`40093002`): send the file another day.
    Quota,
    /// Refused for a reason with no row of its own (content audit 201/202, other 4xx).
    Other {
        /// Business code (0 when none).
        code: i64,
    },
}

/// Why an account stopped; [`Fatal::relogin`] says whether `login qq ACCOUNT` is the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fatal {
    /// AppID or AppSecret refused (`100007`, `100016`, `11241`/`11243`/`11251`/`11265`).
    BadCredentials,
    /// Close 4914: the bot is offline or unpublished; only the sandbox may connect.
    BotOffline,
    /// Close 4915: the bot is banned.
    BotBanned,
    /// Close 4014: an intent is not granted in the console.
    IntentNotPermitted,
    /// Close 4010–4013 (shard, guilds, version, intents): the client's configuration is wrong.
    BadConfig {
        /// The close code.
        code: u16,
    },
    /// Close 4001–4003 (bad opcode or payload): a client bug; reconnecting repeats it.
    ClientBug {
        /// The close code.
        code: u16,
    },
}

impl Fatal {
    /// Whether entering the credentials again (`login qq ACCOUNT`) is the fix.
    pub fn relogin(&self) -> bool {
        matches!(self, Fatal::BadCredentials)
    }

    /// What a person should do, in English; the daemon's catalogue has the words it shows.
    pub fn hint(&self) -> &'static str {
        match self {
            Fatal::BadCredentials => "AppID or AppSecret refused: enter them again",
            Fatal::BotOffline => "the bot is not published: publish it on the QQ open platform",
            Fatal::BotBanned => "the bot is banned on the QQ open platform",
            Fatal::IntentNotPermitted => {
                "the bot lacks the C2C/group or interaction event permission in the console"
            }
            Fatal::BadConfig { .. } => "the gateway refused the client's shard or intents",
            Fatal::ClientBug { .. } => "the gateway refused a frame this client built",
        }
    }
}

/// Credential codes of the token endpoint and OpenAPI (§6 "Bad credentials").
const BAD_CREDENTIALS: [i64; 6] = [100007, 100016, 11241, 11243, 11251, 11265];
/// Permission codes (§6 "Permission") other than the active-message and URL ones.
const PERMISSION: [i64; 5] = [11253, 304036, 304037, 50056, 50037];
/// Transient codes (§6 "Transient"): media fetch/convert, the platform's internal errors.
const TRANSIENT: [i64; 6] = [304082, 304083, 11242, 11252, 11263, 100002];
/// Rate-limit codes (§6 "Rate limit").
const RATE_LIMITED: [i64; 2] = [22009, 100001];
/// "token expired or not exist": the client refreshes and retries once before it surfaces.
pub const TOKEN_STALE: i64 = 11244;

impl Error {
    /// What to do about this error. The one classification, made here at the boundary.
    pub fn class(&self) -> ErrorClass {
        classify(self)
    }
}

/// Maps an error to what the caller should do.
pub fn classify(err: &Error) -> ErrorClass {
    match err {
        Error::Network { .. } | Error::Timeout { .. } | Error::Malformed { .. } => {
            ErrorClass::Transient
        }
        Error::HeartbeatLost(_) => ErrorClass::Transient,
        Error::SessionLimit { reset_after } => ErrorClass::SlowDown(*reset_after),
        Error::TooLarge { .. } => ErrorClass::Rejected(Rejection::TooLarge),
        Error::Invalid { .. } => ErrorClass::Rejected(Rejection::Other { code: 0 }),
        Error::Token { code, .. } => classify_code(*code, None)
            // Any other "no token" answer: the credentials are what it is about.
            .unwrap_or(ErrorClass::Fatal(Fatal::BadCredentials)),
        Error::Api {
            code,
            http_status,
            retry_after,
            ..
        } => classify_code(*code, *retry_after)
            .unwrap_or_else(|| classify_status(*code, *http_status, *retry_after)),
        Error::GatewayClosed { code } => classify_close(*code),
    }
}

/// The rows keyed by business code; `None` when the code has no row.
fn classify_code(code: i64, retry_after: Option<Duration>) -> Option<ErrorClass> {
    let class = match code {
        c if BAD_CREDENTIALS.contains(&c) => ErrorClass::Fatal(Fatal::BadCredentials),
        c if RATE_LIMITED.contains(&c) => slow_down(retry_after),
        c if TRANSIENT.contains(&c) => ErrorClass::Transient,
        c if PERMISSION.contains(&c) => ErrorClass::Rejected(Rejection::Permission { code: c }),
        40034102 | 40034105 => ErrorClass::Rejected(Rejection::NeedsTrigger),
        40034024 => ErrorClass::Rejected(Rejection::WindowClosed),
        40054005 => ErrorClass::Rejected(Rejection::DuplicateSeq),
        40054010 => ErrorClass::Rejected(Rejection::Url),
        40093002 => ErrorClass::Rejected(Rejection::Quota),
        // A block still not ready after the platform's retry_timeout: try the upload again later.
        40093001 => ErrorClass::Transient,
        // Still stale after the one refresh-and-retry: a fresh token next time may work.
        TOKEN_STALE => ErrorClass::Transient,
        // Typing refused ("input type err", HTTP 500): optional, never fatal (§4.3).
        50059 => ErrorClass::Transient,
        _ => return None,
    };
    Some(class)
}

/// Rows keyed by HTTP status, for codes without a row of their own.
fn classify_status(code: i64, status: u16, retry_after: Option<Duration>) -> ErrorClass {
    match status {
        429 => slow_down(retry_after),
        401 => ErrorClass::Transient,
        // 201/202 "async success" with an error body (content audit): not delivered (§6).
        201 | 202 => ErrorClass::Rejected(Rejection::Other { code }),
        408 => ErrorClass::Transient,
        400..=499 => ErrorClass::Rejected(Rejection::Other { code }),
        _ => ErrorClass::Transient,
    }
}

fn slow_down(retry_after: Option<Duration>) -> ErrorClass {
    ErrorClass::SlowDown(retry_after.unwrap_or(RATE_LIMIT_FIRST_WAIT))
}

/// The close-code table of §1.3, as classes. How the gateway reconnects (Resume or Identify)
/// is decided in `gateway`; this says only whether and when to try again.
pub fn classify_close(code: u16) -> ErrorClass {
    match code {
        4001..=4003 => ErrorClass::Fatal(Fatal::ClientBug { code }),
        4008 => ErrorClass::SlowDown(GATEWAY_TOO_FAST_WAIT),
        4010..=4013 => ErrorClass::Fatal(Fatal::BadConfig { code }),
        4014 => ErrorClass::Fatal(Fatal::IntentNotPermitted),
        4914 => ErrorClass::Fatal(Fatal::BotOffline),
        4915 => ErrorClass::Fatal(Fatal::BotBanned),
        // 4004 (after a refresh), 4006/4007/4009, 4900–4913, a dropped link, anything new.
        _ => ErrorClass::Transient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Call;

    fn api(code: i64, status: u16) -> Error {
        Error::Api {
            call: Call::SendC2c,
            http_status: status,
            code,
            message: String::new(),
            retry_after: None,
        }
    }

    #[test]
    fn every_row_of_the_table() {
        use ErrorClass::*;
        let second = Duration::from_secs(1);
        let rows: &[(Error, ErrorClass)] = &[
            (api(100016, 200), Fatal(super::Fatal::BadCredentials)),
            (api(11241, 401), Fatal(super::Fatal::BadCredentials)),
            (api(11265, 400), Fatal(super::Fatal::BadCredentials)),
            (api(TOKEN_STALE, 401), Transient),
            (api(0, 401), Transient),
            (api(40034102, 400), Rejected(Rejection::NeedsTrigger)),
            (api(40034105, 400), Rejected(Rejection::NeedsTrigger)),
            (api(40034024, 400), Rejected(Rejection::WindowClosed)),
            (api(40054005, 400), Rejected(Rejection::DuplicateSeq)),
            (api(40054010, 400), Rejected(Rejection::Url)),
            (
                api(50056, 400),
                Rejected(Rejection::Permission { code: 50056 }),
            ),
            (
                api(304037, 400),
                Rejected(Rejection::Permission { code: 304037 }),
            ),
            (
                api(304036, 400),
                Rejected(Rejection::Permission { code: 304036 }),
            ),
            (api(22009, 400), SlowDown(second)),
            (api(100001, 200), SlowDown(second)),
            (api(0, 429), SlowDown(second)),
            (api(304082, 400), Transient),
            (api(40093002, 400), Rejected(Rejection::Quota)),
            (api(40093001, 400), Transient),
            (api(11252, 500), Transient),
            (api(50059, 500), Transient),
            (api(0, 502), Transient),
            (api(777, 202), Rejected(Rejection::Other { code: 777 })),
            (api(12345, 400), Rejected(Rejection::Other { code: 12345 })),
            (api(12345, 500), Transient),
        ];
        for (i, (err, want)) in rows.iter().enumerate() {
            assert_eq!(classify(err), *want, "row {i}: {err}");
        }
    }

    #[test]
    fn token_and_gateway_start_rows() {
        use ErrorClass::*;
        let second = Duration::from_secs(1);
        let rows: &[(Error, ErrorClass)] = &[
            (
                Error::Token {
                    code: 100007,
                    message: String::new(),
                },
                Fatal(super::Fatal::BadCredentials),
            ),
            (
                Error::Token {
                    code: 4242,
                    message: String::new(),
                },
                Fatal(super::Fatal::BadCredentials),
            ),
            (
                Error::Token {
                    code: 100002,
                    message: String::new(),
                },
                Transient,
            ),
            (
                Error::SessionLimit {
                    reset_after: Duration::from_secs(90),
                },
                SlowDown(Duration::from_secs(90)),
            ),
            (Error::HeartbeatLost(second), Transient),
        ];
        for (i, (err, want)) in rows.iter().enumerate() {
            assert_eq!(classify(err), *want, "row {i}: {err}");
        }
    }

    #[test]
    fn rate_limit_waits_what_the_client_computed() {
        let mut e = api(22009, 400);
        if let Error::Api { retry_after, .. } = &mut e {
            *retry_after = Some(Duration::from_secs(8));
        }
        assert_eq!(e.class(), ErrorClass::SlowDown(Duration::from_secs(8)));
    }

    #[test]
    fn close_codes() {
        use ErrorClass::*;
        let rows: &[(u16, ErrorClass)] = &[
            (4001, Fatal(super::Fatal::ClientBug { code: 4001 })),
            (4003, Fatal(super::Fatal::ClientBug { code: 4003 })),
            (4004, Transient),
            (4006, Transient),
            (4007, Transient),
            (4008, SlowDown(GATEWAY_TOO_FAST_WAIT)),
            (4009, Transient),
            (4012, Fatal(super::Fatal::BadConfig { code: 4012 })),
            (4014, Fatal(super::Fatal::IntentNotPermitted)),
            (4900, Transient),
            (4913, Transient),
            (4914, Fatal(super::Fatal::BotOffline)),
            (4915, Fatal(super::Fatal::BotBanned)),
            (0, Transient),
            (1006, Transient),
        ];
        for (code, want) in rows {
            assert_eq!(classify_close(*code), *want, "close {code}");
        }
        assert!(super::Fatal::BadCredentials.relogin());
        assert!(!super::Fatal::BotBanned.relogin());
    }
}
