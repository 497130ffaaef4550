//! What the fake records for assertions, and the codes it answers with where the real ones are
//! unconfirmed. Made by the fake's handlers; read through `FakeQq`.

use serde_json::Value;
use tokio::time::Instant;

/// A send the fake accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct SentRecord {
    /// `user:<openid>` or `group:<openid>`.
    pub to: String,
    /// `msg_type`.
    pub msg_type: i64,
    /// `content` (or the markdown content).
    pub content: String,
    /// `msg_id`, if given.
    pub msg_id: Option<String>,
    /// `event_id`, if given.
    pub event_id: Option<String>,
    /// `msg_seq` (default 1, as on the platform).
    pub msg_seq: u64,
    /// The whole body, for anything else a test checks.
    pub body: Value,
    /// The message id the fake answered with.
    pub id: String,
}

/// A request the fake refused, with the code it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Which endpoint (`send`, `upload`, `token`, `auth`).
    pub what: &'static str,
    /// HTTP status.
    pub status: u16,
    /// Business code.
    pub code: i64,
    /// Why, in the fake's words.
    pub reason: String,
}

/// An upload the fake accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRecord {
    /// `user:<openid>` or `group:<openid>`.
    pub to: String,
    /// `file_type`.
    pub file_type: i64,
    /// Bytes of `file_data`, or `None` for a URL upload.
    pub data_len: Option<usize>,
    /// The URL, for a URL upload.
    pub url: Option<String>,
    /// The `file_info` handed out.
    pub file_info: String,
}

/// A `PUT /interactions/{id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteractionAck {
    /// The interaction id.
    pub id: String,
    /// The `code` reported.
    pub code: i64,
    /// When it arrived (tokio time).
    pub at: Instant,
}

/// What a push put on the wire, for the test to match against deliveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// `d.id` (the message or interaction id).
    pub id: String,
    /// The frame `id`.
    pub frame_id: String,
    /// `t`.
    pub kind: String,
}

/// The code the fake answers for text over its limit. The real limit and code are
/// unconfirmed (§4.2); this one is the fake's own.
pub const FAKE_TOO_LONG: i64 = 40034001;
/// The code for a media `file_info` expired or not issued for this kind of chat (real code
/// unconfirmed).
pub const FAKE_MEDIA_SCOPE: i64 = 40034016;
/// The code for an upload over the fake's size limit (real limit and code unconfirmed).
pub const FAKE_FILE_TOO_LARGE: i64 = 40034017;
