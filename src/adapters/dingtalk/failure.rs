//! The one table from the DingTalk crate's errors to the daemon's [`Failure`]: the intake loop
//! and the sender both use it, so a cause has one class, one code and one fix wherever it
//! shows. The crate classifies (`scv_dingtalk::classify`); this table names the cause and the
//! fix.

use scv_dingtalk::{Error, ErrorClass, FatalReason, NotSent};

use crate::failure::{Action, Code, Command, Failure, general};
use crate::ids::AccountKey;

/// `invalidClientIdOrSecret` / `authFailed`: only a new login helps.
pub const BAD_CREDENTIALS: Code = Code::new("dingtalk.bad_credentials");
/// `connections/open` refused: robot off, receive mode not Stream, or no published version.
pub const APP_NOT_READY: Code = Code::new("dingtalk.app_not_ready");
/// The app lacks a permission (the error names the scope).
pub const MISSING_SCOPE: Code = Code::new("dingtalk.missing_scope");
/// `robot 不存在`: the robot capability is off or the robot code is wrong.
pub const ROBOT_NOT_FOUND: Code = Code::new("dingtalk.robot_not_found");
/// QPS limits, flow-controlled recipients, "send too fast": wait exactly as long as told.
pub const THROTTLED: Code = Code::new("dingtalk.throttled");
/// 5xx, a gateway page, a token still refused after its one refetch: retried with backoff.
pub const SERVER_ERROR: Code = Code::new("dingtalk.server_error");
/// A 2xx answer that is not the documented shape: retried with backoff.
pub const MALFORMED: Code = Code::new("dingtalk.malformed");
/// The Stream socket failed, closed, went silent (zombie) or missed its pong: reconnected.
pub const STREAM: Code = Code::new("dingtalk.stream");
/// HTTP 200 that left the recipient out (`invalidStaffIdList`, `filteredStaffIdList`) or a
/// card the platform did not deliver.
pub const NOT_DELIVERED: Code = Code::new("dingtalk.not_delivered");
/// The reply webhook expired (the sender then uses the robot API).
pub const WEBHOOK_EXPIRED: Code = Code::new("dingtalk.webhook_expired");
/// A local media file could not be read or written.
pub const MEDIA_FILE: Code = Code::new("dingtalk.media_file");
/// The configured `api_base` or `oapi_base` is not an http(s) URL.
pub const BAD_BASE_URL: Code = Code::new("dingtalk.bad_base_url");
/// Any other refusal of one request.
pub const REFUSED: Code = Code::new("dingtalk.refused");

/// Every DingTalk code, for the documentation check.
#[cfg(test)]
const CODES: &[Code] = &[
    BAD_CREDENTIALS,
    APP_NOT_READY,
    MISSING_SCOPE,
    ROBOT_NOT_FOUND,
    THROTTLED,
    SERVER_ERROR,
    MALFORMED,
    STREAM,
    NOT_DELIVERED,
    WEBHOOK_EXPIRED,
    MEDIA_FILE,
    BAD_BASE_URL,
    REFUSED,
];

/// What `e`, met by `account`, means for the daemon and for the person.
pub fn failure(e: &Error, account: &AccountKey) -> Failure {
    let message = e.to_string();
    match e.class() {
        ErrorClass::Transient => Failure::transient(transient_code(e), message),
        ErrorClass::SlowDown(d) => Failure::slow_down(THROTTLED, message, d),
        ErrorClass::Fatal(reason) => fatal(reason, e, account),
        ErrorClass::Rejected => Failure::rejected(rejected_code(e), message),
    }
}

fn fatal(reason: FatalReason, e: &Error, account: &AccountKey) -> Failure {
    let console = |first: String, then: Command| Action::Console {
        first: first.into(),
        then,
    };
    match reason {
        FatalReason::BadCredentials => Failure::fatal(
            BAD_CREDENTIALS,
            "DingTalk refused the app's client id or client secret",
            console(
                "copy the client id and secret again from the app's Credentials page in the DingTalk developer console".into(),
                Command::Login(account.clone()),
            ),
        ),
        FatalReason::AppNotReady => Failure::fatal(
            APP_NOT_READY,
            e.to_string(),
            console(
                "turn the app's robot on, set its message receive mode to Stream, and publish a version".into(),
                Command::Enable(account.clone()),
            ),
        ),
        FatalReason::MissingScope => {
            let scopes = match e {
                Error::Api {
                    required_scopes, ..
                } if !required_scopes.is_empty() => required_scopes.join(", "),
                _ => "the one named in the error".to_string(),
            };
            Failure::fatal(
                MISSING_SCOPE,
                e.to_string(),
                console(
                    format!("add the permission {scopes} on the app's permissions page and publish a version"),
                    Command::Enable(account.clone()),
                ),
            )
        }
        FatalReason::RobotNotFound => Failure::fatal(
            ROBOT_NOT_FOUND,
            e.to_string(),
            console(
                "enable the robot capability of the app (its robot code is the client id) and publish a version".into(),
                Command::Enable(account.clone()),
            ),
        ),
    }
}

fn transient_code(e: &Error) -> Code {
    match e {
        Error::Network { .. } => general::NETWORK,
        Error::Timeout { .. } => general::TIMEOUT,
        Error::Malformed { .. } => MALFORMED,
        Error::Handshake { .. }
        | Error::WebSocket(_)
        | Error::Closed
        | Error::Idle(_)
        | Error::PongMissing(_) => STREAM,
        Error::Io(_) => MEDIA_FILE,
        _ => SERVER_ERROR,
    }
}

