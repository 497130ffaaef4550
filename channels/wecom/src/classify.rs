//! The one table from an [`Error`] to what the caller does about it (spec §5).

use std::time::Duration;

use crate::error::Error;
use crate::frame::cmd;
use crate::limits::{SEND_RATE_LIMIT_WAIT, SUBSCRIBE_RATE_LIMIT_WAIT};

/// "System busy" (§5).
pub const BUSY: i64 = -1;
/// Concurrent update of a stream or command (§5).
pub const VERSION_CONFLICT: i64 = 6000;
/// Rate limit (§5; on subscribe observed, on sends assumed).
pub const RATE_LIMITED: i64 = 45009;
/// Invalid bot id (§5).
pub const INVALID_BOT_ID: i64 = 93019;
/// Wrong secret (§5).
pub const BAD_SECRET: i64 = 853000;
/// Bad request parameter; a credential error on subscribe (§5).
pub const BAD_PARAMETER: i64 = 40058;
/// Bad `msgtype` for the command (§5).
pub const BAD_MSGTYPE: i64 = 40008;
/// Unknown chat id (§5).
pub const INVALID_CHATID: i64 = 93006;
/// The `req_id`'s reply window expired (§5).
pub const REPLY_EXPIRED: i64 = 846604;
/// The `req_id` does not take this command (§5).
pub const INVALID_REQ_ID: i64 = 846605;
/// The stream's update window expired (§5).
pub const STREAM_EXPIRED: i64 = 846608;
/// The socket is not subscribed (§5).
pub const NOT_SUBSCRIBED: i64 = 846609;
/// Unknown meaning, treated as transient by others (§5).
pub const UNKNOWN_TRANSIENT: [i64; 2] = [846601, 846602];
/// "device type not support" on streams and group sends (§5).
pub const DEVICE_NOT_SUPPORTED: i64 = 600039;

/// Wait after an HTTP 429 from the media host (none documented).
pub const HTTP_SLOW_DOWN: Duration = Duration::from_secs(30);

/// What the caller does after an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorClass {
    /// Retry later with backoff (network, busy, conflict, ack timeout, not subscribed).
    Transient,
    /// The platform asked to slow down: wait exactly this long, without counting a failure.
    SlowDown(Duration),
    /// The reply handle (`req_id`) cannot carry this any more: send it with
    /// `aibot_send_msg` instead (§4.2).
    HandleGone {
        /// The platform code, 0 when the client decided (window passed, connection lost).
        code: i64,
    },
    /// This request can never succeed as it is; the account is fine. Do not retry.
    Rejected {
        /// The platform code, 0 when the client refused before sending.
        code: i64,
    },
    /// The account cannot work until a person acts.
    Fatal {
        /// Whether `login wecom ACCOUNT` (new bot id and secret) is the fix.
        relogin: bool,
        /// Why.
        reason: FatalReason,
    },
}

/// Why an account cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatalReason {
    /// The bot id or secret was refused (`credentials_invalid`, §5).
    BadCredentials,
    /// Another connection took the bot (`superseded`, §1.5).
    Superseded,
    /// The configured URL cannot be used.
    BadUrl,
}

impl FatalReason {
    /// What to fix, in words for the operator (the daemon adds its commands).
    pub fn hint(&self) -> &'static str {
        match self {
            FatalReason::BadCredentials => {
                "WeCom refused the bot id or secret: copy both again from the admin console (API mode, long connection) and log in again"
            }
            FatalReason::Superseded => {
                "another program connected as this WeCom bot and took it over: stop that program, then enable the channel again"
            }
            FatalReason::BadUrl => "the WeCom long-connection URL is not a ws:// or wss:// URL",
        }
    }
}

impl Error {
    /// What to do about this error.
    pub fn class(&self) -> ErrorClass {
        classify(self)
    }
}

