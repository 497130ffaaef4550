//! Request and response bodies of every endpoint, and the typed results the client returns.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::headers::BaseInfo;
use crate::lenient;
use crate::message::WeixinMessage;
use crate::token::BotToken;

/// The host QR login starts on, and the fallback API base when login returns none.
pub const DEFAULT_BASE_URL: &str = "https://ilinkai.weixin.qq.com";
/// The only known `bot_type` ("personal" bot).
pub const BOT_TYPE: &str = "3";
/// How many QR codes one login may show in total (the first plus 2 refreshes).
pub const MAX_QR_CODES: u32 = 3;
/// The plugin's overall login deadline.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(480);
/// The plugin's pause between two status polls.
pub const QR_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The server's hold time when it suggests none (spec §1.3, §3).
pub const DEFAULT_POLL_HOLD: Duration = Duration::from_secs(35);

/// `ret`, `errcode` and `errmsg`, present (or not) in every response body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiStatus {
    /// 0 = OK; may be missing.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub ret: Option<i64>,
    /// Error code such as -14; may be missing.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub errcode: Option<i64>,
    /// Human text, often empty.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub errmsg: Option<String>,
}

impl ApiStatus {
    /// Success means `ret` and `errcode` are both absent or 0 (`{}` is a success).
    pub fn is_ok(&self) -> bool {
        self.ret.unwrap_or(0) == 0 && self.errcode.unwrap_or(0) == 0
    }
}

/// Body of `get_bot_qrcode`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetBotQrcodeRequest {
    /// Up to 10 recent bot tokens, newest first, so the server can answer `binded_redirect`.
    #[serde(default)]
    pub local_token_list: Vec<String>,
}

/// A login QR code, from `get_bot_qrcode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QrCodeTicket {
    /// Opaque id for status polling; never render it.
    #[serde(default, deserialize_with = "lenient::string")]
    pub qrcode: String,
    /// The URL to render as the QR image.
    #[serde(default, deserialize_with = "lenient::string")]
    pub qrcode_img_content: String,
}

/// The raw body of `get_qrcode_status`; [`QrStatus`] is the typed form.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QrStatusBody {
    /// Status word such as `wait` or `scaned`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub status: Option<String>,
    /// Bearer token, on `confirmed`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub bot_token: Option<String>,
    /// Bot id (`…@im.bot`), on `confirmed`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub ilink_bot_id: Option<String>,
    /// API base for later calls, on `confirmed`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub baseurl: Option<String>,
    /// The scanning user (the owner), on `confirmed`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub ilink_user_id: Option<String>,
    /// Host to move polling to, on `scaned_but_redirect`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub redirect_host: Option<String>,
}

/// What a login produced: keep all of it, the token secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginCredentials {
    /// Bearer token for every later call.
    pub bot_token: BotToken,
    /// The bot's id (`…@im.bot`).
    pub bot_id: String,
    /// The API base login returned; `None` means [`DEFAULT_BASE_URL`].
    pub base_url: Option<String>,
    /// The WeChat user who scanned: the owner. `None` if the server left it out, in which
    /// case nobody is the owner.
    pub owner_user_id: Option<String>,
}

impl LoginCredentials {
    /// The API base to use: the one login returned, else [`DEFAULT_BASE_URL`].
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .filter(|u| !u.is_empty())
            .unwrap_or(DEFAULT_BASE_URL)
    }
}

/// The state of a login QR code (spec §2.2), with the action each asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QrStatus {
    /// Not scanned yet (also what a timeout, network error or gateway 5xx means): poll again.
    Wait,
    /// Scanned, waiting for the phone to confirm; a pending verify code was accepted.
    Scanned,
    /// Logged in.
    Confirmed(LoginCredentials),
    /// The code expired: fetch a new one (at most [`MAX_QR_CODES`] in all).
    Expired,
    /// Move polling to `https://<host>`; `None` means keep the current host.
    Redirect {
        /// The new host, possibly with a port.
        host: Option<String>,
    },
    /// Ask the user for the digits shown on the phone and send them on the next poll (at
    /// once); seeing this again means the code was wrong.
    NeedVerifyCode,
    /// Too many wrong codes: drop the code and fetch a new QR (counts as a refresh).
    VerifyCodeBlocked,
    /// This bot is already bound to this client: keep the stored credentials.
    AlreadyBound,
    /// A status this crate does not know; keep polling until the login deadline (the safe
    /// choice: an unknown word is more likely a new intermediate step than a failure).
    Unknown(String),
}

