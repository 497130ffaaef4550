//! The one table from the QQ crate's errors to the daemon's [`Failure`]: the gateway loop and the
//! sender both use it, so a cause has one class, one code and one fix wherever it shows. The
//! crate classifies (`scv_qq::classify`, spec §6 and the close codes of §1.3); this table names
//! the cause and the fix.

use scv_qq::{Error, ErrorClass, Fatal, Rejection};

use crate::failure::{Action, Code, Command, Failure, general};
use crate::ids::AccountKey;

/// The AppID or AppSecret is refused (token endpoint or OpenAPI credential codes).
pub const BAD_CREDENTIALS: Code = Code::new("qq.bad_credentials");
/// Close 4914: the bot is offline or unpublished (only the sandbox may connect).
pub const BOT_OFFLINE: Code = Code::new("qq.bot_offline");
/// Close 4915: the bot is banned.
pub const BOT_BANNED: Code = Code::new("qq.bot_banned");
/// Close 4014: the C2C/group or interaction event permission is not granted.
pub const INTENT_REFUSED: Code = Code::new("qq.intent_refused");
/// Close 4001–4003 and 4010–4013: the gateway refused what this client sent (shard, intents,
/// a frame); reconnecting would repeat it.
pub const GATEWAY_REFUSED: Code = Code::new("qq.gateway_refused");
/// A configured base URL cannot be used.
pub const BAD_BASE_URL: Code = Code::new("qq.bad_base_url");
/// A rate-limit answer (429, `22009`, `100001`), close 4008, or no session starts left today.
pub const THROTTLED: Code = Code::new("qq.throttled");
/// 5xx, the platform's own hiccups, a dropped or silent gateway: retried with backoff.
pub const SERVER_ERROR: Code = Code::new("qq.server_error");
/// An answer that is not the platform's JSON: retried with backoff.
pub const MALFORMED: Code = Code::new("qq.malformed");
/// No live reply window: QQ lets the bot write only in reply to a recent message.
pub const WINDOW_CLOSED: Code = Code::new("qq.window_closed");
/// The `msg_id` + `msg_seq` pair was used already: retried with the next `msg_seq`.
pub const DUPLICATE_SEQ: Code = Code::new("qq.duplicate_seq");
/// The text held a link the platform refuses.
pub const URL_REFUSED: Code = Code::new("qq.url_refused");
/// The bot lacks a permission (markdown, keyboards).
pub const PERMISSION: Code = Code::new("qq.permission");
/// The daily upload quota is used up.
pub const QUOTA: Code = Code::new("qq.quota");
/// Any other refusal of one request (a content audit, another 4xx).
pub const REFUSED: Code = Code::new("qq.refused");

/// Why a message waits: the words of the `sends` note ("N messages wait: …").
pub const WAITS_FOR_OWNER: &str = "QQ lets the bot write only in reply; send the bot any message";

/// Every QQ code, for the documentation check.
#[cfg(test)]
const CODES: &[Code] = &[
    BAD_CREDENTIALS,
    BOT_OFFLINE,
    BOT_BANNED,
    INTENT_REFUSED,
    GATEWAY_REFUSED,
    BAD_BASE_URL,
    THROTTLED,
    SERVER_ERROR,
    MALFORMED,
    WINDOW_CLOSED,
    DUPLICATE_SEQ,
    URL_REFUSED,
    PERMISSION,
    QUOTA,
    REFUSED,
];

/// What `e`, met by `account`, means for the daemon and for the person.
pub fn failure(e: &Error, account: &AccountKey) -> Failure {
    let message = e.to_string();
    match e.class() {
        ErrorClass::Transient => Failure::transient(transient_code(e), message),
        ErrorClass::SlowDown(d) => Failure::slow_down(THROTTLED, message, d),
        ErrorClass::Fatal(f) => fatal(f, message, account),
        ErrorClass::Rejected(Rejection::NeedsTrigger | Rejection::WindowClosed) => {
            Failure::window_closed(WINDOW_CLOSED, WAITS_FOR_OWNER)
        }
        // Met only by a fresh pair after one fresh retry (a repeated pair refused as a duplicate
        // was delivered, `sender::send_body`): the account's state lost spent replies; retry.
        ErrorClass::Rejected(Rejection::DuplicateSeq) => Failure::transient(DUPLICATE_SEQ, message),
        ErrorClass::Rejected(r) => Failure::rejected(rejected_code(r), message),
    }
}

/// A closed window met before asking the platform (no trigger is open).
pub fn window_closed() -> Failure {
    Failure::window_closed(WINDOW_CLOSED, WAITS_FOR_OWNER)
}

