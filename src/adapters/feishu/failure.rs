//! The one table from the Feishu crate's errors to the daemon's [`Failure`]: the long
//! connection, setup and the sender all use it.

use scv_feishu::{Error, ErrorClass, FatalReason, classify};

use crate::failure::{Action, Code, Command, Failure, general};
use crate::ids::AccountKey;

/// The app ID or secret was rejected.
pub const BAD_CREDENTIALS: Code = Code::new("feishu.bad_credentials");
/// The app is disabled, unpublished, or its bot capability is off.
pub const APP_DISABLED: Code = Code::new("feishu.app_disabled");
/// The app lacks an API scope.
pub const MISSING_SCOPE: Code = Code::new("feishu.missing_scope");
/// This machine's IP is not in the app's allow-list.
pub const IP_NOT_ALLOWED: Code = Code::new("feishu.ip_not_allowed");
/// The app already has 50 long connections open.
pub const CONNECTION_LIMIT: Code = Code::new("feishu.connection_limit");
/// The long connection was forbidden (event delivery by long connection is off).
pub const FORBIDDEN: Code = Code::new("feishu.forbidden");
/// The long-connection endpoint refused with a client-error code.
pub const REFUSED: Code = Code::new("feishu.refused");
/// The platform asked to slow down (429, rate-limit codes).
pub const THROTTLED: Code = Code::new("feishu.throttled");
/// The platform refused this one request for good (bad content, recalled message).
pub const REJECTED: Code = Code::new("feishu.rejected");
/// The request was invalid before it was sent.
pub const INVALID_REQUEST: Code = Code::new("feishu.invalid_request");
/// A business code that is worth retrying (busy, a token still stale after the refetch).
pub const API_ERROR: Code = Code::new("feishu.api_error");
/// An HTTP answer without a JSON body (a gateway's 5xx).
pub const SERVER_ERROR: Code = Code::new("feishu.server_error");
/// The WebSocket upgrade was refused for a reason worth retrying.
pub const HANDSHAKE_FAILED: Code = Code::new("feishu.handshake_failed");
/// The WebSocket failed after the handshake.
pub const WEBSOCKET: Code = Code::new("feishu.websocket");
/// The server closed the long connection.
pub const CONNECTION_CLOSED: Code = Code::new("feishu.connection_closed");
/// No frame arrived within the liveness window.
pub const STALLED: Code = Code::new("feishu.stalled");
/// An answer that does not parse as the documented shape.
pub const MALFORMED: Code = Code::new("feishu.malformed");
/// A card for an update is not valid JSON, or a card would replace a text.
pub const CARD_INVALID: Code = Code::new("feishu.card_invalid");
/// The configured `domain` is not one the crate knows.
pub const BAD_DOMAIN: Code = Code::new("feishu.bad_domain");
/// `owner = "app_owner"`, but the application API names no owner.
pub const NO_APP_OWNER: Code = Code::new("feishu.no_app_owner");
/// Callback mode without the app's Encrypt Key stored.
pub const NO_ENCRYPT_KEY: Code = Code::new("feishu.no_encrypt_key");
/// `webhook_listen` is not an address, or it cannot be listened on.
pub const BAD_LISTEN: Code = Code::new("feishu.bad_listen");
/// The callback listener stopped or failed.
pub const LISTENER_FAILED: Code = Code::new("feishu.listener_failed");

/// A media item is over a size limit (Feishu's 100 MB download, 10 MB image, 30 MB file, or
/// the bridge's own cap).
pub const MEDIA_TOO_LARGE: Code = Code::new("feishu.media_too_large");
/// A received item cannot be downloaded (message deleted, key not in it, a card or forward,
/// restricted chat).
pub const MEDIA_UNAVAILABLE: Code = Code::new("feishu.media_unavailable");
/// The platform refused an upload (empty, unrecognised image, resolution, bad parameter).
pub const MEDIA_REFUSED: Code = Code::new("feishu.media_refused");
/// A stored media reference cannot be read (no message id, key or type).
pub const MEDIA_MALFORMED: Code = Code::new("feishu.media_malformed");
/// The local file to send or to write cannot be read or written.
pub const MEDIA_FILE: Code = Code::new("feishu.media_file");

/// Every Feishu code, for the documentation check.
#[cfg(test)]
const CODES: &[Code] = &[
    BAD_CREDENTIALS,
    APP_DISABLED,
    MISSING_SCOPE,
    IP_NOT_ALLOWED,
    CONNECTION_LIMIT,
    FORBIDDEN,
    REFUSED,
    THROTTLED,
    REJECTED,
    INVALID_REQUEST,
    API_ERROR,
    SERVER_ERROR,
    HANDSHAKE_FAILED,
    WEBSOCKET,
    CONNECTION_CLOSED,
    STALLED,
    MALFORMED,
    CARD_INVALID,
    BAD_DOMAIN,
    NO_APP_OWNER,
    NO_ENCRYPT_KEY,
    BAD_LISTEN,
    LISTENER_FAILED,
    MEDIA_TOO_LARGE,
    MEDIA_UNAVAILABLE,
    MEDIA_REFUSED,
    MEDIA_MALFORMED,
    MEDIA_FILE,
];

