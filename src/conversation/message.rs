//! The one inbound and one outbound message type every adapter produces and consumes.

use serde::{Deserialize, Serialize};

use super::body::Body;
use crate::config::AccountKey;
use crate::ids::{ChatId, PlatformMsgId, SenderId};

/// One message from a platform, normalized by its adapter.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    /// The account it arrived on.
    #[serde(with = "account_key_str")]
    pub account: AccountKey,
    /// The conversation.
    pub chat: ChatId,
    /// Who wrote it.
    pub sender: SenderId,
    /// The platform's id of the message (deduplication key).
    pub msg_id: PlatformMsgId,
    /// The text (non-text items as a short bracketed description, e.g. "[image]").
    pub text: String,
    /// When the platform says it was sent, in Unix milliseconds.
    pub at_unix_ms: u64,
    /// Adapter-private data needed to answer it (WeChat `context_token`, Feishu message id for
    /// in-thread replies). Opaque to the pipeline; stored with the message and handed back.
    pub reply: ReplyContext,
    /// Media the message carries (photos, files, voice), as references the adapter can fetch
    /// later: journaled with the message, downloaded after the commit, off the poll path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<MediaRef>,
}

/// One media item of an inbound message, before it is downloaded.
///
/// Made by the adapter from the platform's message; stored in the journal with the message, so
/// its `locator` must stay readable by later releases of the same adapter.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MediaRef {
    /// What it is.
    pub kind: crate::agent::MediaKind,
    /// The name the sender gave it, when the platform carries one (untrusted: never a path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The size the platform declares, in bytes (untrusted: the download checks the real size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The platform's own transcript of a voice note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// Adapter-private: how to fetch it (WeChat's CDN parameters and key, Feishu's file key).
    /// Opaque to the pipeline.
    pub locator: serde_json::Value,
}

impl std::fmt::Debug for MediaRef {
    // Names, transcripts and keys are message content or secrets: never in Debug.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaRef")
            .field("kind", &self.kind)
            .field("size", &self.size)
            .finish()
    }
}

impl std::fmt::Debug for Inbound {
    // Message text never reaches logs through Debug.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbound")
            .field("account", &self.account.to_string())
            .field("chat", &self.chat)
            .field("sender", &self.sender)
            .field("msg_id", &self.msg_id)
            .field("text_chars", &self.text.chars().count())
            .field("media", &self.media.len())
            .finish()
    }
}

/// Adapter-private reply data, stored as JSON text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReplyContext(pub String);

/// What kind of outbound message this is; decides whether a platform's send window applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutboundKind {
    /// An answer to an inbound message.
    Reply,
    /// Written by the bridge on its own (mail digest, confirm question, notices).
    Proactive,
    /// Replaces an earlier message of the chat (`Outbound::target`) with `body`; sent as a new
    /// proactive message instead when that message cannot be updated.
    Update,
}

/// One piece of text to send, as stored in the outbox.
#[derive(Clone, PartialEq, Eq)]
pub struct Outbound {
    /// The outbox row.
    pub id: i64,
    /// The sending account.
    pub account: AccountKey,
    /// The conversation.
    pub chat: ChatId,
    /// The text, already within the platform's size limit.
    pub text: String,
    /// Stable across retries and restarts: WeChat `client_id`, Feishu `uuid`.
    pub idempotency_key: String,
    /// The reply context of the message this answers (empty for proactive messages).
    pub reply: ReplyContext,
    /// The chat's most recent inbound reply context (WeChat sends with the latest context token).
    pub latest_reply: ReplyContext,
    /// Reply or proactive.
    pub kind: OutboundKind,
    /// What the message means (a question, how one ended), for the adapter to render; `text`
    /// is its plain-text form. Rides on the first piece only.
    pub body: Body,
    /// For [`OutboundKind::Update`]: the platform id of the message to replace, when it was sent
    /// and the platform named it (`None`: there is nothing to update; it goes out as new).
    pub target: Option<PlatformMsgId>,
    /// When this is the first piece of what was queued under a key, that key: a platform that
    /// showed the text while it was written (`StreamMode::Edit`) finishes that shown message
    /// with this piece instead of sending it anew. Set by the core; no adapter reads a key.
    pub finishes: Option<String>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("id", &self.id)
            .field("account", &self.account.to_string())
            .field("chat", &self.chat)
            .field("kind", &self.kind)
            .field("text_chars", &self.text.chars().count())
            .finish()
    }
}

mod account_key_str {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::config::AccountKey;

    pub fn serialize<S: Serializer>(k: &AccountKey, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&k.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<AccountKey, D::Error> {
        let s = String::deserialize(d)?;
        AccountKey::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("bad account '{s}'")))
    }
}
