//! The one table from the WeCom crate's errors to the daemon's [`Failure`]: the intake loop and
//! the sender both use it, so a cause has one class, one code and one fix wherever it shows.
//! The crate classifies (`scv_wecom::classify`); this table names the cause and the fix.

use scv_wecom::{Error, ErrorClass, FatalReason};

use crate::failure::{Action, Code, Command, Failure, general};
use crate::ids::AccountKey;

/// The subscribe refused the bot id or secret (or three refusals in a row): only new
/// credentials help.
pub const BAD_CREDENTIALS: Code = Code::new("wecom.bad_credentials");
/// Another connection subscribed as this bot (`disconnected_event`): the account stops instead
/// of taking the bot back, which would start a mutual-kick loop (spec §1.5).
pub const SUPERSEDED: Code = Code::new("wecom.superseded");
/// The configured `url` cannot be used.
pub const BAD_URL: Code = Code::new("wecom.bad_url");
/// `45009`: wait as long as the platform asks.
pub const THROTTLED: Code = Code::new("wecom.throttled");
/// The proactive-send pace (2 s apart, 30 a minute, 1000 an hour) makes this send wait.
pub const PACED: Code = Code::new("wecom.paced");
/// Pings went unanswered: the link is dead and is dialled again.
pub const STALLED: Code = Code::new("wecom.stalled");
/// No subscribed connection right now (between reconnects): tried again.
pub const NOT_CONNECTED: Code = Code::new("wecom.not_connected");
/// A transient platform code (`-1`, `6000`, `846609`, `846601/2`): tried again.
pub const BUSY: Code = Code::new("wecom.busy");
/// A frame the protocol does not describe: tried again.
pub const MALFORMED: Code = Code::new("wecom.malformed");
/// A reply handle can no longer carry the answer (window passed, `846604/5/8`): the sender
/// falls back to a proactive send; met anywhere else it refuses that one request.
pub const HANDLE_GONE: Code = Code::new("wecom.handle_gone");
/// `93006`: the chat id is not one WeCom knows (ids are case-sensitive).
pub const CHAT_INVALID: Code = Code::new("wecom.chat_invalid");
/// A received file's download link expired (404 after ~5 minutes).
pub const LINK_EXPIRED: Code = Code::new("wecom.link_expired");
/// Any other refusal of one request.
pub const REFUSED: Code = Code::new("wecom.refused");

/// Every WeCom code, for the documentation check.
#[cfg(test)]
const CODES: &[Code] = &[
    BAD_CREDENTIALS,
    SUPERSEDED,
    BAD_URL,
    THROTTLED,
    PACED,
    STALLED,
    NOT_CONNECTED,
    BUSY,
    MALFORMED,
    HANDLE_GONE,
    CHAT_INVALID,
    LINK_EXPIRED,
    REFUSED,
];

/// What to change when another program took the bot (the account then waits to be enabled).
pub const SUPERSEDED_FIX: &str = "stop the other program connected as this WeCom bot (another scv-bridge, a WeCom plugin or SDK using the same bot id)";

/// What to copy again when the credentials are refused.
const RELOGIN_FIX: &str = "copy the bot id and secret again from the WeCom admin console (智能机器人 → API mode → long connection)";

/// What `e`, met by `account`, means for the daemon and for the person.
pub fn failure(e: &Error, account: &AccountKey) -> Failure {
    let message = e.to_string();
    match e.class() {
        ErrorClass::Transient => Failure::transient(transient_code(e), message),
        ErrorClass::SlowDown(d) => Failure::slow_down(THROTTLED, message, d),
        ErrorClass::Fatal { reason, .. } => fatal(reason, message, account),
        ErrorClass::HandleGone { .. } => Failure::rejected(HANDLE_GONE, message),
        ErrorClass::Rejected { code } => Failure::rejected(rejected_code(e, code), message),
    }
}

fn fatal(reason: FatalReason, message: String, account: &AccountKey) -> Failure {
    match reason {
        FatalReason::BadCredentials => Failure::fatal(
            BAD_CREDENTIALS,
            "WeCom refused the bot id or secret",
            Action::Console {
                first: RELOGIN_FIX.into(),
                then: Command::Login(account.clone()),
            },
        ),
        FatalReason::Superseded => Failure::fatal(
            SUPERSEDED,
            "another program took this WeCom bot over its long connection; this account stopped and does not reconnect",
            Action::Console {
                first: SUPERSEDED_FIX.into(),
                then: Command::Enable(account.clone()),
            },
        ),
        FatalReason::BadUrl => Failure::fatal(
            BAD_URL,
            message,
            Action::Reload {
                first: format!("check url under [wecom.{}]", account.account).into(),
            },
        ),
    }
}