/// What `e`, met by `account`, means for the daemon and for the person.
pub fn failure(e: &Error, account: &AccountKey) -> Failure {
    match classify(e) {
        ErrorClass::Transient => Failure::transient(transient_code(e), e.to_string()),
        ErrorClass::SlowDown(d) => Failure::slow_down(THROTTLED, e.to_string(), d),
        ErrorClass::Rejected { code } => {
            let code = match e {
                Error::Invalid(_) => INVALID_REQUEST,
                Error::TooLarge { .. } => MEDIA_TOO_LARGE,
                _ => media_code(code).unwrap_or(REJECTED),
            };
            Failure::rejected(code, e.to_string())
        }
        // The hint says what is wrong in the console's words; the crate's text is a code.
        ErrorClass::Fatal { reason } => {
            Failure::fatal(fatal_code(&reason), reason.hint(), fix(&reason, account))
        }
    }
}

/// The media codes among the platform's refusals (media-and-streaming §3.2, §4.2).
fn media_code(code: i64) -> Option<Code> {
    match code {
        234037 | 234006 => Some(MEDIA_TOO_LARGE),
        230110 | 234003 | 234004 | 234009 | 234038 | 234040 | 234043 => Some(MEDIA_UNAVAILABLE),
        234001 | 234010 | 234011 | 234039 | 234041 => Some(MEDIA_REFUSED),
        _ => None,
    }
}

/// The cause of a failure worth retrying.
fn transient_code(e: &Error) -> Code {
    match e {
        Error::Network(_) => general::NETWORK,
        Error::WebSocket(_) => WEBSOCKET,
        Error::Closed => CONNECTION_CLOSED,
        Error::Stalled(_) => STALLED,
        Error::Decode(_) => MALFORMED,
        Error::Io(_) => MEDIA_FILE,
        Error::Http { .. } => SERVER_ERROR,
        Error::Handshake { .. } => HANDSHAKE_FAILED,
        Error::Token { .. }
        | Error::Api { .. }
        | Error::Endpoint { .. }
        | Error::Invalid(_)
        | Error::TooLarge { .. } => API_ERROR,
    }
}

/// The cause of a failure only a person can fix.
fn fatal_code(reason: &FatalReason) -> Code {
    match reason {
        FatalReason::BadCredentials => BAD_CREDENTIALS,
        FatalReason::AppDisabled => APP_DISABLED,
        FatalReason::MissingScope => MISSING_SCOPE,
        FatalReason::IpNotAllowed => IP_NOT_ALLOWED,
        FatalReason::ConnectionLimit => CONNECTION_LIMIT,
        FatalReason::Forbidden => FORBIDDEN,
        FatalReason::Refused { .. } => REFUSED,
    }
}

