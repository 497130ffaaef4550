//! The `WeixinMessage` model of spec §4, with the helpers every consumer needs
//! (body text, own-message filter, dedupe key).

use serde::{Deserialize, Serialize};

use crate::lenient;
pub use crate::media::{CdnMedia, FileItem, ImageItem, VideoItem, VoiceItem};

/// `message_type` of a message written by a WeChat user.
pub const MESSAGE_TYPE_USER: i64 = 1;
/// `message_type` of a message written by a bot.
pub const MESSAGE_TYPE_BOT: i64 = 2;
/// `message_state` of a finished message (the only state we send).
pub const MESSAGE_STATE_FINISH: i64 = 2;

/// One message, inbound (`getupdates`) or outbound (`sendmessage`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WeixinMessage {
    /// Server sequence number.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub seq: Option<i64>,
    /// Server message id; 64-bit, often above 2^53, sometimes missing.
    #[serde(
        default,
        deserialize_with = "lenient::opt_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub message_id: Option<u64>,
    /// Sender (`…@im.wechat` for users, `…@im.bot` for bots; `""` on our sends).
    #[serde(default, deserialize_with = "lenient::string")]
    pub from_user_id: String,
    /// Receiver.
    #[serde(default, deserialize_with = "lenient::string")]
    pub to_user_id: String,
    /// Client-generated id (set on bot sends; must be unique per send).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "String::is_empty"
    )]
    pub client_id: String,
    /// Creation time, epoch milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub create_time_ms: Option<i64>,
    /// Update time, epoch milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub update_time_ms: Option<i64>,
    /// Deletion time, epoch milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub delete_time_ms: Option<i64>,
    /// Server session id (usage unknown).
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub session_id: Option<String>,
    /// Declared by the platform but unused: every conversation is a DM on `from_user_id`.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub group_id: Option<String>,
    /// 1 user, 2 bot; see [`MESSAGE_TYPE_USER`], [`MESSAGE_TYPE_BOT`].
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub message_type: Option<i64>,
    /// 0 new, 1 generating, 2 finish.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub message_state: Option<i64>,
    /// The content items.
    #[serde(default)]
    pub item_list: Vec<MessageItem>,
    /// Reply context of an inbound message; echo the latest one on replies.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub context_token: Option<String>,
}

impl WeixinMessage {
    /// The outbound text message the plugin builds (spec §5): bot type, finished, one item.
    pub fn outbound_text(
        to_user: &str,
        context_token: Option<&str>,
        text: &str,
        client_id: &str,
    ) -> Self {
        WeixinMessage {
            from_user_id: String::new(),
            to_user_id: to_user.to_owned(),
            client_id: client_id.to_owned(),
            message_type: Some(MESSAGE_TYPE_BOT),
            message_state: Some(MESSAGE_STATE_FINISH),
            item_list: vec![MessageItem::text(text)],
            context_token: context_token.map(str::to_owned),
            ..WeixinMessage::default()
        }
    }

    /// Whether a bot wrote this (our own echo or another bot). Whether the server echoes bot
    /// messages is unconfirmed; dropping them is the safe choice (spec §4.3).
    pub fn is_from_bot(&self) -> bool {
        self.message_type == Some(MESSAGE_TYPE_BOT) || self.from_user_id.ends_with("@im.bot")
    }

    /// The body text: the first TEXT item, else a VOICE item's transcript (spec §4.3).
    pub fn text(&self) -> Option<&str> {
        let text = self
            .item_list
            .iter()
            .filter(|i| i.kind() == ItemKind::Text)
            .find_map(|i| i.text_item.as_ref().and_then(|t| t.text.as_deref()));
        text.or_else(|| {
            self.item_list
                .iter()
                .filter_map(|i| i.voice_item.as_ref())
                .find_map(|v| v.text.as_deref().filter(|t| !t.is_empty()))
        })
    }

    /// The dedupe key of spec §7: the message id, else the client id, else the sequence
    /// number, else a stable hash of sender, creation time and content. Never includes the
    /// context token, which changes on every delivery. Copies redelivered with a *new*
    /// message id need a second, content-based check by the caller.
    pub fn dedupe_key(&self) -> String {
        if let Some(id) = self.message_id {
            return format!("id:{id}");
        }
        if !self.client_id.is_empty() {
            return format!("client:{}", self.client_id);
        }
        if let Some(seq) = self.seq {
            return format!("seq:{seq}");
        }
        let mut h = Fnv64::new();
        h.write(self.from_user_id.as_bytes());
        h.write(&self.create_time_ms.unwrap_or(0).to_le_bytes());
        h.write(self.text().unwrap_or("").as_bytes());
        for item in &self.item_list {
            h.write(&item.item_type.unwrap_or(0).to_le_bytes());
        }
        format!("hash:{:016x}", h.finish())
    }
}

/// FNV-1a 64: a tiny hash whose output is stable across Rust releases (dedupe keys are
/// persisted; `DefaultHasher` makes no such promise).
struct Fnv64(u64);

