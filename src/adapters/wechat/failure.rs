//! The one table from the WeChat crate's errors to the daemon's [`Failure`]: the run loop and
//! the sender both use it, so a cause has one class, one code and one fix wherever it shows.

use scv_wechat::{Error, ErrorClass};

use crate::failure::{Action, Code, Failure, general};
use crate::ids::AccountKey;

/// Why sends pause after `ret=-2` (shown by the outbox as "sends failing: ...").
pub const REFUSED: &str = "WeChat refused a send (throttled, or the send window is used up)";
/// `ret`/`errcode` -14: the login expired, was rebound or is wrong; only a new login helps.
pub const SESSION_EXPIRED: Code = Code::new("wechat.session_expired");
/// `ret=-2` on a send: throttled, or the send window is used up; sends hold.
pub const SEND_REFUSED: Code = Code::new("wechat.send_refused");
/// Another non-zero `ret`/`errcode` (including -2 outside a send): retried with backoff.
pub const API_ERROR: Code = Code::new("wechat.api_error");
/// HTTP 429 from a gateway.
pub const THROTTLED: Code = Code::new("wechat.throttled");
/// Another HTTP 4xx: a wrong base URL or a request this client builds wrongly.
pub const HTTP_REFUSED: Code = Code::new("wechat.http_refused");
/// HTTP 5xx (or another status from the transport): retried with backoff.
pub const SERVER_ERROR: Code = Code::new("wechat.server_error");
/// An answer that is not the JSON the endpoint returns (a middlebox's page).
pub const MALFORMED: Code = Code::new("wechat.malformed");
/// A call that needs the bot token was made without one.
pub const NO_TOKEN: Code = Code::new("wechat.no_token");
/// The QR login was confirmed without a credential.
pub const LOGIN_INCOMPLETE: Code = Code::new("wechat.login_incomplete");
/// `base_url` (or a redirect host) cannot be used.
pub const BAD_BASE_URL: Code = Code::new("wechat.bad_base_url");
/// The peer's send window is closed: WeChat lets the bot write only after the peer writes.
pub const WINDOW_CLOSED: Code = Code::new("wechat.window_closed");

/// A media transfer with the CDN failed in a way that may heal (network, 5xx, no download
/// parameter): the send is retried.
pub const CDN_FAILED: Code = Code::new("wechat.cdn_failed");
/// The CDN or `getuploadurl` refused a file for good (4xx, no upload URL): the chat gets a line.
pub const MEDIA_REFUSED: Code = Code::new("wechat.media_refused");

/// Every WeChat code, for the documentation check.
#[cfg(test)]
const CODES: &[Code] = &[
    SESSION_EXPIRED,
    SEND_REFUSED,
    API_ERROR,
    THROTTLED,
    HTTP_REFUSED,
    SERVER_ERROR,
    MALFORMED,
    NO_TOKEN,
    LOGIN_INCOMPLETE,
    BAD_BASE_URL,
    WINDOW_CLOSED,
    CDN_FAILED,
    MEDIA_REFUSED,
];

/// What a media transfer's failure means: retried when it may heal, else final with a code
/// that says whether the media or the platform was at fault.
pub fn media_failure(e: &scv_wechat::cdn_client::MediaError, account: &AccountKey) -> Failure {
    use scv_wechat::cdn_client::MediaError as M;
    match e {
        M::Api(inner) => failure(inner, account),
        M::TooLarge { .. } => Failure::rejected(general::MEDIA_TOO_LARGE, e.to_string()),
        M::Crypto(_) | M::Mismatch(_) => Failure::rejected(general::MEDIA_INVALID, e.to_string()),
        M::Io(_) | M::NoAddress => Failure::rejected(general::MEDIA_UNSUPPORTED, e.to_string()),
        _ if e.is_transient() => Failure::transient(CDN_FAILED, e.to_string()),
        _ => Failure::rejected(MEDIA_REFUSED, e.to_string()),
    }
}

/// What `e`, met by `account`, means for the daemon and for the person.
pub fn failure(e: &Error, account: &AccountKey) -> Failure {
    let code = code(e);
    match e.class() {
        ErrorClass::Fatal { relogin: true } => {
            let message = if e.is_session_expired() {
                "session expired".to_string()
            } else {
                e.to_string()
            };
            Failure::fatal(code, message, Action::Relogin(account.clone()))
        }
        ErrorClass::Fatal { relogin: false } => Failure::fatal(
            code,
            e.to_string(),
            Action::Reload {
                first: format!("check base_url under [wechat.{}]", account.account).into(),
            },
        ),
        // The platform's words say only "-2"; people are told what it means.
        ErrorClass::SlowDown(d) if code == SEND_REFUSED => Failure::slow_down(code, REFUSED, d),
        ErrorClass::SlowDown(d) => Failure::slow_down(code, e.to_string(), d),
        ErrorClass::Transient => Failure::transient(code, e.to_string()),
    }
}