/// The one thing a person can do about a fatal reason.
fn fix(reason: &FatalReason, account: &AccountKey) -> Action {
    match reason {
        FatalReason::BadCredentials => Action::Console {
            first: "check the app ID and secret in the developer console".into(),
            then: Command::Login(account.clone()),
        },
        FatalReason::ConnectionLimit => Action::Reload {
            first: "close other long connections of this app (at most 50)".into(),
        },
        _ => Action::Console {
            first: "fix it in the Feishu developer console".into(),
            then: Command::Reload,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use scv_feishu::classify::DEFAULT_SLOW_DOWN;

    use super::*;
    use crate::failure::Class;
    use crate::ids::Channel;

    fn api(code: i64, http_status: u16) -> Error {
        Error::Api {
            code,
            msg: "m".into(),
            http_status,
            retry_after: Some(Duration::from_secs(2)),
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
    fn every_error_and_reason_has_one_row() {
        let key = AccountKey::new(Channel::Feishu, "w");
        let console_reload = Action::Console {
            first: "fix it in the Feishu developer console".into(),
            then: Command::Reload,
        };
        let credentials = Action::Console {
            first: "check the app ID and secret in the developer console".into(),
            then: Command::Login(key.clone()),
        };
        let close = Action::Reload {
            first: "close other long connections of this app (at most 50)".into(),
        };
        let none = Action::None;
        let s = Duration::from_secs;
        // (error, class, code, the message is the reason's hint, action)
        let rows: Vec<(Error, Class, &str, bool, Action)> = vec![
            (
                Error::Network("reset".into()),
                Class::Transient,
                "network",
                false,
                none.clone(),
            ),
            (
                Error::WebSocket("x".into()),
                Class::Transient,
                "feishu.websocket",
                false,
                none.clone(),
            ),
            (
                Error::Closed,
                Class::Transient,
                "feishu.connection_closed",
                false,
                none.clone(),
            ),
            (
                Error::Stalled(s(3)),
                Class::Transient,
                "feishu.stalled",
                false,
                none.clone(),
            ),
            (
                Error::Decode("x".into()),
                Class::Transient,
                "feishu.malformed",
                false,
                none.clone(),
            ),
            (
                Error::Invalid("x".into()),
                Class::Rejected,
                "feishu.invalid_request",
                false,
                none.clone(),
            ),
            (
                Error::Http {
                    status: 502,
                    retry_after: None,
                },
                Class::Transient,
                "feishu.server_error",
                false,
                none.clone(),
            ),
            (
                Error::Http {
                    status: 429,
                    retry_after: None,
                },
                Class::SlowDown(DEFAULT_SLOW_DOWN),
                "feishu.throttled",
                false,
                none.clone(),
            ),
            (
                api(230020, 400),
                Class::SlowDown(s(2)),
                "feishu.throttled",
                false,
                none.clone(),
            ),
            (
                api(230025, 400),
                Class::Rejected,
                "feishu.rejected",
                false,
                none.clone(),
            ),
            (
                api(234037, 400),
                Class::Rejected,
                "feishu.media_too_large",
                false,
                none.clone(),
            ),
            (
                Error::TooLarge { limit: 10 },
                Class::Rejected,
                "feishu.media_too_large",
                false,
                none.clone(),
            ),
            (
                api(234003, 400),
                Class::Rejected,
                "feishu.media_unavailable",
                false,
                none.clone(),
            ),
            (
                api(234043, 400),
                Class::Rejected,
                "feishu.media_unavailable",
                false,
                none.clone(),
            ),
            (
                api(234011, 400),
                Class::Rejected,
                "feishu.media_refused",
                false,
                none.clone(),
            ),
            (
                api(234010, 400),
                Class::Rejected,
                "feishu.media_refused",
                false,
                none.clone(),
            ),
            (
                api(232096, 400),
                Class::Transient,
                "feishu.api_error",
                false,
                none.clone(),
            ),
            (
                Error::Io("disk full".into()),
                Class::Transient,
                "feishu.media_file",
                false,
                none.clone(),
            ),
            (
                api(234007, 400),
                Class::Fatal,
                "feishu.app_disabled",
                true,
                console_reload.clone(),
            ),
            (
                api(1, 503),
                Class::Transient,
                "feishu.api_error",
                false,
                none.clone(),
            ),
            (
                api(99991663, 400),
                Class::Transient,
                "feishu.api_error",
                false,
                none.clone(),
            ),
            (
                Error::Token {
                    code: 10014,
                    msg: "app secret invalid".into(),
                },
                Class::Fatal,
                "feishu.bad_credentials",
                true,
                credentials.clone(),
            ),
            (
                api(99991662, 400),
                Class::Fatal,
                "feishu.app_disabled",
                true,
                console_reload.clone(),
            ),
            (
                api(99991672, 400),
                Class::Fatal,
                "feishu.missing_scope",
                true,
                console_reload.clone(),
            ),
            (
                api(99991401, 400),
                Class::Fatal,
                "feishu.ip_not_allowed",
                true,
                console_reload.clone(),
            ),
            (
                hs(400, Some(514), Some(1000040350)),
                Class::Fatal,
                "feishu.connection_limit",
                true,
                close,
            ),
            (
                hs(403, None, None),
                Class::Fatal,
                "feishu.forbidden",
                true,
                console_reload.clone(),
            ),
            (
                hs(502, None, None),
                Class::Transient,
                "feishu.handshake_failed",
                false,
                none.clone(),
            ),
            (
                Error::Endpoint {
                    code: 42,
                    msg: String::new(),
                },
                Class::Fatal,
                "feishu.refused",
                true,
                console_reload,
            ),
            (
                Error::Endpoint {
                    code: 1000040345,
                    msg: String::new(),
                },
                Class::Fatal,
                "feishu.bad_credentials",
                true,
                credentials,
            ),
        ];
        for (e, class, code, hinted, action) in rows {
            let shown = e.to_string();
            let hint = match classify(&e) {
                ErrorClass::Fatal { reason } if hinted => Some(reason.hint().to_string()),
                _ => None,
            };
            let f = failure(&e, &key);
            crate::failure::assert_row(&f, &shown, class, code, hint.as_deref(), &action);
        }
    }

    #[test]
    fn a_bad_secret_says_what_to_check_and_the_login_to_run() {
        let bad = Error::Token {
            code: 10014,
            msg: "app secret invalid".into(),
        };
        let f = failure(&bad, &AccountKey::new(Channel::Feishu, "w"));
        assert!(f.message.contains("app secret"), "{}", f.message);
        assert_eq!(
            f.action.text().as_deref(),
            Some(
                "check the app ID and secret in the developer console, then run `scv-bridge login feishu w`"
            )
        );
    }

    #[test]
    fn every_code_is_documented() {
        crate::failure::assert_documented(CODES);
    }
}
