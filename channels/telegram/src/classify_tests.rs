use super::*;
use ErrorClass::*;
use Method::*;

fn api(method: Method, code: u16, description: &str) -> Error {
    Error::Api {
        method,
        code,
        description: description.to_owned(),
        retry_after: None,
        migrate_to: None,
    }
}

#[test]
fn table() {
    let bad_token = Fatal {
        relogin: true,
        reason: FatalReason::BadToken,
    };
    let rows: Vec<(Error, ErrorClass)> = vec![
        (api(GetMe, 401, "Unauthorized"), bad_token),
        (api(GetUpdates, 404, "Not Found"), bad_token),
        (
            api(
                GetUpdates,
                409,
                "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            ),
            Fatal {
                relogin: false,
                reason: FatalReason::OtherPoller,
            },
        ),
        (
            api(
                GetUpdates,
                409,
                "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
            ),
            Fatal {
                relogin: false,
                reason: FatalReason::WebhookSet,
            },
        ),
        (
            Error::Api {
                method: SendMessage,
                code: 429,
                description: "Too Many Requests: retry after 7".into(),
                retry_after: Some(3),
                migrate_to: None,
            },
            SlowDown(Duration::from_secs(3)),
        ),
        (
            api(SendMessage, 429, "Too Many Requests: retry after 7"),
            SlowDown(Duration::from_secs(7)),
        ),
        (
            api(SendMessage, 429, "Too Many Requests"),
            SlowDown(DEFAULT_RETRY_AFTER),
        ),
        (
            api(
                EditMessageText,
                400,
                "Bad Request: message is not modified: specified new message content",
            ),
            Rejected(Rejection::NotModified),
        ),
        (
            api(SendMessage, 400, "Bad Request: message is too long"),
            Rejected(Rejection::TooLong),
        ),
        (
            api(EditMessageText, 400, "Bad Request: MESSAGE_TOO_LONG"),
            Rejected(Rejection::TooLong),
        ),
        (
            api(
                SendMessage,
                400,
                "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 3",
            ),
            Rejected(Rejection::BadMarkup),
        ),
        (
            api(SendMessage, 400, "Bad Request: message text is empty"),
            Rejected(Rejection::EmptyText),
        ),
        (
            api(SendMessage, 400, "Bad Request: BUTTON_DATA_INVALID"),
            Rejected(Rejection::ButtonDataInvalid),
        ),
        (
            api(
                AnswerCallbackQuery,
                400,
                "Bad Request: query is too old and response timeout expired or query id is invalid",
            ),
            Rejected(Rejection::QueryTooOld),
        ),
        (
            api(
                EditMessageText,
                400,
                "Bad Request: message to edit not found",
            ),
            Rejected(Rejection::MessageNotFound),
        ),
        (
            api(
                SendMessage,
                400,
                "Bad Request: message to be replied not found",
            ),
            Rejected(Rejection::ReplyNotFound),
        ),
        (
            api(SendMessage, 400, "Bad Request: chat not found"),
            Rejected(Rejection::ChatUnreachable),
        ),
        (
            api(SendMessage, 403, "Forbidden: bot was blocked by the user"),
            Rejected(Rejection::ChatUnreachable),
        ),
        (
            api(
                SendMessage,
                403,
                "Unauthorized: bot can't initiate conversation with a user",
            ),
            Rejected(Rejection::ChatUnreachable),
        ),
        (
            api(GetFile, 400, "Bad Request: file is too big"),
            Rejected(Rejection::FileTooBig),
        ),
        (
            api(SendDocument, 413, "Request Entity Too Large"),
            Rejected(Rejection::FileTooBig),
        ),
        (
            Error::Api {
                method: SendMessage,
                code: 400,
                description: "Bad Request: group chat was upgraded to a supergroup chat".into(),
                retry_after: None,
                migrate_to: Some(-100_123),
            },
            Rejected(Rejection::ChatMigrated { to: -100_123 }),
        ),
        (
            api(SendMessageDraft, 400, "Bad Request: TEXTDRAFT_PEER_INVALID"),
            Rejected(Rejection::DraftRefused),
        ),
        (
            api(SendMessage, 400, "Bad Request: something new"),
            Rejected(Rejection::Other),
        ),
        (api(SendMessage, 500, "Internal Server Error"), Transient),
        (api(GetUpdates, 502, "Bad Gateway"), Transient),
        (
            Error::Http {
                method: GetUpdates,
                status: 502,
            },
            Transient,
        ),
        (
            Error::Http {
                method: GetUpdates,
                status: 429,
            },
            SlowDown(DEFAULT_RETRY_AFTER),
        ),
        (
            Error::Http {
                method: SendMessage,
                status: 400,
            },
            Rejected(Rejection::Other),
        ),
        (
            Error::Timeout {
                method: GetUpdates,
                after: Duration::from_secs(40),
            },
            Transient,
        ),
        (
            Error::Malformed {
                method: GetUpdates,
                detail: "x".into(),
            },
            Transient,
        ),
        (
            Error::TooBig {
                method: SendPhoto,
                size: 11,
                limit: 10,
            },
            Rejected(Rejection::FileTooBig),
        ),
        (
            Error::InvalidBaseUrl {
                url: "x".into(),
                detail: "y".into(),
            },
            Fatal {
                relogin: false,
                reason: FatalReason::BadConfig,
            },
        ),
    ];
    for (i, (err, want)) in rows.iter().enumerate() {
        assert_eq!(err.class(), *want, "row {i}: {err}");
    }
}

#[test]
fn every_fatal_reason_says_what_to_do() {
    for r in [
        FatalReason::BadToken,
        FatalReason::OtherPoller,
        FatalReason::WebhookSet,
        FatalReason::BadConfig,
    ] {
        assert!(r.hint().len() > 20, "{r:?}");
    }
    assert!(FatalReason::BadToken.hint().contains("login telegram"));
}
