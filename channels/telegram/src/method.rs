//! The Bot API methods this crate calls, with their names and client timeouts.

use std::fmt;
use std::time::Duration;

use crate::limits::{CALL_TIMEOUT, TRANSFER_TIMEOUT};

/// One Bot API method (spec §1–§4). Names are stable: errors and the fake's records carry them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `getMe`: the bot's own user; the login check.
    GetMe,
    /// `getUpdates`: the inbound long poll.
    GetUpdates,
    /// `sendMessage`: one text message.
    SendMessage,
    /// `editMessageText`: replace a sent message's text (streaming fallback, outcomes).
    EditMessageText,
    /// `editMessageReplyMarkup`: replace or remove a message's inline keyboard.
    EditMessageReplyMarkup,
    /// `sendMessageDraft`: a streamed preview in a private chat.
    SendMessageDraft,
    /// `sendChatAction`: "typing" and friends.
    SendChatAction,
    /// `answerCallbackQuery`: stop a button's spinner.
    AnswerCallbackQuery,
    /// `setMyCommands`: the command menu.
    SetMyCommands,
    /// `getFile`: a download path for a `file_id`.
    GetFile,
    /// The file download itself (`/file/bot<token>/<path>`), not a method but failing like one.
    DownloadFile,
    /// `sendPhoto`.
    SendPhoto,
    /// `sendDocument`.
    SendDocument,
    /// `sendVoice`.
    SendVoice,
    /// `sendVideo`.
    SendVideo,
    /// `deleteWebhook`: the fix for the webhook conflict.
    DeleteWebhook,
    /// `getWebhookInfo`: what `doctor` shows.
    GetWebhookInfo,
    /// `setWebhook`: receive by webhook instead of polling.
    SetWebhook,
}

impl Method {
    /// Every method, for tables and the fake's routing.
    pub const ALL: [Method; 18] = [
        Method::GetMe,
        Method::GetUpdates,
        Method::SendMessage,
        Method::EditMessageText,
        Method::EditMessageReplyMarkup,
        Method::SendMessageDraft,
        Method::SendChatAction,
        Method::AnswerCallbackQuery,
        Method::SetMyCommands,
        Method::GetFile,
        Method::DownloadFile,
        Method::SendPhoto,
        Method::SendDocument,
        Method::SendVoice,
        Method::SendVideo,
        Method::DeleteWebhook,
        Method::GetWebhookInfo,
        Method::SetWebhook,
    ];

    /// The method's name in the URL (`DownloadFile` has none; it names itself "file").
    pub fn name(self) -> &'static str {
        match self {
            Method::GetMe => "getMe",
            Method::GetUpdates => "getUpdates",
            Method::SendMessage => "sendMessage",
            Method::EditMessageText => "editMessageText",
            Method::EditMessageReplyMarkup => "editMessageReplyMarkup",
            Method::SendMessageDraft => "sendMessageDraft",
            Method::SendChatAction => "sendChatAction",
            Method::AnswerCallbackQuery => "answerCallbackQuery",
            Method::SetMyCommands => "setMyCommands",
            Method::GetFile => "getFile",
            Method::DownloadFile => "file",
            Method::SendPhoto => "sendPhoto",
            Method::SendDocument => "sendDocument",
            Method::SendVoice => "sendVoice",
            Method::SendVideo => "sendVideo",
            Method::DeleteWebhook => "deleteWebhook",
            Method::GetWebhookInfo => "getWebhookInfo",
            Method::SetWebhook => "setWebhook",
        }
    }

    /// The method named `name`; names are case-insensitive (spec §1.1).
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .filter(|m| *m != Method::DownloadFile)
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// Whether the call carries a file (multipart upload or download): it gets the long
    /// transfer timeout.
    pub fn is_transfer(self) -> bool {
        matches!(
            self,
            Method::DownloadFile
                | Method::SendPhoto
                | Method::SendDocument
                | Method::SendVoice
                | Method::SendVideo
        )
    }

    /// The client timeout for one call; `getUpdates` computes its own from the poll time.
    pub fn timeout(self) -> Duration {
        if self.is_transfer() {
            TRANSFER_TIMEOUT
        } else {
            CALL_TIMEOUT
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_case_insensitively() {
        for m in Method::ALL {
            if m != Method::DownloadFile {
                assert_eq!(Method::from_name(m.name()), Some(m));
                assert_eq!(Method::from_name(&m.name().to_uppercase()), Some(m));
            }
        }
        assert_eq!(Method::from_name("file"), None);
        assert_eq!(Method::from_name("nope"), None);
    }
}
