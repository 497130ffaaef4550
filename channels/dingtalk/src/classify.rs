//! The one table from an error to what the caller does about it (spec §5). Classified here,
//! once; the daemon acts on [`ErrorClass`] and never reads codes.

use std::time::Duration;

use crate::call::Call;
use crate::error::{Error, NotSent};
use crate::limits::{QPS_SLOW_DOWN, THROTTLE_SLOW_DOWN};

/// What the caller should do after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Retry with backoff: network, 5xx, timeouts, a stale token after its one retry, a
    /// zombie or closed socket.
    Transient,
    /// The platform asked us to slow down: hold this kind of call for exactly this long, and
    /// do not count it as a failure.
    SlowDown(Duration),
    /// This message (or card, or file) can never go as it is; the account is fine. Send
    /// something else (a smaller chunk, markdown instead of a card) or drop it with a reason.
    Rejected,
    /// The account cannot work until a person acts; [`FatalReason::hint`] says what to do.
    Fatal(FatalReason),
}

/// Why an account cannot work. Stable: the daemon maps each to a status word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatalReason {
    /// `invalidClientIdOrSecret` / `authFailed`: the client id or secret is wrong.
    BadCredentials,
    /// `connections/open` refused the request: robot off, receive mode not Stream, or no
    /// published version (spec §1.1).
    AppNotReady,
    /// The app lacks a permission (`requiredScopes` in the error names it).
    MissingScope,
    /// `robot 不存在` or an empty robot code: the robot code is wrong.
    RobotNotFound,
}

impl FatalReason {
    /// True when `login dingtalk` (new client id / secret) is the fix.
    pub fn relogin(self) -> bool {
        matches!(self, FatalReason::BadCredentials)
    }

    /// What to fix, in a sentence.
    pub fn hint(self) -> &'static str {
        match self {
            FatalReason::BadCredentials => {
                "the client id or client secret was refused: copy them again from the app's credentials page and log in again"
            }
            FatalReason::AppNotReady => {
                "the app refused the Stream connection: turn the robot on, set its message receive mode to Stream, and publish a version"
            }
            FatalReason::MissingScope => {
                "the app lacks a permission: add the scope named in the error on the app's permissions page and publish a version"
            }
            FatalReason::RobotNotFound => {
                "the robot code is unknown: enable the robot capability of this app (its robot code is the client id)"
            }
        }
    }
}

/// Maps an error to the action. Every row is in the test below.
pub fn classify(err: &Error) -> ErrorClass {
    match err {
        Error::Network { .. } | Error::Timeout { .. } | Error::Malformed { .. } => {
            ErrorClass::Transient
        }
        Error::Handshake { .. }
        | Error::WebSocket(_)
        | Error::Closed
        | Error::Idle(_)
        | Error::PongMissing(_) => ErrorClass::Transient,
        Error::Io(_) => ErrorClass::Transient,
        Error::TooLarge { .. } | Error::Invalid(_) | Error::WebhookExpired => ErrorClass::Rejected,
        Error::NotSent { reason, .. } => match reason {
            NotSent::FlowControlled => ErrorClass::SlowDown(THROTTLE_SLOW_DOWN),
            NotSent::InvalidRecipient
            | NotSent::Filtered
            | NotSent::Refused { .. }
            | NotSent::CardRefused { .. } => ErrorClass::Rejected,
        },
        Error::Http {
            status,
            retry_after,
            call,
        } => classify_http(*call, *status, *retry_after),
        Error::Api {
            call,
            status,
            code,
            retry_after,
            ..
        } => classify_api(*call, *status, code, *retry_after),
        Error::Errcode { call, errcode, .. } => classify_errcode(*call, *errcode),
    }
}

fn classify_http(call: Call, status: u16, retry_after: Option<Duration>) -> ErrorClass {
    match status {
        429 => ErrorClass::SlowDown(retry_after.unwrap_or(QPS_SLOW_DOWN)),
        408 | 500.. => ErrorClass::Transient,
        // An expired download URL: a fresh one comes with the next download call.
        403 | 404 if call == Call::DownloadUrl => ErrorClass::Transient,
        // Other 4xx without the platform's JSON: a proxy or a request built wrong; retrying the
        // same request cannot help, the account may still be fine.
        _ => ErrorClass::Rejected,
    }
}

