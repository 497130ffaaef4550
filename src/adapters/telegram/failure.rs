//! The one table from the Telegram crate's errors to the daemon's [`Failure`]: the poll loop and
//! the sender both use it, so a cause has one class, one code and one fix wherever it shows.
//! The crate classifies (`scv_telegram::classify`); this table names the cause and the fix.

use scv_telegram::{Error, ErrorClass, FatalReason, Rejection};

use crate::failure::{Action, Code, Failure, general};
use crate::ids::AccountKey;

/// 401/404 on a call: the token is revoked or mistyped; only a new login helps.
pub const BAD_TOKEN: Code = Code::new("telegram.bad_token");
/// 409: another program polls the same token; two pollers knock each other out, so the account
/// stops instead of fighting.
pub const OTHER_POLLER: Code = Code::new("telegram.other_poller");
/// 409: a webhook is set (again, after the account deleted it once): polling is impossible.
pub const WEBHOOK_SET: Code = Code::new("telegram.webhook_set");
/// The configured `base_url` cannot be used.
pub const BAD_BASE_URL: Code = Code::new("telegram.bad_base_url");
/// `setWebhook` refused its URL or secret.
pub const BAD_WEBHOOK: Code = Code::new("telegram.bad_webhook");
/// 429: wait exactly `retry_after`.
pub const THROTTLED: Code = Code::new("telegram.throttled");
/// 5xx, or an HTTP status without a Bot API answer: retried with backoff.
pub const SERVER_ERROR: Code = Code::new("telegram.server_error");
/// An answer that is not the Bot API's JSON (a proxy's page): retried with backoff.
pub const MALFORMED: Code = Code::new("telegram.malformed");
/// The chat cannot be written to: the bot was blocked or removed, the user is gone.
pub const CHAT_UNREACHABLE: Code = Code::new("telegram.chat_unreachable");
/// The HTML did not parse (the sender then sends the text plain, once).
pub const BAD_MARKUP: Code = Code::new("telegram.bad_markup");
/// A button press answered too late, or twice.
pub const QUERY_TOO_OLD: Code = Code::new("telegram.query_too_old");
/// The group became a supergroup under a new id.
pub const CHAT_MIGRATED: Code = Code::new("telegram.chat_migrated");
/// `sendMessageDraft` refused (the answer then goes whole).
pub const DRAFT_REFUSED: Code = Code::new("telegram.draft_refused");
/// A `getFile` link expired before the download: asked again on the retry.
pub const LINK_EXPIRED: Code = Code::new("telegram.link_expired");
/// Any other refusal of one request.
pub const REFUSED: Code = Code::new("telegram.refused");

/// What to do when another program polls the token (the account stops rather than fight).
const OTHER_POLLER_FIX: &str = "stop the other program polling this bot token (another scv-bridge or bot framework; if none can be found, revoke the token with @BotFather /revoke and log in again)";

/// Every Telegram code, for the documentation check.
#[cfg(test)]
const CODES: &[Code] = &[
    BAD_TOKEN,
    OTHER_POLLER,
    WEBHOOK_SET,
    BAD_BASE_URL,
    BAD_WEBHOOK,
    THROTTLED,
    SERVER_ERROR,
    MALFORMED,
    CHAT_UNREACHABLE,
    BAD_MARKUP,
    QUERY_TOO_OLD,
    CHAT_MIGRATED,
    DRAFT_REFUSED,
    LINK_EXPIRED,
    REFUSED,
];

/// What `e`, met by `account`, means for the daemon and for the person.
pub fn failure(e: &Error, account: &AccountKey) -> Failure {
    let message = e.to_string();
    match e.class() {
        ErrorClass::Transient => Failure::transient(transient_code(e), message),
        ErrorClass::SlowDown(d) => Failure::slow_down(THROTTLED, message, d),
        ErrorClass::Fatal { reason, .. } => fatal(reason, message, account),
        ErrorClass::Rejected(Rejection::LinkExpired) => Failure::transient(LINK_EXPIRED, message),
        ErrorClass::Rejected(r) => Failure::rejected(rejected_code(r), message),
    }
}

