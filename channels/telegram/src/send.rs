//! The outbound calls (spec §4): text, edits, drafts, typing, keyboards, button answers, the
//! command menu. None of them retries: the caller's outbox decides by [`crate::ErrorClass`].

use serde::Serialize;
use serde_json::{Value, json};

use crate::classify::{ErrorClass, Rejection};
use crate::client::Client;
use crate::error::Error;
use crate::method::Method;
use crate::types::{BotCommand, Message};

/// How the platform reads a text's markup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ParseMode {
    /// Telegram's HTML subset (what the bridge renders to; see [`crate::text::escape_html`]).
    #[serde(rename = "HTML")]
    Html,
    /// MarkdownV2 (every reserved character escaped).
    MarkdownV2,
}

/// One inline button that sends `callback_data` back (1–64 bytes, ours, parsed strictly).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Button {
    /// The label.
    pub text: String,
    /// What a press sends back.
    pub callback_data: String,
}

/// An inline keyboard: rows of buttons.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Keyboard {
    /// The rows, top to bottom.
    pub inline_keyboard: Vec<Vec<Button>>,
}

impl Keyboard {
    /// One row of `(label, data)` buttons (Yes / No / Always).
    pub fn row(buttons: &[(&str, &str)]) -> Keyboard {
        Keyboard {
            inline_keyboard: vec![
                buttons
                    .iter()
                    .map(|(text, data)| Button {
                        text: (*text).to_owned(),
                        callback_data: (*data).to_owned(),
                    })
                    .collect(),
            ],
        }
    }
}

/// A text to send. Made by the daemon's renderer, one per chunk (at most
/// [`crate::limits::MAX_TEXT_UTF16`] after parsing).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutgoingText {
    /// The chat.
    pub chat_id: i64,
    /// The text, in `parse_mode`'s markup.
    pub text: String,
    /// `None` = plain text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_mode: Option<ParseMode>,
    /// Forum topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_thread_id: Option<i64>,
    /// A keyboard under the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_markup: Option<Keyboard>,
    /// Reply to this message (sent even if it is gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_parameters: Option<Value>,
    /// Link previews off: answers quote links as references, not as cards.
    pub link_preview_options: Value,
}

impl OutgoingText {
    /// Plain text to `chat_id`.
    pub fn plain(chat_id: i64, text: impl Into<String>) -> OutgoingText {
        OutgoingText {
            chat_id,
            text: text.into(),
            parse_mode: None,
            message_thread_id: None,
            reply_markup: None,
            reply_parameters: None,
            link_preview_options: json!({"is_disabled": true}),
        }
    }

    /// HTML text to `chat_id`.
    pub fn html(chat_id: i64, text: impl Into<String>) -> OutgoingText {
        OutgoingText {
            parse_mode: Some(ParseMode::Html),
            ..OutgoingText::plain(chat_id, text)
        }
    }

    /// With a keyboard.
    pub fn with_keyboard(mut self, keyboard: Keyboard) -> OutgoingText {
        self.reply_markup = Some(keyboard);
        self
    }

    /// As a reply to `message_id`. `strict` = false sends anyway when that message is gone;
    /// true makes the platform refuse ([`crate::Rejection::ReplyNotFound`]).
    pub fn replying_to(mut self, message_id: i64, strict: bool) -> OutgoingText {
        self.reply_parameters = Some(json!({
            "message_id": message_id,
            "allow_sending_without_reply": !strict,
        }));
        self
    }
}

/// What an edit did.
#[derive(Debug, Clone, PartialEq)]
pub enum Edited {
    /// The message now shows the new content.
    Changed,
    /// It already showed it ("message is not modified", which spec §4.3 says is success).
    Unchanged,
}

/// A chat action (`sendChatAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatAction {
    /// "typing…".
    Typing,
    /// "sending photo…".
    UploadPhoto,
    /// "sending file…".
    UploadDocument,
}

impl Client {
    /// `sendMessage`: one message; returns it as sent (its `message_id` is the edit handle).
    pub async fn send_text(&self, msg: &OutgoingText) -> Result<Message, Error> {
        self.call(Method::SendMessage, msg).await
    }