/// Maps an error to what the caller should do. Every row is tested.
pub fn classify(err: &Error) -> ErrorClass {
    match err {
        Error::Platform { cmd, code, .. } => classify_code(cmd, *code),
        Error::AckTimeout { .. }
        | Error::NotConnected { .. }
        | Error::Network(_)
        | Error::Closed
        | Error::Stalled { .. }
        | Error::Decode(_) => ErrorClass::Transient,
        // A reply whose socket ended goes out through the proactive send (§1.6).
        Error::ConnectionLost { cmd } if is_reply(cmd) => ErrorClass::HandleGone { code: 0 },
        Error::ConnectionLost { .. } => ErrorClass::Transient,
        Error::WindowClosed { .. } => ErrorClass::HandleGone { code: 0 },
        Error::Superseded => fatal(false, FatalReason::Superseded),
        Error::CredentialsInvalid { .. } => fatal(true, FatalReason::BadCredentials),
        Error::BadUrl { .. } => fatal(false, FatalReason::BadUrl),
        Error::Http { status: 429 } => ErrorClass::SlowDown(HTTP_SLOW_DOWN),
        Error::Http { status } if *status >= 500 || *status == 408 => ErrorClass::Transient,
        // 404 and friends: the URL expired or never was; fetching again cannot help.
        Error::Http { .. } => ErrorClass::Rejected { code: 0 },
        Error::BadMedia(_) | Error::TooLarge { .. } | Error::Invalid(_) => {
            ErrorClass::Rejected { code: 0 }
        }
    }
}

fn is_reply(c: &str) -> bool {
    matches!(
        c,
        cmd::RESPOND_MSG | cmd::RESPOND_WELCOME | cmd::RESPOND_UPDATE
    )
}

fn fatal(relogin: bool, reason: FatalReason) -> ErrorClass {
    ErrorClass::Fatal { relogin, reason }
}