impl Fnv64 {
    fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so ("ab","c") and ("a","bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// What an item carries, from its `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// 0: no content.
    None,
    /// 1: `text_item`.
    Text,
    /// 2: `image_item`.
    Image,
    /// 3: `voice_item`.
    Voice,
    /// 4: `file_item`.
    File,
    /// 5: `video_item`.
    Video,
    /// A type this crate does not know.
    Unknown(i64),
}

/// One content item of a message (spec §4.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageItem {
    /// 0 none, 1 text, 2 image, 3 voice, 4 file, 5 video; see [`MessageItem::kind`].
    #[serde(rename = "type", default, deserialize_with = "lenient::opt_i64")]
    pub item_type: Option<i64>,
    /// Creation time, epoch milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub create_time_ms: Option<i64>,
    /// Update time, epoch milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::opt_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub update_time_ms: Option<i64>,
    /// Whether the item is complete.
    #[serde(
        default,
        deserialize_with = "lenient::opt_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub is_completed: Option<bool>,
    /// Item id.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub msg_id: Option<String>,
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_item: Option<TextItem>,
    /// Image content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_item: Option<ImageItem>,
    /// Voice content, with the server's transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_item: Option<VoiceItem>,
    /// File content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_item: Option<FileItem>,
    /// Video content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_item: Option<VideoItem>,
    /// A quoted message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_msg: Option<Box<RefMessage>>,
}

impl MessageItem {
    /// A TEXT item.
    pub fn text(text: &str) -> Self {
        MessageItem {
            item_type: Some(1),
            text_item: Some(TextItem {
                text: Some(text.to_owned()),
            }),
            ..MessageItem::default()
        }
    }

    /// The item's kind, from `type`.
    pub fn kind(&self) -> ItemKind {
        match self.item_type.unwrap_or(0) {
            0 => ItemKind::None,
            1 => ItemKind::Text,
            2 => ItemKind::Image,
            3 => ItemKind::Voice,
            4 => ItemKind::File,
            5 => ItemKind::Video,
            other => ItemKind::Unknown(other),
        }
    }
}

/// `text_item`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextItem {
    /// The text.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub text: Option<String>,
}

/// A quoted message (`ref_msg`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RefMessage {
    /// The quoted item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_item: Option<MessageItem>,
    /// Its title.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub title: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_big_ids_and_odd_fields() {
        let json = r#"{"seq":3,"message_id":7492913259736648968,"from_user_id":"u@im.wechat",
            "message_type":1,"item_list":[{"type":1,"text_item":{"text":"hi"}},
            {"type":4,"file_item":{"len":123,"file_name":"a.txt"}}],"context_token":"ctx"}"#;
        let m: WeixinMessage = serde_json::from_str(json).expect("decodes");
        assert_eq!(m.message_id, Some(7_492_913_259_736_648_968));
        assert_eq!(m.text(), Some("hi"));
        assert_eq!(
            m.item_list[1]
                .file_item
                .as_ref()
                .and_then(|f| f.len.as_deref()),
            Some("123")
        );
        assert!(!m.is_from_bot());
        assert_eq!(m.dedupe_key(), "id:7492913259736648968");
        let back = serde_json::to_string(&m).expect("encodes");
        assert!(back.contains("7492913259736648968"));
    }

    #[test]
    fn voice_transcript_is_the_fallback_body() {
        let json = r#"{"from_user_id":"u@im.wechat","item_list":[{"type":3,"voice_item":{"text":"spoken"}}]}"#;
        let m: WeixinMessage = serde_json::from_str(json).expect("decodes");
        assert_eq!(m.text(), Some("spoken"));
        assert_eq!(m.item_list[0].kind(), ItemKind::Voice);
    }

    #[test]
    fn dedupe_key_falls_back_in_order_and_ignores_context_token() {
        let mut m = WeixinMessage::outbound_text("u", Some("t1"), "x", "");
        m.from_user_id = "a@im.wechat".into();
        let h1 = m.dedupe_key();
        assert!(h1.starts_with("hash:"));
        m.context_token = Some("t2".into());
        assert_eq!(m.dedupe_key(), h1);
        m.item_list = vec![MessageItem::text("y")];
        assert_ne!(m.dedupe_key(), h1);
        m.seq = Some(9);
        assert_eq!(m.dedupe_key(), "seq:9");
        m.client_id = "c".into();
        assert_eq!(m.dedupe_key(), "client:c");
        m.message_id = Some(1);
        assert_eq!(m.dedupe_key(), "id:1");
    }

    #[test]
    fn bots_are_recognised() {
        let mut m = WeixinMessage {
            from_user_id: "b@im.bot".into(),
            ..Default::default()
        };
        assert!(m.is_from_bot());
        m.from_user_id = "u@im.wechat".into();
        m.message_type = Some(MESSAGE_TYPE_BOT);
        assert!(m.is_from_bot());
    }

    #[test]
    fn outbound_text_has_the_plugin_shape() {
        let m = WeixinMessage::outbound_text("u@im.wechat", None, "hello", "cid");
        let v = serde_json::to_value(&m).expect("encodes");
        assert_eq!(v["message_type"], 2);
        assert_eq!(v["message_state"], 2);
        assert_eq!(v["from_user_id"], "");
        assert_eq!(v["item_list"][0]["type"], 1);
        assert_eq!(v["item_list"][0]["text_item"]["text"], "hello");
        assert!(v.get("context_token").is_none());
    }
}
