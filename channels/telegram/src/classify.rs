//! One table from every failure to what the caller should do about it (spec §6). Errors are
//! classified here and nowhere else; the daemon matches on [`ErrorClass`], never on texts.

use std::time::Duration;

use crate::error::Error;
use crate::method::Method;

/// The wait after a 429 that carries no `retry_after` (the platform always sends one; a proxy
/// might not). Longer than the usual hint, so guessing errs on the quiet side.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// What the caller should do after an error. Made by [`classify`]; the variants are what the
/// daemon's supervisor and outbox match on, so they stay stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Retry with exponential backoff and jitter (1 → 64 s): 5xx, network, timeouts.
    Transient,
    /// The platform asked us to wait exactly this long (429 `retry_after`); then retry, without
    /// raising the error backoff.
    SlowDown(Duration),
    /// The account cannot work until a person acts; [`FatalReason::hint`] says what to do.
    Fatal {
        /// A new token (`login telegram`) is the fix.
        relogin: bool,
        /// Why.
        reason: FatalReason,
    },
    /// This one request can never succeed as it is; the account is fine.
    Rejected(Rejection),
}

/// Why an account cannot work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatalReason {
    /// 401/404 on a call: the token is wrong or revoked.
    BadToken,
    /// 409 "terminated by other getUpdates request": another process polls this token.
    OtherPoller,
    /// 409 "can't use getUpdates method while webhook is active".
    WebhookSet,
    /// The base URL is unusable.
    BadConfig,
    /// `setWebhook` refused the URL, secret or connection count.
    BadWebhook,
}

impl FatalReason {
    /// What the owner should do, in a sentence (the daemon wraps it with the account's command).
    pub fn hint(self) -> &'static str {
        match self {
            FatalReason::BadToken => {
                "Telegram refused the bot token (revoked or mistyped): get it from @BotFather and run `scv-bridge login telegram ACCOUNT` again"
            }
            FatalReason::OtherPoller => {
                "another program is polling this bot token: stop it (or revoke the token with @BotFather /revoke and log in again); two pollers knock each other out"
            }
            FatalReason::WebhookSet => {
                "a webhook is set on this bot, so polling is impossible: the bridge deletes it once; if it comes back, another service sets it, stop that service"
            }
            FatalReason::BadConfig => "the Telegram base URL in the configuration is not usable",
            FatalReason::BadWebhook => {
                "Telegram refused the webhook: it needs an HTTPS URL on port 443, 80, 88 or 8443 and a secret of letters, digits, _ and -"
            }
        }
    }
}

/// Why one request was refused. The comment on each says what the caller does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// An edit with the message's current content: treat as success (the client already does).
    NotModified,
    /// Text over the limit: split and resend once.
    TooLong,
    /// `can't parse entities`: resend once as plain text.
    BadMarkup,
    /// Empty text: nothing to send; drop with a reason.
    EmptyText,
    /// `callback_data` over 64 bytes: a bug in our keyboard; send without buttons.
    ButtonDataInvalid,
    /// A callback answered late or twice: drop, log.
    QueryTooOld,
    /// The message to edit is gone: continue in a new message.
    MessageNotFound,
    /// The message to reply to is gone: resend without the reply.
    ReplyNotFound,
    /// Blocked, kicked, deactivated, never started, or no such chat: mark the chat unreachable.
    ChatUnreachable,
    /// A file over a download or upload limit: tell the owner.
    FileTooBig,
    /// A download link past its lifetime (404 on the file path): call `getFile` again.
    LinkExpired,
    /// The group became a supergroup: rewrite the chat id and retry.
    ChatMigrated {
        /// The new chat id.
        to: i64,
    },
    /// `sendMessageDraft` refused (group chat, bad draft id, not available): stream by edits.
    DraftRefused,
    /// Any other 4xx: drop with a reason.
    Other,
}

impl Error {
    /// What to do about this error (the one table, [`classify`]).
    pub fn class(&self) -> ErrorClass {
        classify(self)
    }
}