/// The cause of `e`, as a stable code.
fn code(e: &Error) -> Code {
    match e {
        Error::Api { .. } if e.is_session_expired() => SESSION_EXPIRED,
        Error::Api { .. } if matches!(e.class(), ErrorClass::SlowDown(_)) => SEND_REFUSED,
        Error::Api { .. } => API_ERROR,
        Error::Http { status: 429, .. } => THROTTLED,
        Error::Http { .. } if matches!(e.class(), ErrorClass::Fatal { .. }) => HTTP_REFUSED,
        Error::Http { .. } => SERVER_ERROR,
        Error::Network { .. } => general::NETWORK,
        Error::Timeout { .. } => general::TIMEOUT,
        Error::Malformed { .. } => MALFORMED,
        Error::NoToken { .. } => NO_TOKEN,
        Error::IncompleteLogin { .. } => LOGIN_INCOMPLETE,
        Error::InvalidBaseUrl { .. } => BAD_BASE_URL,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use scv_wechat::Endpoint;
    use scv_wechat::classify::{GATEWAY_SLOW_DOWN, SEND_SLOW_DOWN};

    use super::*;
    use crate::failure::Class;
    use crate::ids::Channel;

    fn api(endpoint: Endpoint, ret: Option<i64>, errcode: Option<i64>) -> Error {
        Error::Api {
            endpoint,
            ret,
            errcode,
            errmsg: "m".into(),
        }
    }

    fn http(status: u16) -> Error {
        Error::Http {
            endpoint: Endpoint::GetUpdates,
            status,
        }
    }

    #[test]
    fn every_error_has_one_row() {
        let key = AccountKey::new(Channel::Wechat, "phone");
        let relogin = Action::Relogin(key.clone());
        let reload = Action::Reload {
            first: "check base_url under [wechat.phone]".into(),
        };
        let network = reqwest::Client::new()
            .get("not a url")
            .build()
            .expect_err("a builder error");
        let rows: Vec<(Error, Class, &str, Option<&str>, Action)> = vec![
            (
                api(Endpoint::GetUpdates, None, Some(-14)),
                Class::Fatal,
                "wechat.session_expired",
                Some("session expired"),
                relogin.clone(),
            ),
            (
                api(Endpoint::SendMessage, Some(-2), None),
                Class::SlowDown(SEND_SLOW_DOWN),
                "wechat.send_refused",
                Some(REFUSED),
                Action::None,
            ),
            (
                api(Endpoint::GetUpdates, Some(-2), None),
                Class::Transient,
                "wechat.api_error",
                None,
                Action::None,
            ),
            (
                api(Endpoint::SendMessage, Some(-1), None),
                Class::Transient,
                "wechat.api_error",
                None,
                Action::None,
            ),
            (
                http(429),
                Class::SlowDown(GATEWAY_SLOW_DOWN),
                "wechat.throttled",
                None,
                Action::None,
            ),
            (
                http(404),
                Class::Fatal,
                "wechat.http_refused",
                None,
                reload.clone(),
            ),
            (
                http(502),
                Class::Transient,
                "wechat.server_error",
                None,
                Action::None,
            ),
            (
                Error::Network {
                    endpoint: Endpoint::GetUpdates,
                    source: network,
                },
                Class::Transient,
                "network",
                None,
                Action::None,
            ),
            (
                Error::Timeout {
                    endpoint: Endpoint::SendMessage,
                    after: Duration::from_secs(15),
                },
                Class::Transient,
                "timeout",
                None,
                Action::None,
            ),
            (
                Error::Malformed {
                    endpoint: Endpoint::GetUpdates,
                    detail: "html".into(),
                },
                Class::Transient,
                "wechat.malformed",
                None,
                Action::None,
            ),
            (
                Error::NoToken {
                    endpoint: Endpoint::SendTyping,
                },
                Class::Fatal,
                "wechat.no_token",
                None,
                relogin.clone(),
            ),
            (
                Error::IncompleteLogin { field: "bot_token" },
                Class::Fatal,
                "wechat.login_incomplete",
                None,
                relogin,
            ),
            (
                Error::InvalidBaseUrl {
                    url: "x".into(),
                    detail: "y".into(),
                },
                Class::Fatal,
                "wechat.bad_base_url",
                None,
                reload,
            ),
        ];
        for (e, class, code, message, action) in rows {
            let shown = e.to_string();
            crate::failure::assert_row(&failure(&e, &key), &shown, class, code, message, &action);
        }
    }

    #[test]
    fn media_failures_are_retried_only_when_they_may_heal() {
        use scv_wechat::cdn_client::MediaError as M;
        let key = AccountKey::new(crate::ids::Channel::Wechat, "w");
        let class = |e: M| {
            let f = media_failure(&e, &key);
            (f.class, f.code.as_str().to_string())
        };
        assert_eq!(
            class(M::Network("reset".into())),
            (Class::Transient, "wechat.cdn_failed".into())
        );
        assert_eq!(
            class(M::NoDownloadParam),
            (Class::Transient, "wechat.cdn_failed".into())
        );
        let http = |status| M::Http {
            status,
            message: String::new(),
        };
        assert_eq!(
            class(http(500)),
            (Class::Transient, "wechat.cdn_failed".into())
        );
        assert_eq!(
            class(http(400)),
            (Class::Rejected, "wechat.media_refused".into())
        );
        assert_eq!(
            class(M::NoUploadUrl),
            (Class::Rejected, "wechat.media_refused".into())
        );
        assert_eq!(
            class(M::TooLarge { max: 1 }),
            (Class::Rejected, "media_too_large".into())
        );
        assert_eq!(
            class(M::Mismatch("md5")),
            (Class::Rejected, "media_invalid".into())
        );
    }

    #[test]
    fn every_code_is_documented() {
        crate::failure::assert_documented(CODES);
    }
}