/// Body of `getupdates`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetUpdatesRequest {
    /// Cursor from the last successful poll; `""` at first.
    #[serde(default)]
    pub get_updates_buf: String,
    /// Client description.
    pub base_info: BaseInfo,
}

/// The raw body of a `getupdates` response. Messages stay raw JSON here so one odd message
/// cannot fail the whole batch; see [`Updates`].
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GetUpdatesBody {
    /// Messages, possibly missing.
    #[serde(default)]
    pub msgs: Option<Vec<serde_json::Value>>,
    /// The new cursor, possibly missing.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub get_updates_buf: Option<String>,
    /// The server's suggested hold for the next poll.
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    pub longpolling_timeout_ms: Option<u64>,
}

/// The result of one long poll.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Updates {
    /// The decoded messages, in server order (bot echoes included: filter with
    /// [`WeixinMessage::is_from_bot`]).
    pub messages: Vec<WeixinMessage>,
    /// The cursor to store (after the messages) and send next time: the new one, or the one
    /// sent when the server returned none.
    pub cursor: String,
    /// The server's suggested hold, if it sent one; the client adopts it on its own.
    pub suggested_hold: Option<Duration>,
    /// True when the client's timeout fired first: an empty poll, not a failure.
    pub timed_out: bool,
    /// Messages in the batch that were not objects and could not be decoded (logged, and
    /// counted here so the caller can report them; the server will not resend them).
    pub undecodable: usize,
    /// When the response's last byte was read (`None` for a poll that timed out): the server
    /// counts the messages delivered from then on, so a caller's durability window starts here.
    pub received: Option<std::time::Instant>,
}

/// Body of `sendmessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendMessageRequest {
    /// The message; exactly one item.
    pub msg: WeixinMessage,
    /// Client description.
    pub base_info: BaseInfo,
}

/// Body of `getconfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetConfigRequest {
    /// The user the ticket is for.
    #[serde(default)]
    pub ilink_user_id: String,
    /// That user's latest context token, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_token: Option<String>,
    /// Client description.
    pub base_info: BaseInfo,
}

/// The raw body of a `getconfig` response.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GetConfigBody {
    /// Base64 typing ticket.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub typing_ticket: Option<String>,
}

/// A per-user typing ticket from `getconfig`; `None` from [`crate::Client::get_config`]
/// means the server gave none and typing must not be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypingTicket(pub String);

/// `sendtyping` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypingStatus {
    /// 1: show "typing".
    Typing,
    /// 2: cancel it.
    Cancel,
}

impl TypingStatus {
    /// The wire value.
    pub fn code(self) -> i64 {
        match self {
            TypingStatus::Typing => 1,
            TypingStatus::Cancel => 2,
        }
    }
}

/// Body of `sendtyping`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendTypingRequest {
    /// The user who sees the indicator.
    #[serde(default)]
    pub ilink_user_id: String,
    /// The ticket from `getconfig`.
    #[serde(default)]
    pub typing_ticket: String,
    /// 1 typing, 2 cancel.
    #[serde(default)]
    pub status: i64,
    /// Client description.
    pub base_info: BaseInfo,
}

/// Body of `msg/notifystart` and `msg/notifystop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotifyRequest {
    /// Client description.
    pub base_info: BaseInfo,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_ok_rules() {
        let ok = |j: &str| {
            serde_json::from_str::<ApiStatus>(j)
                .expect("decodes")
                .is_ok()
        };
        assert!(ok("{}"));
        assert!(ok(r#"{"ret":0}"#));
        assert!(ok(r#"{"ret":0,"errcode":0,"errmsg":""}"#));
        assert!(!ok(r#"{"errcode":-14,"errmsg":"session timeout"}"#));
        assert!(!ok(r#"{"ret":-2}"#));
        assert!(!ok(r#"{"ret":0,"errcode":-14}"#));
    }

    #[test]
    fn credentials_fall_back_to_default_host() {
        let c = LoginCredentials {
            bot_token: BotToken::new("t"),
            bot_id: "b@im.bot".into(),
            base_url: Some(String::new()),
            owner_user_id: None,
        };
        assert_eq!(c.base_url(), DEFAULT_BASE_URL);
        assert!(!format!("{c:?}").contains("\"t\""));
    }
}