    /// `editMessageText`. "Not modified" comes back as [`Edited::Unchanged`], not an error.
    pub async fn edit_text(
        &self,
        chat_id: i64,
        message_id: i64,
        text: &str,
        parse_mode: Option<ParseMode>,
        keyboard: Option<&Keyboard>,
    ) -> Result<Edited, Error> {
        let mut body = json!({"chat_id": chat_id, "message_id": message_id, "text": text});
        if let Some(mode) = parse_mode {
            body["parse_mode"] = json!(mode);
        }
        if let Some(k) = keyboard {
            body["reply_markup"] = json!(k);
        }
        not_modified_is_success(self.call::<Value>(Method::EditMessageText, &body).await)
    }

    /// `editMessageReplyMarkup`: replace the keyboard, or remove it (`None`), so a second press
    /// on an answered question cannot arrive.
    pub async fn edit_keyboard(
        &self,
        chat_id: i64,
        message_id: i64,
        keyboard: Option<&Keyboard>,
    ) -> Result<Edited, Error> {
        let empty = Keyboard::default();
        let body = json!({
            "chat_id": chat_id,
            "message_id": message_id,
            "reply_markup": keyboard.unwrap_or(&empty),
        });
        not_modified_is_success(
            self.call::<Value>(Method::EditMessageReplyMarkup, &body)
                .await,
        )
    }

    /// `sendMessageDraft`: show `text` as the streamed preview of draft `draft_id` (non-zero;
    /// the same id animates) in a private chat. A preview lapses after
    /// [`crate::limits::DRAFT_PREVIEW_LIFETIME`] and never becomes a message: finish with
    /// [`Client::send_text`]. A refusal is [`crate::Rejection::DraftRefused`]: stream by edits.
    pub async fn send_draft(
        &self,
        chat_id: i64,
        draft_id: i64,
        text: &str,
        parse_mode: Option<ParseMode>,
        can_stop: bool,
    ) -> Result<(), Error> {
        let mut body = json!({"chat_id": chat_id, "draft_id": draft_id, "text": text});
        if can_stop {
            // Bot API 10.3: the user sees a stop button; pressing it sends a
            // `stopped_message_generation` update.
            body["can_stop"] = json!(true);
        }
        if let Some(mode) = parse_mode {
            body["parse_mode"] = json!(mode);
        }
        self.call::<Value>(Method::SendMessageDraft, &body)
            .await
            .map(drop)
    }

    /// `sendChatAction`; shows for [`crate::limits::CHAT_ACTION_SHOWN`], so repeat every
    /// [`crate::limits::TYPING_REPEAT`]. Failures are cosmetic: the caller may ignore them.
    pub async fn send_chat_action(&self, chat_id: i64, action: ChatAction) -> Result<(), Error> {
        let body = json!({"chat_id": chat_id, "action": action});
        self.call::<Value>(Method::SendChatAction, &body)
            .await
            .map(drop)
    }

    /// `answerCallbackQuery`: stops the button's spinner, with an optional short notice (at most
    /// [`crate::limits::MAX_CALLBACK_ANSWER_CHARS`]). Call it at once, before any slow work:
    /// the deadline is unconfirmed, and late or repeated answers are
    /// [`crate::Rejection::QueryTooOld`].
    pub async fn answer_callback(&self, query_id: &str, text: Option<&str>) -> Result<(), Error> {
        let mut body = json!({"callback_query_id": query_id});
        if let Some(t) = text {
            body["text"] = json!(t);
        }
        self.call::<Value>(Method::AnswerCallbackQuery, &body)
            .await
            .map(drop)
    }

    /// `setMyCommands` for users whose client speaks `language` (`None` = the default menu).
    pub async fn set_commands(
        &self,
        commands: &[BotCommand],
        language: Option<&str>,
    ) -> Result<(), Error> {
        let mut body = json!({"commands": commands});
        if let Some(lang) = language {
            body["language_code"] = json!(lang);
        }
        self.call::<Value>(Method::SetMyCommands, &body)
            .await
            .map(drop)
    }
}

fn not_modified_is_success(result: Result<Value, Error>) -> Result<Edited, Error> {
    match result {
        Ok(_) => Ok(Edited::Changed),
        Err(e) if e.class() == ErrorClass::Rejected(Rejection::NotModified) => {
            Ok(Edited::Unchanged)
        }
        Err(e) => Err(e),
    }
}