fn transient_code(e: &Error) -> Code {
    match e {
        Error::Network(_) | Error::Closed | Error::ConnectionLost { .. } => general::NETWORK,
        Error::AckTimeout { .. } => general::TIMEOUT,
        Error::Stalled { .. } => STALLED,
        Error::NotConnected { .. } => NOT_CONNECTED,
        Error::Decode(_) => MALFORMED,
        _ => BUSY,
    }
}

fn rejected_code(e: &Error, code: i64) -> Code {
    match e {
        Error::TooLarge { .. } => general::MEDIA_TOO_LARGE,
        Error::BadMedia(_) => general::MEDIA_INVALID,
        Error::Http { status: 404 } => LINK_EXPIRED,
        _ if code == scv_wecom::classify::INVALID_CHATID => CHAT_INVALID,
        _ => REFUSED,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use scv_wecom::frame::cmd;

    use super::*;
    use crate::failure::Class;
    use crate::ids::Channel;

    fn platform(c: &'static str, code: i64) -> Error {
        Error::Platform {
            cmd: c,
            code,
            errmsg: "x".into(),
        }
    }

    #[test]
    fn every_error_has_one_row() {
        let key = AccountKey::new(Channel::Wecom, "bot");
        let rows: Vec<(Error, Class, &str)> = vec![
            (Error::Network("x".into()), Class::Transient, "network"),
            (Error::Closed, Class::Transient, "network"),
            (
                Error::AckTimeout {
                    cmd: cmd::SEND_MSG,
                    after: Duration::from_secs(5),
                },
                Class::Transient,
                "timeout",
            ),
            (
                Error::Stalled { missed: 2 },
                Class::Transient,
                "wecom.stalled",
            ),
            (
                Error::NotConnected { cmd: cmd::SEND_MSG },
                Class::Transient,
                "wecom.not_connected",
            ),
            (
                Error::Decode("x".into()),
                Class::Transient,
                "wecom.malformed",
            ),
            (platform(cmd::SEND_MSG, -1), Class::Transient, "wecom.busy"),
            (
                platform(cmd::SEND_MSG, 45009),
                Class::SlowDown(Duration::from_secs(60)),
                "wecom.throttled",
            ),
            (
                platform(cmd::RESPOND_MSG, 846608),
                Class::Rejected,
                "wecom.handle_gone",
            ),
            (
                platform(cmd::SEND_MSG, 93006),
                Class::Rejected,
                "wecom.chat_invalid",
            ),
            (
                platform(cmd::SEND_MSG, 40008),
                Class::Rejected,
                "wecom.refused",
            ),
            (
                Error::Http { status: 404 },
                Class::Rejected,
                "wecom.link_expired",
            ),
            (
                Error::TooLarge {
                    what: "file",
                    limit: 1,
                },
                Class::Rejected,
                "media_too_large",
            ),
            (
                Error::BadMedia("k".into()),
                Class::Rejected,
                "media_invalid",
            ),
            (Error::Superseded, Class::Fatal, "wecom.superseded"),
            (
                Error::CredentialsInvalid {
                    code: 93019,
                    errmsg: "x".into(),
                },
                Class::Fatal,
                "wecom.bad_credentials",
            ),
        ];
        for (e, class, code) in rows {
            let f = failure(&e, &key);
            assert_eq!((f.class, f.code.as_str()), (class, code), "{e}");
        }
    }

    #[test]
    fn superseded_says_to_stop_the_other_program_then_enable() {
        let key = AccountKey::new(Channel::Wecom, "bot");
        let f = failure(&Error::Superseded, &key);
        let fix = f.action.text().unwrap_or_default();
        assert!(fix.starts_with("stop the other program"), "{fix}");
        assert!(
            fix.ends_with("`scv-bridge channel enable wecom bot`"),
            "{fix}"
        );
        let f = failure(
            &Error::CredentialsInvalid {
                code: 853000,
                errmsg: "x".into(),
            },
            &key,
        );
        let fix = f.action.text().unwrap_or_default();
        assert!(fix.ends_with("`scv-bridge login wecom bot`"), "{fix}");
    }

    #[test]
    fn every_code_is_documented() {
        crate::failure::assert_documented(CODES);
    }
}