/// A base URL the account cannot use.
pub fn bad_base_url(detail: String, account: &AccountKey) -> Failure {
    Failure::fatal(
        BAD_BASE_URL,
        detail,
        Action::Reload {
            first: format!(
                "check api_base and token_base under [qq.{}]",
                account.account
            )
            .into(),
        },
    )
}

fn fatal(f: Fatal, message: String, account: &AccountKey) -> Failure {
    let console = |first: &'static str| Action::Console {
        first: first.into(),
        then: Command::Enable(account.clone()),
    };
    match f {
        Fatal::BadCredentials => Failure::fatal(
            BAD_CREDENTIALS,
            "QQ refused the AppID or AppSecret",
            Action::Console {
                first: "copy the AppID and AppSecret again from q.qq.com (Development → Settings)"
                    .into(),
                then: Command::Login(account.clone()),
            },
        ),
        Fatal::BotOffline => Failure::fatal(
            BOT_OFFLINE,
            "QQ says the bot is offline or not published (only the sandbox may connect)",
            console("publish the bot on q.qq.com, or add your QQ to its sandbox"),
        ),
        Fatal::BotBanned => Failure::fatal(
            BOT_BANNED,
            "QQ has banned this bot",
            console("see the notice on q.qq.com and appeal there"),
        ),
        Fatal::IntentNotPermitted => Failure::fatal(
            INTENT_REFUSED,
            "QQ refused the bot's events (one-to-one, group @ or button clicks)",
            console("grant the bot the C2C and group message events on q.qq.com"),
        ),
        Fatal::BadConfig { .. } | Fatal::ClientBug { .. } => Failure::fatal(
            GATEWAY_REFUSED,
            message,
            Action::Otherwise {
                first: "upgrade scv-bridge".into(),
                or: "disable the account with",
                command: Command::Disable(account.clone()),
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
        Rejection::NeedsTrigger | Rejection::WindowClosed => WINDOW_CLOSED,
        Rejection::DuplicateSeq => DUPLICATE_SEQ,
        Rejection::Url => URL_REFUSED,
        Rejection::Permission { .. } => PERMISSION,
        Rejection::TooLarge => general::MESSAGE_TOO_LONG,
        Rejection::Quota => QUOTA,
        Rejection::Other { .. } => REFUSED,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use scv_qq::Call;

    use super::*;
    use crate::failure::Class;
    use crate::ids::Channel;

    fn api(code: i64, http_status: u16) -> Error {
        Error::Api {
            call: Call::SendC2c,
            http_status,
            code,
            message: "x".into(),
            retry_after: Some(Duration::from_secs(2)),
        }
    }

    #[test]
    fn every_error_has_one_row() {
        let key = AccountKey::new(Channel::Qq, "bot");
        let closed = |code| Error::GatewayClosed { code };
        let rows: Vec<(Error, Class, &str)> = vec![
            (
                Error::Token {
                    code: 100016,
                    message: "x".into(),
                },
                Class::Fatal,
                "qq.bad_credentials",
            ),
            (closed(4914), Class::Fatal, "qq.bot_offline"),
            (closed(4915), Class::Fatal, "qq.bot_banned"),
            (closed(4014), Class::Fatal, "qq.intent_refused"),
            (closed(4012), Class::Fatal, "qq.gateway_refused"),
            (closed(4002), Class::Fatal, "qq.gateway_refused"),
            (
                api(22009, 200),
                Class::SlowDown(Duration::from_secs(2)),
                "qq.throttled",
            ),
            (api(0, 502), Class::Transient, "qq.server_error"),
            (closed(1006), Class::Transient, "qq.server_error"),
            (api(40034102, 400), Class::WindowClosed, "qq.window_closed"),
            (api(40034024, 400), Class::WindowClosed, "qq.window_closed"),
            (api(40054005, 400), Class::Transient, "qq.duplicate_seq"),
            (api(40054010, 400), Class::Rejected, "qq.url_refused"),
            (api(304037, 400), Class::Rejected, "qq.permission"),
            (api(40093002, 400), Class::Rejected, "qq.quota"),
            (api(12345, 400), Class::Rejected, "qq.refused"),
        ];
        for (e, class, code) in rows {
            let f = failure(&e, &key);
            assert_eq!((f.class, f.code.as_str()), (class, code), "{e}");
        }
        let f = failure(&closed(4915), &key);
        let text = f.action.text().unwrap_or_default();
        assert!(text.contains("`scv-bridge"), "a command to copy: {text}");
        let f = failure(&api(40034024, 400), &key);
        assert_eq!(f.message, WAITS_FOR_OWNER);
    }

    #[test]
    fn codes_are_pinned_and_documented() {
        let spelled: Vec<&str> = CODES.iter().map(|c| c.as_str()).collect();
        assert_eq!(spelled.len(), 15);
        assert!(spelled.iter().all(|c| c.starts_with("qq.")));
        crate::failure::assert_documented(CODES);
    }
}
