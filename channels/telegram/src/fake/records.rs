//! What the fake records for tests to assert on.

use bytes::Bytes;
use serde_json::Value;
use tokio::time::Instant;

/// One accepted `sendMessage` (edits change the fake's copy, see `FakeHandle::message_text`).
#[derive(Debug, Clone, PartialEq)]
pub struct SentText {
    /// The chat.
    pub chat_id: i64,
    /// The id the fake gave it.
    pub message_id: i64,
    /// The text as sent (markup included).
    pub text: String,
    /// `parse_mode`, if any.
    pub parse_mode: Option<String>,
    /// `reply_markup` as sent.
    pub reply_markup: Option<Value>,
    /// The message it replies to.
    pub reply_to: Option<i64>,
}

/// One accepted `sendMessageDraft` frame.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftFrame {
    /// The private chat.
    pub chat_id: i64,
    /// The draft.
    pub draft_id: i64,
    /// Whether the user is shown a stop button (`can_stop`).
    pub can_stop: bool,
    /// The text shown.
    pub text: String,
    /// When it arrived (tokio time).
    pub at: Instant,
}

/// One accepted upload or resend.
#[derive(Debug, Clone, PartialEq)]
pub struct SentFile {
    /// The chat.
    pub chat_id: i64,
    /// The method (`sendPhoto`, `sendDocument`, ...).
    pub method: String,
    /// The file name of the part (empty for a resend by id).
    pub file_name: String,
    /// The bytes stored.
    pub bytes: Bytes,
    /// The caption.
    pub caption: Option<String>,
    /// The `file_id` the fake gave it.
    pub file_id: String,
}

/// One accepted `sendChatAction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatActionRecord {
    /// The chat.
    pub chat_id: i64,
    /// `typing`, `upload_photo`, ...
    pub action: String,
}