fn classify_api(call: Call, status: u16, code: &str, retry_after: Option<Duration>) -> ErrorClass {
    if code.contains("QpsLimit") || status == 429 {
        return ErrorClass::SlowDown(retry_after.unwrap_or(QPS_SLOW_DOWN).max(QPS_SLOW_DOWN));
    }
    if is_send_throttle(code) {
        return ErrorClass::SlowDown(THROTTLE_SLOW_DOWN);
    }
    match (call, status, code) {
        (_, _, "invalidClientIdOrSecret") | (_, _, "authFailed") => {
            ErrorClass::Fatal(FatalReason::BadCredentials)
        }
        // Still refused after the one refetch-and-retry: the next attempt refetches again, and a
        // revoked secret then shows as invalidClientIdOrSecret (fatal). Stopping here would need
        // a person for what is usually a token rotated under us.
        (_, _, "InvalidAuthentication") => ErrorClass::Transient,
        (_, 403, c) if c.contains("AccessTokenPermissionDenied") => {
            ErrorClass::Fatal(FatalReason::MissingScope)
        }
        (_, _, "resource.not.found") | (_, _, "invalidParameter.robotCode.empty") => {
            ErrorClass::Fatal(FatalReason::RobotNotFound)
        }
        // The app's state refuses the connection (robot off, not Stream, unpublished).
        (Call::OpenConnection, 400..=499, _) => ErrorClass::Fatal(FatalReason::AppNotReady),
        (_, 500.., _) | (_, 408, _) => ErrorClass::Transient,
        // A bad body, target or card: this request never succeeds.
        _ => ErrorClass::Rejected,
    }
}

/// Robot-send rate codes (spec §5: the list is unconfirmed; these are the observed ones).
fn is_send_throttle(code: &str) -> bool {
    matches!(
        code,
        "send.too.fast" | "too.many.group" | "too.many.people" | "send.byToken.tooFast"
    )
}

fn classify_errcode(call: Call, errcode: i64) -> ErrorClass {
    match (call, errcode) {
        (Call::SessionWebhook, 300001) => ErrorClass::Rejected,
        // Webhook "send too fast" (observed code).
        (Call::SessionWebhook, 130101) => ErrorClass::SlowDown(THROTTLE_SLOW_DOWN),
        // Old-API token refused after the one retry: as InvalidAuthentication above.
        (_, 40014 | 88) => ErrorClass::Transient,
        // System busy (-1) on the old API.
        (_, -1) => ErrorClass::Transient,
        // 40004 bad media type, size refusals and anything else: this request never succeeds.
        _ => ErrorClass::Rejected,
    }
}