fn fatal(reason: FatalReason, message: String, account: &AccountKey) -> Failure {
    let table = format!("[telegram.{}]", account.account);
    match reason {
        FatalReason::BadToken => Failure::fatal(
            BAD_TOKEN,
            "Telegram refused the bot token (revoked or mistyped)",
            Action::Console {
                first: "copy the token again from @BotFather (/mybots → API Token)".into(),
                then: crate::failure::Command::Login(account.clone()),
            },
        ),
        FatalReason::OtherPoller => Failure::fatal(
            OTHER_POLLER,
            "another program is polling this bot token",
            Action::Reload {
                first: OTHER_POLLER_FIX.into(),
            },
        ),
        FatalReason::WebhookSet => Failure::fatal(
            WEBHOOK_SET,
            "a webhook is set on this bot again after the bridge deleted it",
            Action::Reload {
                first: "stop the service that sets a webhook on this bot".into(),
            },
        ),
        FatalReason::BadConfig => Failure::fatal(
            BAD_BASE_URL,
            message,
            Action::Reload {
                first: format!("check base_url under {table}").into(),
            },
        ),
        FatalReason::BadWebhook => Failure::fatal(
            BAD_WEBHOOK,
            message,
            Action::Reload {
                first: format!("check the webhook settings under {table}").into(),
            },
        ),
    }
}

fn transient_code(e: &Error) -> Code {
    match e {
        Error::Network { .. } => general::NETWORK,
        Error::Timeout { .. } => general::TIMEOUT,
        Error::Malformed { .. } => MALFORMED,
        _ => SERVER_ERROR,
    }
}