fn classify_code(c: &str, code: i64) -> ErrorClass {
    match code {
        BUSY | VERSION_CONFLICT | NOT_SUBSCRIBED => ErrorClass::Transient,
        c2 if UNKNOWN_TRANSIENT.contains(&c2) => ErrorClass::Transient,
        RATE_LIMITED if c == cmd::SUBSCRIBE => ErrorClass::SlowDown(SUBSCRIBE_RATE_LIMIT_WAIT),
        RATE_LIMITED => ErrorClass::SlowDown(SEND_RATE_LIMIT_WAIT),
        INVALID_BOT_ID | BAD_SECRET | BAD_PARAMETER if c == cmd::SUBSCRIBE => {
            fatal(true, FatalReason::BadCredentials)
        }
        // Another refusal of subscribe: the connection counts it and gives up after
        // AUTH_FAILURES_FATAL in a row; one alone may be a blip.
        _ if c == cmd::SUBSCRIBE => ErrorClass::Transient,
        REPLY_EXPIRED | INVALID_REQ_ID | STREAM_EXPIRED if is_reply(c) => {
            ErrorClass::HandleGone { code }
        }
        // A stream this device cannot show: the text goes as a proactive markdown (§4.5).
        DEVICE_NOT_SUPPORTED if is_reply(c) => ErrorClass::HandleGone { code },
        _ => ErrorClass::Rejected { code },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorClass::*;

    fn p(c: &'static str, code: i64) -> Error {
        Error::Platform {
            cmd: c,
            code,
            errmsg: String::new(),
        }
    }

    #[test]
    fn every_row() {
        let bad = fatal(true, FatalReason::BadCredentials);
        let rows: Vec<(Error, ErrorClass)> = vec![
            (p(cmd::SUBSCRIBE, BUSY), Transient),
            (p(cmd::SUBSCRIBE, VERSION_CONFLICT), Transient),
            (
                p(cmd::SUBSCRIBE, RATE_LIMITED),
                SlowDown(SUBSCRIBE_RATE_LIMIT_WAIT),
            ),
            (p(cmd::SUBSCRIBE, INVALID_BOT_ID), bad.clone()),
            (p(cmd::SUBSCRIBE, BAD_SECRET), bad.clone()),
            (p(cmd::SUBSCRIBE, BAD_PARAMETER), bad.clone()),
            (p(cmd::SUBSCRIBE, 12345), Transient),
            (p(cmd::SEND_MSG, BAD_PARAMETER), Rejected { code: 40058 }),
            (
                p(cmd::SEND_MSG, RATE_LIMITED),
                SlowDown(SEND_RATE_LIMIT_WAIT),
            ),
            (p(cmd::SEND_MSG, INVALID_CHATID), Rejected { code: 93006 }),
            (p(cmd::SEND_MSG, BAD_MSGTYPE), Rejected { code: 40008 }),
            (
                p(cmd::SEND_MSG, DEVICE_NOT_SUPPORTED),
                Rejected { code: 600039 },
            ),
            (p(cmd::SEND_MSG, NOT_SUBSCRIBED), Transient),
            (p(cmd::SEND_MSG, 846601), Transient),
            (p(cmd::SEND_MSG, 846602), Transient),
            (
                p(cmd::RESPOND_MSG, REPLY_EXPIRED),
                HandleGone { code: 846604 },
            ),
            (
                p(cmd::RESPOND_MSG, INVALID_REQ_ID),
                HandleGone { code: 846605 },
            ),
            (
                p(cmd::RESPOND_MSG, STREAM_EXPIRED),
                HandleGone { code: 846608 },
            ),
            (
                p(cmd::RESPOND_MSG, DEVICE_NOT_SUPPORTED),
                HandleGone { code: 600039 },
            ),
            (p(cmd::RESPOND_MSG, BAD_PARAMETER), Rejected { code: 40058 }),
            (p(cmd::RESPOND_MSG, VERSION_CONFLICT), Transient),
            (
                p(cmd::RESPOND_WELCOME, INVALID_REQ_ID),
                HandleGone { code: 846605 },
            ),
            (
                p(cmd::RESPOND_UPDATE, INVALID_REQ_ID),
                HandleGone { code: 846605 },
            ),
            (p(cmd::UPLOAD_CHUNK, BUSY), Transient),
            (p(cmd::UPLOAD_FINISH, 40058), Rejected { code: 40058 }),
            (
                Error::AckTimeout {
                    cmd: cmd::RESPOND_MSG,
                    after: Duration::from_secs(5),
                },
                Transient,
            ),
            (
                Error::ConnectionLost {
                    cmd: cmd::RESPOND_MSG,
                },
                HandleGone { code: 0 },
            ),
            (Error::ConnectionLost { cmd: cmd::SEND_MSG }, Transient),
            (Error::NotConnected { cmd: cmd::SEND_MSG }, Transient),
            (Error::Network("x".into()), Transient),
            (Error::Closed, Transient),
            (Error::Stalled { missed: 2 }, Transient),
            (Error::Decode("x".into()), Transient),
            (Error::Superseded, fatal(false, FatalReason::Superseded)),
            (
                Error::CredentialsInvalid {
                    code: 93019,
                    errmsg: String::new(),
                },
                bad,
            ),
            (
                Error::BadUrl {
                    url: "x".into(),
                    detail: "y".into(),
                },
                fatal(false, FatalReason::BadUrl),
            ),
            (Error::Http { status: 404 }, Rejected { code: 0 }),
            (Error::Http { status: 429 }, SlowDown(HTTP_SLOW_DOWN)),
            (Error::Http { status: 502 }, Transient),
            (Error::BadMedia("k".into()), Rejected { code: 0 }),
            (
                Error::TooLarge {
                    what: "file",
                    limit: 1,
                },
                Rejected { code: 0 },
            ),
            (Error::Invalid("x".into()), Rejected { code: 0 }),
            (
                Error::WindowClosed {
                    cmd: cmd::RESPOND_MSG,
                },
                HandleGone { code: 0 },
            ),
        ];
        for (err, want) in rows {
            assert_eq!(classify(&err), want, "{err}");
        }
    }

    #[test]
    fn every_fatal_reason_has_a_hint() {
        for r in [
            FatalReason::BadCredentials,
            FatalReason::Superseded,
            FatalReason::BadUrl,
        ] {
            assert!(!r.hint().is_empty());
        }
    }
}
