//! What the fake records for tests to inspect, and the faults tests can inject.

use std::time::Duration;

use serde_json::{Value, json};

use crate::endpoint::Endpoint;

/// One accepted `sendmessage`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    /// `msg.to_user_id`.
    pub to_user: String,
    /// The text of the single TEXT item.
    pub text: String,
    /// `msg.client_id`.
    pub client_id: String,
    /// `msg.context_token` (always present on accepted sends).
    pub context_token: String,
}

/// One refused `sendmessage`, with the fake's reason (the client only sees `ret:-2`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedSend {
    /// `msg.to_user_id`, if any.
    pub to_user: String,
    /// `msg.client_id`, if any.
    pub client_id: String,
    /// Why the fake refused it, e.g. "send window used up".
    pub reason: String,
}

/// One `sendtyping` call that the fake accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypingCall {
    /// `ilink_user_id`.
    pub user: String,
    /// 1 typing, 2 cancel.
    pub status: i64,
}

/// The headers and `base_info` of one request, recorded before any check.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The endpoint hit.
    pub endpoint: Endpoint,
    /// `GET` or `POST`.
    pub method: String,
    /// `iLink-App-Id`.
    pub app_id: Option<String>,
    /// `iLink-App-ClientVersion`.
    pub client_version: Option<String>,
    /// `X-WECHAT-UIN`, raw.
    pub uin: Option<String>,
    /// `AuthorizationType`.
    pub authorization_type: Option<String>,
    /// Whether `Authorization` carried a token the fake issued (the token itself is not kept).
    pub token_valid: bool,
    /// Whether an `Authorization` header was present at all.
    pub has_authorization: bool,
    /// `SKRouteTag`.
    pub route_tag: Option<String>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `base_info` from the JSON body, if the body had one.
    pub base_info: Option<Value>,
    /// `get_updates_buf` from a `getupdates` body.
    pub cursor: Option<String>,
    /// The raw query string.
    pub query: Option<String>,
}

/// A failure injected in front of one endpoint (it acts like a gateway: before auth).
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Answer with this HTTP status and an empty body (e.g. 500, 524).
    Status(u16),
    /// Never answer (until the fake shuts down or the client gives up).
    Hang,
    /// Wait this long, then handle the request normally.
    Delay(Duration),
    /// Send HTTP 200 headers, then break the body off (the client sees a network error).
    Reset,
    /// Answer HTTP 200 with this JSON body instead of the real answer.
    Body(Value),
    /// Handle the request as usual (a send is taken and recorded), then never answer (until
    /// the fake shuts down): the answer is lost, so the client cannot know it was taken.
    LoseAnswer,
}

impl Fault {
    /// `{"errcode":-14,"errmsg":"session timeout"}`, the usual expired-session body.
    pub fn session_expired() -> Fault {
        Fault::Body(json!({"errcode": -14, "errmsg": "session timeout"}))
    }

    /// The expired-session body with `ret:-14` too (some probes saw both).
    pub fn session_expired_with_ret() -> Fault {
        Fault::Body(json!({"ret": -14, "errcode": -14, "errmsg": "session timeout"}))
    }

    /// A body with `ret` set to `code` and an empty `errmsg`.
    pub fn ret(code: i64) -> Fault {
        Fault::Body(json!({"ret": code, "errmsg": ""}))
    }
}
