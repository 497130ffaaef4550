//! The Bot API objects this crate reads (spec §2, §3). Made by the client from the platform's
//! JSON; every field the platform may leave out is an `Option` or defaults, and unknown fields
//! are ignored, so a newer server never breaks a batch. Field names are the platform's.

use serde::{Deserialize, Serialize};

/// A Telegram user or bot (`User`). `id` is the stable identity; usernames change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Unique, stable, up to 52 significant bits.
    pub id: i64,
    /// Whether this is a bot.
    #[serde(default)]
    pub is_bot: bool,
    /// Display name (not an identity).
    #[serde(default)]
    pub first_name: String,
    /// `@username` without the `@`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The client's IETF language tag, for the command menu's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_code: Option<String>,
}

/// The bot itself as `getMe` returns it: what `login telegram` stores and groups match on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotInfo {
    /// The bot's user id (the number before the token's colon).
    pub id: i64,
    /// The bot's username, for `@mention` and `/cmd@botname` matching.
    #[serde(default)]
    pub username: String,
    /// Display name.
    #[serde(default)]
    pub first_name: String,
    /// Always true for a bot token.
    #[serde(default)]
    pub is_bot: bool,
    /// Whether groups can add the bot.
    #[serde(default)]
    pub can_join_groups: bool,
    /// Privacy mode off: the bot sees every group message (spec §5).
    #[serde(default)]
    pub can_read_all_group_messages: bool,
}

/// A chat (`Chat`). Group ids are negative, supergroups `-100…`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chat {
    /// The chat id.
    pub id: i64,
    /// `private`, `group`, `supergroup` or `channel` (kept as text: new kinds appear).
    #[serde(default, rename = "type")]
    pub kind: String,
    /// Group title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Chat {
    /// Whether this is a one-to-one chat with a user (drafts work only there).
    pub fn is_private(&self) -> bool {
        self.kind == "private"
    }
}

/// One entity of a text (`MessageEntity`); offsets are UTF-16 code units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    /// `mention`, `text_mention`, `bot_command`, `bold`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Start, in UTF-16 code units.
    pub offset: usize,
    /// Length, in UTF-16 code units.
    pub length: usize,
    /// The mentioned user of a `text_mention`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<User>,
}

/// One size of a photo (`PhotoSize`); a photo is a list of these, smallest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhotoSize {
    /// Download or resend handle (per bot).
    pub file_id: String,
    /// Stable across bots and time; a dedupe key, never a download handle.
    #[serde(default)]
    pub file_unique_id: String,
    /// Width in pixels.
    #[serde(default)]
    pub width: u32,
    /// Height in pixels.
    #[serde(default)]
    pub height: u32,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
}

/// A document, voice note, video, audio, animation or video note: the fields they share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileObject {
    /// Download or resend handle (per bot).
    pub file_id: String,
    /// Stable across bots and time; a dedupe key.
    #[serde(default)]
    pub file_unique_id: String,
    /// The sender's file name (hostile: may hold `../`); see [`crate::media::safe_file_name`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// MIME type as the sender's client said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    /// Seconds, for voice, audio and video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<u32>,
}

/// A sticker: shown to the agent as text (spec §2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sticker {
    /// The sticker's file.
    #[serde(default)]
    pub file_id: String,
    /// The emoji it stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
}

/// A message (`Message`), inbound or as the platform returns a sent one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Unique within the chat only.
    pub message_id: i64,
    /// The sender; absent for channel posts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<User>,
    /// The chat the message belongs to, for an anonymous group admin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_chat: Option<Chat>,
    /// Where it was sent.
    pub chat: Chat,
    /// Unix seconds.
    #[serde(default)]
    pub date: i64,
    /// Set on edits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_date: Option<i64>,
    /// Forum topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_thread_id: Option<i64>,
    /// Text of a text message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Entities of `text`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<Entity>,
    /// Caption of a media message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Entities of `caption`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caption_entities: Vec<Entity>,
    /// A photo, smallest size first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub photo: Vec<PhotoSize>,
    /// A document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<FileObject>,
    /// A voice note (OGG/Opus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<FileObject>,
    /// A video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<FileObject>,
    /// An audio file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<FileObject>,
    /// A round video note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_note: Option<FileObject>,
    /// A GIF or silent video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub animation: Option<FileObject>,
    /// A sticker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sticker: Option<Sticker>,
    /// The message this one replies to (one level deep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to_message: Option<Box<Message>>,
    /// Albums arrive as several messages sharing this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_group_id: Option<String>,
    /// The message's inline keyboard, as the platform echoes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<serde_json::Value>,
}

/// A button press (`CallbackQuery`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackQuery {
    /// Answer it with [`crate::Client::answer_callback`], at once.
    pub id: String,
    /// Who pressed: check against the owner before acting.
    pub from: User,
    /// The message with the keyboard; its `date` is 0 when no longer accessible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Identifies the chat the keyboard was in.
    #[serde(default)]
    pub chat_instance: String,
    /// The button's `callback_data` (ours; parse it strictly, it can be forged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// The user pressed "stop" on a draft (`MessageGenerationStopped`, Bot API 10.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationStopped {
    /// The private chat.
    pub chat: Chat,
    /// The draft that was stopped.
    pub draft_id: i64,
    /// Forum topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_thread_id: Option<i64>,
}

/// What `getFile` returns: where to download a file from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    /// The handle asked for.
    pub file_id: String,
    /// Stable dedupe key.
    #[serde(default)]
    pub file_unique_id: String,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    /// The path below `/file/bot<token>/`; lives at least an hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
}

/// What `getWebhookInfo` returns, as `doctor` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WebhookInfo {
    /// Empty when no webhook is set (polling works).
    #[serde(default)]
    pub url: String,
    /// Updates waiting.
    #[serde(default)]
    pub pending_update_count: u64,
    /// The last delivery error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error_message: Option<String>,
}

/// One command of the menu `setMyCommands` sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotCommand {
    /// 1–32 characters, lowercase letters, digits and underscores, without the `/`.
    pub command: String,
    /// 1–256 characters.
    pub description: String,
}
