//! What the account task reads from a [`Message`]: its dedupe key, its text, its media, and
//! whether a group message addresses the bot (spec §2.2, §5).

use crate::types::{BotInfo, Entity, Message};

/// The kind of file a message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// A photo (the largest size is taken).
    Photo,
    /// A document (any file).
    Document,
    /// A voice note.
    Voice,
    /// A video.
    Video,
    /// An audio file.
    Audio,
    /// A round video note.
    VideoNote,
    /// A GIF or silent video.
    Animation,
}

/// A file a message carries, as the media seam needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundMedia {
    /// What it is.
    pub kind: MediaKind,
    /// Handle for `getFile` (per bot).
    pub file_id: String,
    /// Stable key for caching and dedupe.
    pub file_unique_id: String,
    /// The sender's file name, made safe ([`crate::media::safe_file_name`]); `None` if absent.
    pub file_name: Option<String>,
    /// MIME type, if the sender's client gave one.
    pub mime_type: Option<String>,
    /// Size in bytes, if known: compare with [`crate::limits::MAX_DOWNLOAD_BYTES`] before
    /// downloading.
    pub file_size: Option<u64>,
}

impl Message {
    /// The message-level dedupe key (spec §2.4: `message_id` is unique within the chat only),
    /// for copies that arrive under a new update id.
    pub fn dedupe_key(&self) -> String {
        format!("tg:m:{}:{}", self.chat.id, self.message_id)
    }

    /// What the agent reads: the text, else the caption, else a sticker as "[sticker 😀]".
    pub fn body(&self) -> Option<String> {
        if let Some(t) = self.text.as_ref().or(self.caption.as_ref()) {
            return Some(t.clone());
        }
        self.sticker.as_ref().map(|s| match &s.emoji {
            Some(e) => format!("[sticker {e}]"),
            None => "[sticker]".to_owned(),
        })
    }

    /// The file this message carries, if any (a photo's largest size).
    pub fn media(&self) -> Option<InboundMedia> {
        if let Some(p) = self.photo.last() {
            return Some(InboundMedia {
                kind: MediaKind::Photo,
                file_id: p.file_id.clone(),
                file_unique_id: p.file_unique_id.clone(),
                file_name: None,
                mime_type: Some("image/jpeg".into()),
                file_size: p.file_size,
            });
        }
        let files = [
            (MediaKind::Document, &self.document),
            (MediaKind::Voice, &self.voice),
            (MediaKind::Video, &self.video),
            (MediaKind::Audio, &self.audio),
            (MediaKind::VideoNote, &self.video_note),
            (MediaKind::Animation, &self.animation),
        ];
        let (kind, f) = files
            .into_iter()
            .find_map(|(k, f)| f.as_ref().map(|f| (k, f)))?;
        Some(InboundMedia {
            kind,
            file_id: f.file_id.clone(),
            file_unique_id: f.file_unique_id.clone(),
            file_name: f
                .file_name
                .as_deref()
                .and_then(crate::media::safe_file_name),
            mime_type: f.mime_type.clone(),
            file_size: f.file_size,
        })
    }

    /// The command at the start of the text (`/new`, `/new@thisbot` → `"new"`), with its
    /// argument; `None` if there is none or it is addressed to another bot (spec §5).
    pub fn command(&self, bot_username: &str) -> Option<(String, String)> {
        let text = self.text.as_deref()?;
        let e = self
            .entities
            .iter()
            .find(|e| e.kind == "bot_command" && e.offset == 0)?;
        let full = utf16_slice(text, e.offset, e.length)?;
        let word = full.strip_prefix('/')?;
        let (name, target) = match word.split_once('@') {
            Some((n, t)) => (n, Some(t)),
            None => (word, None),
        };
        if target.is_some_and(|t| !t.eq_ignore_ascii_case(bot_username)) {
            return None;
        }
        let rest = text[full.len()..].trim().to_owned();
        Some((name.to_ascii_lowercase(), rest))
    }

    /// Whether a group message addresses the bot: a command for it, an @mention of it, or a
    /// reply to one of its messages (spec §5). Private messages always do.
    pub fn addresses(&self, bot: &BotInfo) -> bool {
        if self.chat.is_private() {
            return true;
        }
        if self.command(&bot.username).is_some() {
            return true;
        }
        if self
            .reply_to_message
            .as_ref()
            .and_then(|r| r.from.as_ref())
            .is_some_and(|u| u.id == bot.id)
        {
            return true;
        }
        let (text, entities) = match (&self.text, &self.caption) {
            (Some(t), _) => (t.as_str(), &self.entities),
            (None, Some(c)) => (c.as_str(), &self.caption_entities),
            (None, None) => return false,
        };
        entities.iter().any(|e| mentions(text, e, bot))
    }
}

fn mentions(text: &str, e: &Entity, bot: &BotInfo) -> bool {
    match e.kind.as_str() {
        "text_mention" => e.user.as_ref().is_some_and(|u| u.id == bot.id),
        "mention" => utf16_slice(text, e.offset, e.length)
            .and_then(|m| m.strip_prefix('@'))
            .is_some_and(|m| !bot.username.is_empty() && m.eq_ignore_ascii_case(&bot.username)),
        _ => false,
    }
}

/// The part of `text` an entity covers (offsets in UTF-16 code units); `None` when the range
/// does not fall on character boundaries or runs past the end (a hostile or broken entity).
pub fn utf16_slice(text: &str, offset: usize, length: usize) -> Option<&str> {
    let end = offset.checked_add(length)?;
    let (mut start_byte, mut end_byte) = (None, None);
    let mut units = 0usize;
    for (i, c) in text.char_indices() {
        if units == offset {
            start_byte = Some(i);
        }
        if units == end {
            end_byte = Some(i);
            break;
        }
        units += c.len_utf16();
    }
    if units == offset && start_byte.is_none() {
        start_byte = Some(text.len());
    }
    if units == end && end_byte.is_none() {
        end_byte = Some(text.len());
    }
    text.get(start_byte?..end_byte?)
}

/// A text's length as the platform counts it (UTF-16 code units; spec §4.1).
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}
