//! What the fake logs for tests to read, and the knobs tests turn.

use serde_json::Value;

use crate::frame::FrameType;

/// One message created through send or reply.
#[derive(Debug, Clone, PartialEq)]
pub struct SentRecord {
    /// The new `om_…` id.
    pub message_id: String,
    /// `open_id`, `chat_id`, ... (`reply` for replies).
    pub receive_id_type: String,
    /// Receiver id (the parent message id for replies).
    pub receive_id: String,
    /// Chat it landed in.
    pub chat_id: String,
    /// `text`, `post`, `interactive`.
    pub msg_type: String,
    /// The content, parsed from its JSON string.
    pub content: Value,
    /// The idempotency key sent.
    pub uuid: Option<String>,
    /// For replies: the parent message and whether it went in thread.
    pub reply_to: Option<(String, bool)>,
}

/// One accepted card patch (by PATCH or by a card-click response).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchRecord {
    /// The patched message.
    pub message_id: String,
    /// The new card.
    pub card: Value,
}

/// One ACK frame received.
#[derive(Debug, Clone, PartialEq)]
pub struct AckRecord {
    /// Frame-level `message_id` header.
    pub frame_message_id: String,
    /// `event_id` of the acknowledged push (`None` when no push was waiting for it).
    pub event_id: Option<String>,
    /// Every header of the ACK, in order.
    pub headers: Vec<(String, String)>,
    /// True when SeqID, LogID, service, method and all pushed headers were echoed, then `biz_rt`.
    pub echo_ok: bool,
    /// `code` of the ACK payload.
    pub code: Option<i64>,
    /// Decoded `data` (the callback response), if any.
    pub data: Option<Value>,
    /// Time from the fake sending the (last fragment of the) push to receiving this ACK.
    pub latency: Option<std::time::Duration>,
}

/// One event pushed over the long connection.
#[derive(Debug, Clone, PartialEq)]
pub struct PushRecord {
    /// The envelope's `event_id` (new on every re-push).
    pub event_id: String,
    /// `event_type`.
    pub event_type: String,
    /// The IM `om_…` id for message events (kept across re-pushes).
    pub im_message_id: Option<String>,
    /// 0 for the first push, 1+ for re-pushes.
    pub attempt: u32,
    /// The frame `type` used.
    pub kind: FrameType,
}

/// One accepted WebSocket connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// The one-time ticket it used.
    pub ticket: String,
    /// Its `device_id`.
    pub device_id: String,
}

/// What a pushed event is, as returned to the test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The first push's `event_id`.
    pub event_id: String,
    /// IM `om_…` id (message events) or the clicked card's id (card clicks).
    pub message_id: String,
}

/// An event as an HTTP callback request, ready to POST to a callback-mode server.
#[derive(Debug, Clone)]
pub struct CallbackDelivery {
    /// Its ids.
    pub pushed: Pushed,
    /// The signature headers (empty when unencrypted).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// How to deliver a pushed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushOptions {
    /// Frame `type` header: `Event` or `Card`.
    pub kind: FrameType,
    /// Split the payload into this many fragments (sent last-first).
    pub fragments: usize,
    /// Extra headers the client must echo in its ACK (e.g. `instance_id`).
    pub extra_headers: Vec<(String, String)>,
}

impl Default for PushOptions {
    fn default() -> Self {
        Self {
            kind: FrameType::Event,
            fragments: 1,
            extra_headers: Vec::new(),
        }
    }
}

/// How the fake signals a per-receiver rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimitStyle {
    /// HTTP 429, code 99991400, `x-ogw-ratelimit-reset`.
    Http429,
    /// HTTP 400, code 230020.
    Code230020,
}

/// A failure of `POST /callback/ws/endpoint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointFailure {
    /// `{"code":<n>}` (1 busy, 1000040343 internal, 1000040345 bad credentials).
    Code(i64),
    /// HTTP 500 without a body.
    Http500,
}

/// A refused WebSocket handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeFailure {
    /// `Handshake-Status` (514 auth failed, 403 forbidden).
    pub status: i64,
    /// `Handshake-Autherrcode` (1000040350 = connection limit).
    pub auth_code: Option<i64>,
}