/// Maps an error to what the caller should do. Every row is tested.
pub fn classify(err: &Error) -> ErrorClass {
    match err {
        Error::Api {
            method,
            code,
            description,
            retry_after,
            migrate_to,
        } => classify_api(*method, *code, description, *retry_after, *migrate_to),
        // A gateway's 429 without the platform's body: no hint, so the default wait.
        Error::Http { status: 429, .. } => ErrorClass::SlowDown(DEFAULT_RETRY_AFTER),
        Error::Http { status, .. } if (400..500).contains(status) && *status != 408 => {
            ErrorClass::Rejected(Rejection::Other)
        }
        Error::Http { .. } | Error::Network { .. } | Error::Timeout { .. } => ErrorClass::Transient,
        // A middlebox's HTML page or a truncated body: it may clear.
        Error::Malformed { .. } => ErrorClass::Transient,
        Error::TooBig { .. } => ErrorClass::Rejected(Rejection::FileTooBig),
        // The local file (unreadable, disk full): this request cannot go as it is.
        Error::Io { .. } => ErrorClass::Rejected(Rejection::Other),
        Error::InvalidBaseUrl { .. } => fatal(false, FatalReason::BadConfig),
    }
}

fn fatal(relogin: bool, reason: FatalReason) -> ErrorClass {
    ErrorClass::Fatal { relogin, reason }
}

fn classify_api(
    method: Method,
    code: u16,
    description: &str,
    retry_after: Option<u64>,
    migrate_to: Option<i64>,
) -> ErrorClass {
    let text = description.to_ascii_lowercase();
    match code {
        429 => ErrorClass::SlowDown(
            retry_after
                .or_else(|| retry_after_in(&text))
                .map(Duration::from_secs)
                .unwrap_or(DEFAULT_RETRY_AFTER),
        ),
        // A download link past its hour: the token is fine, the path is not.
        404 if method == Method::DownloadFile => ErrorClass::Rejected(Rejection::LinkExpired),
        401 | 404 => fatal(true, FatalReason::BadToken),
        409 if text.contains("webhook") => fatal(false, FatalReason::WebhookSet),
        409 => fatal(false, FatalReason::OtherPoller),
        _ if migrate_to.is_some() => ErrorClass::Rejected(Rejection::ChatMigrated {
            to: migrate_to.unwrap_or_default(),
        }),
        403 => ErrorClass::Rejected(Rejection::ChatUnreachable),
        413 => ErrorClass::Rejected(Rejection::FileTooBig),
        500.. => ErrorClass::Transient,
        400 if method == Method::SetWebhook => fatal(false, FatalReason::BadWebhook),
        // 408 from a proxy: it gave up, like a 5xx.
        408 => ErrorClass::Transient,
        _ => ErrorClass::Rejected(rejection(method, &text)),
    }
}

/// The 400 texts of spec §6, matched on their tails (the prefix changed over the years).
fn rejection(method: Method, text: &str) -> Rejection {
    const ROWS: &[(&str, Rejection)] = &[
        ("message is not modified", Rejection::NotModified),
        ("message is too long", Rejection::TooLong),
        ("message_too_long", Rejection::TooLong),
        ("text is too long", Rejection::TooLong),
        ("caption is too long", Rejection::TooLong),
        ("can't parse entities", Rejection::BadMarkup),
        ("message text is empty", Rejection::EmptyText),
        ("text must be non-empty", Rejection::EmptyText),
        ("button_data_invalid", Rejection::ButtonDataInvalid),
        ("query is too old", Rejection::QueryTooOld),
        ("message to edit not found", Rejection::MessageNotFound),
        ("message to be replied not found", Rejection::ReplyNotFound),
        ("chat not found", Rejection::ChatUnreachable),
        ("bot was blocked", Rejection::ChatUnreachable),
        ("bot was kicked", Rejection::ChatUnreachable),
        ("user is deactivated", Rejection::ChatUnreachable),
        ("can't initiate conversation", Rejection::ChatUnreachable),
        ("file is too big", Rejection::FileTooBig),
    ];
    if let Some((_, r)) = ROWS.iter().find(|(tail, _)| text.contains(tail)) {
        return *r;
    }
    // The draft's own 400 texts are unconfirmed (spec §9): any other refusal of a draft means
    // "stream by edits instead", the safe fallback.
    if method == Method::SendMessageDraft {
        Rejection::DraftRefused
    } else {
        Rejection::Other
    }
}

/// `N` from "Too Many Requests: retry after N", when `parameters` was left out.
fn retry_after_in(text: &str) -> Option<u64> {
    let rest = &text[text.find("retry after ")? + "retry after ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