impl Error {
    /// What to do about this error (the table above; it lives here so the error type does not
    /// import its classification).
    pub fn class(&self) -> ErrorClass {
        classify(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorClass::*;

    fn api(call: Call, status: u16, code: &str) -> Error {
        Error::Api {
            call,
            status,
            code: code.into(),
            message: String::new(),
            required_scopes: vec![],
            retry_after: None,
        }
    }

    fn errcode(call: Call, errcode: i64) -> Error {
        Error::Errcode {
            call,
            errcode,
            errmsg: String::new(),
        }
    }

    fn http(call: Call, status: u16) -> Error {
        Error::Http {
            call,
            status,
            retry_after: None,
        }
    }

    #[test]
    fn every_row() {
        use Call::*;
        let s = Duration::from_secs;
        let rows: Vec<(Error, ErrorClass)> = vec![
            (
                api(Token, 400, "invalidClientIdOrSecret"),
                Fatal(FatalReason::BadCredentials),
            ),
            (
                api(OpenConnection, 401, "authFailed"),
                Fatal(FatalReason::BadCredentials),
            ),
            (
                api(OpenConnection, 400, "invalidParameter"),
                Fatal(FatalReason::AppNotReady),
            ),
            (api(OpenConnection, 503, "ServiceUnavailable"), Transient),
            (api(BatchSend, 401, "InvalidAuthentication"), Transient),
            (api(BatchSend, 400, "InvalidAuthentication"), Transient),
            (
                api(
                    BatchSend,
                    403,
                    "Forbidden.AccessDenied.AccessTokenPermissionDenied",
                ),
                Fatal(FatalReason::MissingScope),
            ),
            (
                api(BatchSend, 403, "Forbidden.AccessDenied.QpsLimitForApi"),
                SlowDown(s(1)),
            ),
            (
                api(
                    CardStream,
                    403,
                    "Forbidden.AccessDenied.QpsLimitForAppkeyAndApi",
                ),
                SlowDown(s(1)),
            ),
            (
                api(BatchSend, 400, "resource.not.found"),
                Fatal(FatalReason::RobotNotFound),
            ),
            (
                api(GroupSend, 400, "invalidParameter.robotCode.empty"),
                Fatal(FatalReason::RobotNotFound),
            ),
            (
                api(BatchSend, 400, "invalidParameter.userIds.invalid"),
                Rejected,
            ),
            (
                api(
                    GroupSend,
                    400,
                    "invalidParameter.openConversationId.invalid",
                ),
                Rejected,
            ),
            (
                api(GroupSend, 400, "send.too.fast"),
                SlowDown(THROTTLE_SLOW_DOWN),
            ),
            (
                api(BatchSend, 400, "send.byToken.tooFast"),
                SlowDown(THROTTLE_SLOW_DOWN),
            ),
            (api(CardCreate, 400, "param.empty"), Rejected),
            (api(CardCreate, 500, "InternalError"), Transient),
            (api(Download, 400, "invalidParameter"), Rejected),
            (errcode(SessionWebhook, 300001), Rejected),
            (
                errcode(SessionWebhook, 130101),
                SlowDown(THROTTLE_SLOW_DOWN),
            ),
            (errcode(Upload, 40014), Transient),
            (errcode(Upload, 88), Transient),
            (errcode(Upload, 40004), Rejected),
            (errcode(Upload, 40006), Rejected),
            (errcode(Upload, -1), Transient),
            (http(BatchSend, 502), Transient),
            (http(BatchSend, 429), SlowDown(s(1))),
            (http(DownloadUrl, 403), Transient),
            (http(BatchSend, 404), Rejected),
            (Error::Handshake { status: 400 }, Transient),
            (Error::Closed, Transient),
            (Error::Idle(s(120)), Transient),
            (Error::PongMissing(s(10)), Transient),
            (Error::WebSocket("too big".into()), Transient),
            (Error::WebhookExpired, Rejected),
            (Error::Invalid("x".into()), Rejected),
            (
                Error::TooLarge {
                    what: "file",
                    limit: 1,
                },
                Rejected,
            ),
            (Error::Io("disk full".into()), Transient),
            (
                Error::NotSent {
                    call: BatchSend,
                    reason: NotSent::FlowControlled,
                },
                SlowDown(THROTTLE_SLOW_DOWN),
            ),
            (
                Error::NotSent {
                    call: BatchSend,
                    reason: NotSent::InvalidRecipient,
                },
                Rejected,
            ),
            (
                Error::NotSent {
                    call: CardCreate,
                    reason: NotSent::CardRefused {
                        detail: String::new(),
                    },
                },
                Rejected,
            ),
            (
                Error::Timeout {
                    call: Token,
                    after: s(20),
                },
                Transient,
            ),
            (
                Error::Malformed {
                    call: Token,
                    detail: "x".into(),
                },
                Transient,
            ),
        ];
        for (err, want) in rows {
            assert_eq!(classify(&err), want, "{err}");
        }
    }

    #[test]
    fn only_bad_credentials_ask_for_a_login_and_every_reason_has_a_hint() {
        for r in [
            FatalReason::BadCredentials,
            FatalReason::AppNotReady,
            FatalReason::MissingScope,
            FatalReason::RobotNotFound,
        ] {
            assert_eq!(r.relogin(), r == FatalReason::BadCredentials);
            assert!(!r.hint().is_empty());
        }
    }

    #[test]
    fn token_and_card_helpers() {
        assert!(api(Call::BatchSend, 401, "InvalidAuthentication").is_token_invalid());
        assert!(errcode(Call::Upload, 40014).is_token_invalid());
        assert!(!errcode(Call::SessionWebhook, 40014).is_token_invalid());
        assert!(
            api(
                Call::CardStream,
                403,
                "Forbidden.AccessDenied.QpsLimitForApi"
            )
            .card_should_degrade()
        );
        assert!(http(Call::CardCreate, 503).card_should_degrade());
        assert!(!http(Call::BatchSend, 503).card_should_degrade());
    }
}
