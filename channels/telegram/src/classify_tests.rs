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

fn check(rows: Vec<(Error, ErrorClass)>) {
    for (i, (err, want)) in rows.iter().enumerate() {
        assert_eq!(err.class(), *want, "row {i}: {err}");
    }
}

const OTHER_POLLER: &str = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";
const WEBHOOK: &str = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";

#[test]
fn fatal_and_slow_down() {
    let fatal = |relogin, reason| Fatal { relogin, reason };
    let with_hint = Error::Api {
        method: SendMessage,
        code: 429,
        description: "Too Many Requests: retry after 7".into(),
        retry_after: Some(3),
        migrate_to: None,
    };
    check(vec![
        (
            api(GetMe, 401, "Unauthorized"),
            fatal(true, FatalReason::BadToken),
        ),
        (
            api(GetUpdates, 404, "Not Found"),
            fatal(true, FatalReason::BadToken),
        ),
        (
            api(GetUpdates, 409, OTHER_POLLER),
            fatal(false, FatalReason::OtherPoller),
        ),
        (
            api(GetUpdates, 409, WEBHOOK),
            fatal(false, FatalReason::WebhookSet),
        ),
        // `parameters.retry_after` wins; the description is the fallback; then the default.
        (with_hint, SlowDown(Duration::from_secs(3))),
        (
            api(SendMessage, 429, "Too Many Requests: retry after 7"),
            SlowDown(Duration::from_secs(7)),
        ),
        (
            api(SendMessage, 429, "Too Many Requests"),
            SlowDown(DEFAULT_RETRY_AFTER),
        ),
    ]);
}

#[test]
fn rejections_by_their_texts() {
    use Rejection::*;
    let rows: &[(Method, u16, &str, Rejection)] = &[
        (
            EditMessageText,
            400,
            "Bad Request: message is not modified: specified new message content",
            NotModified,
        ),
        (
            SendMessage,
            400,
            "Bad Request: message is too long",
            TooLong,
        ),
        (
            EditMessageText,
            400,
            "Bad Request: MESSAGE_TOO_LONG",
            TooLong,
        ),
        (
            SendPhoto,
            400,
            "Bad Request: message caption is too long",
            TooLong,
        ),
        (
            SendMessage,
            400,
            "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 3",
            BadMarkup,
        ),
        (
            SendMessage,
            400,
            "Bad Request: message text is empty",
            EmptyText,
        ),
        (
            SendMessage,
            400,
            "Bad Request: BUTTON_DATA_INVALID",
            ButtonDataInvalid,
        ),
        (
            AnswerCallbackQuery,
            400,
            "Bad Request: query is too old and response timeout expired or query id is invalid",
            QueryTooOld,
        ),
        (
            EditMessageText,
            400,
            "Bad Request: message to edit not found",
            MessageNotFound,
        ),
        (
            SendMessage,
            400,
            "Bad Request: message to be replied not found",
            ReplyNotFound,
        ),
        (
            SendMessage,
            400,
            "Bad Request: chat not found",
            ChatUnreachable,
        ),
        (
            SendMessage,
            403,
            "Forbidden: bot was blocked by the user",
            ChatUnreachable,
        ),
        (
            SendMessage,
            403,
            "Unauthorized: bot can't initiate conversation with a user",
            ChatUnreachable,
        ),
        (GetFile, 400, "Bad Request: file is too big", FileTooBig),
        (SendDocument, 413, "Request Entity Too Large", FileTooBig),
        (DownloadFile, 404, "Not Found", LinkExpired),
        (
            SendMessageDraft,
            400,
            "Bad Request: TEXTDRAFT_PEER_INVALID",
            DraftRefused,
        ),
        (SendMessage, 400, "Bad Request: something new", Other),
    ];
    check(
        rows.iter()
            .map(|(m, code, text, r)| (api(*m, *code, text), Rejected(*r)))
            .collect(),
    );
    let moved = Error::Api {
        method: SendMessage,
        code: 400,
        description: "Bad Request: group chat was upgraded to a supergroup chat".into(),
        retry_after: None,
        migrate_to: Some(-100_123),
    };
    assert_eq!(moved.class(), Rejected(ChatMigrated { to: -100_123 }));
}

#[test]
fn transport_and_local_failures() {
    let after = Duration::from_secs(40);
    check(vec![
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
                after,
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
    ]);
}

#[test]
fn every_fatal_reason_says_what_to_do() {
    for r in [
        FatalReason::BadToken,
        FatalReason::OtherPoller,
        FatalReason::WebhookSet,
        FatalReason::BadConfig,
        FatalReason::BadWebhook,
    ] {
        assert!(r.hint().len() > 20, "{r:?}");
    }
    assert!(FatalReason::BadToken.hint().contains("login telegram"));
}