fn rejected_code(e: &Error) -> Code {
    match e {
        Error::TooLarge { .. } => general::MEDIA_TOO_LARGE,
        Error::WebhookExpired => WEBHOOK_EXPIRED,
        Error::NotSent {
            reason: NotSent::InvalidRecipient | NotSent::Filtered | NotSent::CardRefused { .. },
            ..
        } => NOT_DELIVERED,
        Error::Errcode {
            errcode: 300001, ..
        } => WEBHOOK_EXPIRED,
        _ => REFUSED,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use scv_dingtalk::Call;

    use super::*;
    use crate::failure::Class;
    use crate::ids::Channel;

    fn api(call: Call, status: u16, code: &str, scopes: &[&str]) -> Error {
        Error::Api {
            call,
            status,
            code: code.into(),
            message: "m".into(),
            required_scopes: scopes.iter().map(|s| s.to_string()).collect(),
            retry_after: None,
        }
    }

    #[test]
    fn every_error_has_one_row() {
        let key = AccountKey::new(Channel::Dingtalk, "bot");
        let console = |first: &str, then: Command| Action::Console {
            first: first.to_string().into(),
            then,
        };
        let login = Command::Login(key.clone());
        let enable = Command::Enable(key.clone());
        let rows: Vec<(Error, Class, &str, Option<&str>, Action)> = vec![
            (
                api(Call::Token, 400, "invalidClientIdOrSecret", &[]),
                Class::Fatal,
                "dingtalk.bad_credentials",
                Some("DingTalk refused the app's client id or client secret"),
                console(
                    "copy the client id and secret again from the app's Credentials page in the DingTalk developer console",
                    login.clone(),
                ),
            ),
            (
                api(Call::OpenConnection, 401, "authFailed", &[]),
                Class::Fatal,
                "dingtalk.bad_credentials",
                Some("DingTalk refused the app's client id or client secret"),
                console(
                    "copy the client id and secret again from the app's Credentials page in the DingTalk developer console",
                    login,
                ),
            ),
            (
                api(Call::OpenConnection, 400, "invalidParameter", &[]),
                Class::Fatal,
                "dingtalk.app_not_ready",
                None,
                console(
                    "turn the app's robot on, set its message receive mode to Stream, and publish a version",
                    enable.clone(),
                ),
            ),
            (
                api(
                    Call::BatchSend,
                    403,
                    "Forbidden.AccessDenied.AccessTokenPermissionDenied",
                    &["qyapi_robot_sendmsg"],
                ),
                Class::Fatal,
                "dingtalk.missing_scope",
                None,
                console(
                    "add the permission qyapi_robot_sendmsg on the app's permissions page and publish a version",
                    enable.clone(),
                ),
            ),
            (
                api(Call::BatchSend, 400, "resource.not.found", &[]),
                Class::Fatal,
                "dingtalk.robot_not_found",
                None,
                console(
                    "enable the robot capability of the app (its robot code is the client id) and publish a version",
                    enable,
                ),
            ),
            (
                api(
                    Call::BatchSend,
                    403,
                    "Forbidden.AccessDenied.QpsLimitForApi",
                    &[],
                ),
                Class::SlowDown(Duration::from_secs(1)),
                "dingtalk.throttled",
                None,
                Action::None,
            ),
            (
                Error::NotSent {
                    call: Call::BatchSend,
                    reason: NotSent::FlowControlled,
                },
                Class::SlowDown(scv_dingtalk::limits::THROTTLE_SLOW_DOWN),
                "dingtalk.throttled",
                None,
                Action::None,
            ),
            (
                Error::NotSent {
                    call: Call::BatchSend,
                    reason: NotSent::InvalidRecipient,
                },
                Class::Rejected,
                "dingtalk.not_delivered",
                None,
                Action::None,
            ),
            (
                Error::Http {
                    call: Call::BatchSend,
                    status: 502,
                    retry_after: None,
                },
                Class::Transient,
                "dingtalk.server_error",
                None,
                Action::None,
            ),
            (
                Error::Network {
                    call: Call::OpenConnection,
                    detail: "refused".into(),
                    unsent: true,
                },
                Class::Transient,
                "network",
                None,
                Action::None,
            ),
            (
                Error::Timeout {
                    call: Call::Token,
                    after: Duration::from_secs(20),
                },
                Class::Transient,
                "timeout",
                None,
                Action::None,
            ),
            (
                Error::Malformed {
                    call: Call::Token,
                    detail: "x".into(),
                },
                Class::Transient,
                "dingtalk.malformed",
                None,
                Action::None,
            ),
            (
                Error::Idle(Duration::from_secs(120)),
                Class::Transient,
                "dingtalk.stream",
                None,
                Action::None,
            ),
            (
                Error::Handshake { status: 401 },
                Class::Transient,
                "dingtalk.stream",
                None,
                Action::None,
            ),
            (
                Error::Io("gone".into()),
                Class::Transient,
                "dingtalk.media_file",
                None,
                Action::None,
            ),
            (
                Error::WebhookExpired,
                Class::Rejected,
                "dingtalk.webhook_expired",
                None,
                Action::None,
            ),
            (
                Error::TooLarge {
                    what: "the upload",
                    limit: 1,
                },
                Class::Rejected,
                "media_too_large",
                None,
                Action::None,
            ),
            (
                Error::Errcode {
                    call: Call::Upload,
                    errcode: 40004,
                    errmsg: "bad type".into(),
                },
                Class::Rejected,
                "dingtalk.refused",
                None,
                Action::None,
            ),
        ];
        for (e, class, code, message, action) in rows {
            let shown = e.to_string();
            crate::failure::assert_row(&failure(&e, &key), &shown, class, code, message, &action);
        }
    }

    #[test]
    fn every_code_is_documented() {
        crate::failure::assert_documented(CODES);
    }
}