fn rejected_code(r: Rejection) -> Code {
    match r {
        Rejection::TooLong => general::MESSAGE_TOO_LONG,
        Rejection::EmptyText => general::MESSAGE_EMPTY,
        Rejection::BadMarkup => BAD_MARKUP,
        Rejection::QueryTooOld => QUERY_TOO_OLD,
        Rejection::MessageNotFound | Rejection::ReplyNotFound => general::UPDATE_TARGET_MISSING,
        Rejection::ChatUnreachable => CHAT_UNREACHABLE,
        Rejection::FileTooBig => general::MEDIA_TOO_LARGE,
        Rejection::ChatMigrated { .. } => CHAT_MIGRATED,
        Rejection::DraftRefused => DRAFT_REFUSED,
        // "Not modified" is success where it can happen (the crate's edits say so); met
        // elsewhere it refuses this one request like any other.
        Rejection::NotModified
        | Rejection::ButtonDataInvalid
        | Rejection::LinkExpired
        | Rejection::Other => REFUSED,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use scv_telegram::Method;

    use super::*;
    use crate::failure::{Class, Command};
    use crate::ids::Channel;

    fn api(method: Method, code: u16, description: &str) -> Error {
        Error::Api {
            method,
            code,
            description: description.into(),
            retry_after: None,
            migrate_to: None,
        }
    }

    #[test]
    fn every_error_has_one_row() {
        let key = AccountKey::new(Channel::Telegram, "bot");
        let network = reqwest::Client::new()
            .get("not a url")
            .build()
            .expect_err("a builder error");
        let reload = |first: &str| Action::Reload {
            first: first.to_string().into(),
        };
        let rows: Vec<(Error, Class, &str, Option<&str>, Action)> = vec![
            (
                api(Method::GetUpdates, 401, "Unauthorized"),
                Class::Fatal,
                "telegram.bad_token",
                Some("Telegram refused the bot token (revoked or mistyped)"),
                Action::Console {
                    first: "copy the token again from @BotFather (/mybots → API Token)".into(),
                    then: Command::Login(key.clone()),
                },
            ),
            (
                api(
                    Method::GetUpdates,
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                ),
                Class::Fatal,
                "telegram.other_poller",
                Some("another program is polling this bot token"),
                reload(OTHER_POLLER_FIX),
            ),
            (
                api(
                    Method::GetUpdates,
                    409,
                    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
                ),
                Class::Fatal,
                "telegram.webhook_set",
                Some("a webhook is set on this bot again after the bridge deleted it"),
                reload("stop the service that sets a webhook on this bot"),
            ),
            (
                Error::InvalidBaseUrl {
                    url: "x".into(),
                    detail: "y".into(),
                },
                Class::Fatal,
                "telegram.bad_base_url",
                None,
                reload("check base_url under [telegram.bot]"),
            ),
            (
                api(
                    Method::SetWebhook,
                    400,
                    "Bad Request: bad webhook: HTTPS url must be provided for webhook",
                ),
                Class::Fatal,
                "telegram.bad_webhook",
                None,
                reload("check the webhook settings under [telegram.bot]"),
            ),
            (
                Error::Api {
                    method: Method::SendMessage,
                    code: 429,
                    description: "Too Many Requests: retry after 7".into(),
                    retry_after: Some(7),
                    migrate_to: None,
                },
                Class::SlowDown(Duration::from_secs(7)),
                "telegram.throttled",
                None,
                Action::None,
            ),
            (
                api(Method::SendMessage, 502, "Bad Gateway"),
                Class::Transient,
                "telegram.server_error",
                None,
                Action::None,
            ),
            (
                Error::Http {
                    method: Method::GetUpdates,
                    status: 503,
                },
                Class::Transient,
                "telegram.server_error",
                None,
                Action::None,
            ),
            (
                Error::Network {
                    method: Method::GetUpdates,
                    source: network,
                },
                Class::Transient,
                "network",
                None,
                Action::None,
            ),
            (
                Error::Timeout {
                    method: Method::GetUpdates,
                    after: Duration::from_secs(40),
                },
                Class::Transient,
                "timeout",
                None,
                Action::None,
            ),
            (
                Error::Malformed {
                    method: Method::GetUpdates,
                    detail: "html".into(),
                },
                Class::Transient,
                "telegram.malformed",
                None,
                Action::None,
            ),
            (
                api(
                    Method::SendMessage,
                    403,
                    "Forbidden: bot was blocked by the user",
                ),
                Class::Rejected,
                "telegram.chat_unreachable",
                None,
                Action::None,
            ),
            (
                api(Method::SendMessage, 400, "Bad Request: chat not found"),
                Class::Rejected,
                "telegram.chat_unreachable",
                None,
                Action::None,
            ),
            (
                api(
                    Method::SendMessage,
                    400,
                    "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0",
                ),
                Class::Rejected,
                "telegram.bad_markup",
                None,
                Action::None,
            ),
            (
                api(Method::SendMessage, 400, "Bad Request: message is too long"),
                Class::Rejected,
                "message_too_long",
                None,
                Action::None,
            ),
            (
                api(
                    Method::SendMessage,
                    400,
                    "Bad Request: message text is empty",
                ),
                Class::Rejected,
                "message_empty",
                None,
                Action::None,
            ),
            (
                api(
                    Method::AnswerCallbackQuery,
                    400,
                    "Bad Request: query is too old and response timeout expired or query id is invalid",
                ),
                Class::Rejected,
                "telegram.query_too_old",
                None,
                Action::None,
            ),
            (
                api(
                    Method::EditMessageText,
                    400,
                    "Bad Request: message to edit not found",
                ),
                Class::Rejected,
                "update_target_missing",
                None,
                Action::None,
            ),
            (
                Error::Api {
                    method: Method::SendMessage,
                    code: 400,
                    description: "Bad Request: group chat was upgraded to a supergroup chat".into(),
                    retry_after: None,
                    migrate_to: Some(-1001),
                },
                Class::Rejected,
                "telegram.chat_migrated",
                None,
                Action::None,
            ),
            (
                api(
                    Method::SendMessageDraft,
                    400,
                    "Bad Request: draft can't be sent",
                ),
                Class::Rejected,
                "telegram.draft_refused",
                None,
                Action::None,
            ),
            (
                api(Method::DownloadFile, 404, "Not Found"),
                Class::Transient,
                "telegram.link_expired",
                None,
                Action::None,
            ),
            (
                Error::TooBig {
                    method: Method::SendDocument,
                    size: 60_000_000,
                    limit: 50_000_000,
                },
                Class::Rejected,
                "media_too_large",
                None,
                Action::None,
            ),
            (
                api(Method::SendMessage, 400, "Bad Request: BUTTON_DATA_INVALID"),
                Class::Rejected,
                "telegram.refused",
                None,
                Action::None,
            ),
            (
                Error::Io {
                    method: Method::SendDocument,
                    detail: "gone".into(),
                },
                Class::Rejected,
                "telegram.refused",
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
