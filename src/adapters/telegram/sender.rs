//! Sending outbox items through the Bot API: text rendered to Telegram's HTML (plain text once
//! when the HTML is refused), questions with an inline Yes/No keyboard, closed questions as an
//! edit of the question, files as photo or document; typing; received files fetched. Platform
//! errors go through the account's one table ([`super::failure`]).
//!
//! Telegram takes no idempotency key for a send, so a send a crash (or an answer that never
//! came) left undecided is held, never repeated: each attempt is recorded just before its first
//! request ([`crate::port::held`]); an attempt that finds an earlier record, or whose request
//! ended without saying whether Telegram took it, sends a note in the reply's place instead;
//! `/again` brings the reply. (The spec classes 5xx and timeouts as transient, to retry with
//! backoff; a retry of a send that may have arrived would show it twice, so here the retry is
//! the owner's `/again`.)

use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_telegram::limits::{MAX_DOWNLOAD_BYTES, MAX_TEXT_UTF16};
use scv_telegram::text::utf16_len;
use scv_telegram::{ChatAction, Client, ErrorClass, Keyboard, OutgoingText, Rejection, UploadKind};

use super::failure::failure;
use super::inbound::{Locator, ReplyRef};
use super::pace::Pace;
use super::stream::{SHOW_EVERY, Streams};
use crate::conversation::body::{Ending, MediaOut, QuestionClosed};
use crate::conversation::{
    Body, ChatId, ChatSender, MediaRef, Outbound, OutboundKind, PlatformMsgId, ReplyContext,
    SendError, SendLimits, Sent, StreamMode,
};
use crate::failure::general;
use crate::ids::AccountKey;
use crate::port::held::{self, Attempt, HeldSends};
use crate::store::AccountState;
use crate::supervisor::{Capabilities, HealthHandle};

/// What a Telegram account can do: inline keyboards, edits (a closed question edits its
/// message), typing, questions.
pub const CAPABILITIES: Capabilities = Capabilities {
    typing: true,
    buttons: true,
    edit: true,
    questions: true,
    send_window: false,
    // Spoken answers go by `sendVoice` (Ogg Opus).
    voice_bubbles: true,
};

/// The core splits answers to this many characters; a piece whose UTF-16 length (how Telegram
/// counts) is still over [`MAX_TEXT_UTF16`] is split again here.
pub const MAX_CHARS: usize = MAX_TEXT_UTF16;

/// Sends one account's messages.
pub struct TelegramSender {
    client: Client,
    account: AccountKey,
    pace: Pace,
    /// Answers shown while written, when the account's state is at hand to record them.
    streams: Option<Streams>,
    /// Sends begun and replies held, when the account's state is at hand to record them.
    held: Option<HeldSends>,
    /// The account's language, for the note that stands in for a held reply.
    language: crate::words::Language,
}

impl TelegramSender {
    /// A sender over `client` for `account`; answers go out whole.
    pub fn new(client: Client, account: AccountKey) -> Self {
        TelegramSender {
            client,
            account,
            pace: Pace::default(),
            streams: None,
            held: None,
            language: crate::words::Language::default(),
        }
    }

    /// Records each send before it goes (in `held`), so one a crash left undecided is held with
    /// a note in `language` rather than sent twice.
    pub fn with_held(mut self, held: HeldSends, language: crate::words::Language) -> Self {
        self.held = Some(held);
        self.language = language;
        self
    }

    /// Shows answers while the agent writes them (drafts in private chats, one edited message
    /// in groups), the edited messages recorded in `state` so a restart finishes them; a
    /// refusal of drafts shows on the run's `health`.
    pub fn with_streams(mut self, state: AccountState, health: HealthHandle) -> Self {
        self.streams = Some(Streams::new(
            self.client.clone(),
            self.account.clone(),
            state,
            health,
        ));
        self
    }

    fn fail(&self, e: &scv_telegram::Error) -> SendError {
        failure(e, &self.account)
    }

    /// Sends `text` (Markdown) to `chat` as HTML, split further if Telegram would count it
    /// over its limit; the keyboard rides on the last piece. Returns the last message.
    async fn send_text(
        &self,
        chat: i64,
        reply_to: Option<i64>,
        text: &str,
        keyboard: Option<Keyboard>,
        attempt: Option<&Attempt<'_>>,
    ) -> Result<Sent, SendError> {
        let pieces = fit(text);
        let last = pieces.len().saturating_sub(1);
        let mut sent = Sent::default();
        for (i, piece) in pieces.iter().enumerate() {
            let mut out = OutgoingText::html(chat, super::render::html(piece));
            if let (0, Some(m)) = (i, reply_to) {
                out = out.replying_to(m, false);
            }
            if let (true, Some(k)) = (i == last, keyboard.clone()) {
                out = out.with_keyboard(k);
            }
            let message = self.send_one(out, piece, attempt).await?;
            sent = Sent {
                msg_id: Some(PlatformMsgId::new(message.message_id.to_string())),
                chat: Some(ChatId::new(message.chat.id.to_string())),
            };
        }
        Ok(sent)
    }

    /// One `sendMessage`, paced, after `attempt` passes; refused HTML goes once more as the
    /// plain `source` (spec §4.1).
    async fn send_one(
        &self,
        out: OutgoingText,
        source: &str,
        attempt: Option<&Attempt<'_>>,
    ) -> Result<scv_telegram::Message, SendError> {
        self.pace.wait(out.chat_id).await;
        held::pass(attempt).await?;
        match self.client.send_text(&out).await {
            Err(e) if e.class() == ErrorClass::Rejected(Rejection::BadMarkup) => {
                tracing::warn!(account = %self.account, "Telegram refused the HTML; sending plain text");
                let plain = OutgoingText {
                    text: source.to_string(),
                    parse_mode: None,
                    ..out
                };
                self.client
                    .send_text(&plain)
                    .await
                    .map_err(|e| self.fail_in(&e, attempt))
            }
            other => other.map_err(|e| self.fail_in(&e, attempt)),
        }
    }

    /// [`Self::fail`] of a send: one whose outcome is unknown keeps its record (see [`held`]).
    fn fail_in(&self, e: &scv_telegram::Error, attempt: Option<&Attempt<'_>>) -> SendError {
        if e.outcome_unknown()
            && let Some(a) = attempt
        {
            a.outcome_unknown();
        }
        self.fail(e)
    }

    async fn send_media(
        &self,
        chat: i64,
        media: &MediaOut,
        attempt: Option<&Attempt<'_>>,
    ) -> Result<Sent, SendError> {
        let size = tokio::fs::metadata(&media.path)
            .await
            .map(|m| m.len())
            .unwrap_or(u64::MAX);
        let kind = match media.kind {
            crate::agent::MediaKind::Image if size <= UploadKind::Photo.limit() => {
                UploadKind::Photo
            }
            // Only a spoken answer is queued as audio (the agent's own files go as files).
            crate::agent::MediaKind::Audio if size <= UploadKind::Voice.limit() => {
                UploadKind::Voice
            }
            _ => UploadKind::Document,
        };
        self.pace.wait(chat).await;
        held::pass(attempt).await?;
        let sent = self
            .client
            .send_file(chat, kind, &media.path, &media.name, None)
            .await
            .map_err(|e| self.fail_in(&e, attempt))?;
        Ok(Sent {
            msg_id: Some(PlatformMsgId::new(sent.message_id.to_string())),
            chat: Some(ChatId::new(sent.chat.id.to_string())),
        })
    }
}

/// The chat id an outbox item names.
fn chat_of(chat: &ChatId) -> Result<i64, SendError> {
    chat.as_str().parse().map_err(|_| {
        SendError::rejected(
            general::UPDATE_TARGET_MISSING,
            "not a Telegram chat id (a chat of another platform?)",
        )
    })
}

/// `text` in pieces Telegram counts within its limit: the core's own split (paragraphs, then
/// sentences; code re-fenced), tightened until every piece's UTF-16 length fits.
fn fit(text: &str) -> Vec<String> {
    if utf16_len(text) <= MAX_TEXT_UTF16 {
        return vec![text.to_string()];
    }
    let mut max = MAX_TEXT_UTF16;
    loop {
        max = max * 3 / 4;
        let pieces = crate::conversation::split(text, max);
        if max <= 64 || pieces.iter().all(|p| utf16_len(p) <= MAX_TEXT_UTF16) {
            return pieces;
        }
    }
}

/// The inline keyboard of a question, when its data fits Telegram's 64 bytes.
pub(super) fn keyboard(question: &str) -> Option<Keyboard> {
    let (yes, no) = (format!("q:{question}:y"), format!("q:{question}:n"));
    (yes.len() <= scv_telegram::limits::MAX_CALLBACK_DATA_BYTES)
        .then(|| Keyboard::row(&[("Yes", yes.as_str()), ("No", no.as_str())]))
}

/// How a closed question reads in place of the question (as Feishu's closed card says it).
pub(super) fn closed_text(c: &QuestionClosed) -> String {
    let at = &c.at;
    let line = match c.ended {
        Ending::Approved => format!("✅ Approved at {at}"),
        Ending::Declined => format!("❌ Declined at {at}"),
        Ending::Expired => format!("⌛ Expired at {at} without an answer"),
        Ending::Withdrawn => "↩️ Withdrawn by the asker".to_string(),
        _ => "⚠️ Could not be delivered in time".to_string(),
    };
    format!("{}\n\n{line}", c.text)
}

impl TelegramSender {
    /// Holds `msg`, which an earlier run began and may have shown, and sends the note that
    /// stands in for it. A note whose outcome is unknown counts as sent (a second note is
    /// worse than none: the held reply is still there for `/again`).
    async fn hold(&self, held: &HeldSends, msg: &Outbound, chat: i64) -> Result<Sent, SendError> {
        held.hold(msg).await?;
        let note = held::note(self.language.fixed(), &msg.text);
        self.pace.wait(chat).await;
        match self
            .client
            .send_text(&OutgoingText::plain(chat, note))
            .await
        {
            Ok(m) => Ok(Sent {
                msg_id: Some(PlatformMsgId::new(m.message_id.to_string())),
                chat: Some(ChatId::new(m.chat.id.to_string())),
            }),
            Err(e) if e.outcome_unknown() => Ok(Sent::default()),
            Err(e) => Err(self.fail(&e)),
        }
    }
}

impl TelegramSender {
    /// The first piece of an answer whose edited message's first send is in doubt: that
    /// send's text (`opened`, which the piece begins with) is held with its note, and only the
    /// rest goes, so the chat never shows a paragraph twice and `/again` brings the beginning
    /// if it never arrived.
    async fn finish_in_doubt(
        &self,
        held: &HeldSends,
        msg: &Outbound,
        chat: i64,
        opened: &str,
    ) -> Result<Sent, SendError> {
        let begun = Outbound {
            text: opened.to_string(),
            idempotency_key: format!("{}#opened", msg.idempotency_key),
            body: Body::Text,
            ..msg.clone()
        };
        self.hold(held, &begun, chat).await?;
        let rest = msg.text[opened.len()..].trim_start();
        if rest.is_empty() {
            return Ok(Sent::default());
        }
        let attempt = held.attempt(msg);
        let sent = self.send_text(chat, None, rest, None, Some(&attempt)).await;
        if attempt.in_doubt() {
            return self.hold(held, msg, chat).await;
        }
        attempt.settle(&sent).await;
        sent
    }
}

impl ChatSender for TelegramSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: MAX_CHARS,
            min_interval: super::pace::PACE.per_chat,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            let chat = chat_of(&msg.chat)?;
            let reply = ReplyRef::parse(&msg.reply);
            // In groups an answer quotes the message it answers; in private chats that is noise.
            let reply_to =
                (reply.g && reply.m != 0 && msg.kind == OutboundKind::Reply).then_some(reply.m);
            if let (Body::Text, Some(answer), Some(streams)) =
                (&msg.body, msg.finishes.as_deref(), &self.streams)
            {
                if let Some(held) = &self.held
                    && let Some(opened) = streams.opened_in_doubt(answer, &msg.text).await
                {
                    return self.finish_in_doubt(held, msg, chat, &opened).await;
                }
                if let Some(finished) = streams.finish(&self.pace, answer, &msg.text).await {
                    return finished;
                }
            }
            let attempt = self.held.as_ref().map(|h| h.attempt(msg));
            let attempt = attempt.as_ref();
            let sent = match &msg.body {
                Body::Media(media) => self.send_media(chat, media, attempt).await,
                Body::Question(q) if q.buttons => {
                    let keys = keyboard(&q.id);
                    self.send_text(chat, reply_to, &msg.text, keys, attempt)
                        .await
                }
                _ => {
                    self.send_text(chat, reply_to, &msg.text, None, attempt)
                        .await
                }
            };
            if let (Some(a), Some(held)) = (attempt, &self.held) {
                if a.in_doubt() {
                    return self.hold(held, msg, chat).await;
                }
                a.settle(&sent).await;
            }
            sent
        })
    }

    fn update<'a>(
        &'a self,
        target: &'a PlatformMsgId,
        msg: &'a Outbound,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let chat = chat_of(&msg.chat)?;
            let Ok(message) = target.as_str().parse::<i64>() else {
                return Err(SendError::rejected(
                    general::UPDATE_TARGET_MISSING,
                    "not a Telegram message id",
                ));
            };
            if utf16_len(&msg.text) > MAX_TEXT_UTF16 {
                return Err(SendError::rejected(
                    general::MESSAGE_TOO_LONG,
                    "the new text is over one message",
                ));
            }
            self.pace.wait(chat).await;
            let html = super::render::html(&msg.text);
            let edited = self
                .client
                .edit_text(
                    chat,
                    message,
                    &html,
                    Some(scv_telegram::ParseMode::Html),
                    None,
                )
                .await;
            match edited {
                Ok(_) => Ok(()),
                Err(e) if e.class() == ErrorClass::Rejected(Rejection::BadMarkup) => self
                    .client
                    .edit_text(chat, message, &msg.text, None, None)
                    .await
                    .map(drop)
                    .map_err(|e| self.fail(&e)),
                Err(e) => Err(self.fail(&e)),
            }
        })
    }

    fn stream_mode(&self) -> StreamMode {
        match self.streams {
            Some(_) => StreamMode::Edit { every: SHOW_EVERY },
            None => StreamMode::Whole,
        }
    }

    fn stream_show<'a>(
        &'a self,
        key: &'a str,
        chat: &'a ChatId,
        reply: &'a ReplyContext,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let Some(streams) = &self.streams else {
                return Err(SendError::rejected(
                    general::UPDATE_UNSUPPORTED,
                    "this sender does not stream answers",
                ));
            };
            let chat = chat_of(chat)?;
            streams.show(&self.pace, key, chat, reply, text).await
        })
    }

    fn fetch<'a>(
        &'a self,
        media: &'a MediaRef,
        _reply: &'a ReplyContext,
        dest: &'a std::path::Path,
        max_bytes: u64,
    ) -> BoxFuture<'a, Result<u64, SendError>> {
        Box::pin(async move {
            let Ok(locator) = serde_json::from_value::<Locator>(media.locator.clone()) else {
                return Err(SendError::rejected(
                    general::MEDIA_INVALID,
                    "the stored media reference is not Telegram's",
                ));
            };
            let file = self
                .client
                .get_file(&locator.f)
                .await
                .map_err(|e| self.fail(&e))?;
            let cap = max_bytes.min(MAX_DOWNLOAD_BYTES);
            self.client
                .download(&file, dest, cap)
                .await
                .map_err(|e| self.fail(&e))
        })
    }

    fn typing<'a>(
        &'a self,
        chat: &'a ChatId,
        _reply: &'a ReplyContext,
        on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // "typing" lapses by itself within 5 s or at the next message: nothing to clear.
            let Ok(chat) = chat.as_str().parse::<i64>() else {
                return;
            };
            if !on {
                return;
            }
            let shown = tokio::time::timeout(
                Duration::from_secs(5),
                self.client.send_chat_action(chat, ChatAction::Typing),
            )
            .await;
            if let Ok(Err(e)) = shown {
                tracing::debug!(account = %self.account, error = %e, "typing not shown");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_fit_as_telegram_counts() {
        let short = "a".repeat(MAX_TEXT_UTF16);
        assert_eq!(fit(&short), vec![short]);
        // 4,000 characters, but 8,000 UTF-16 units: astral characters count twice.
        let astral = "😀".repeat(2000) + "\n\n" + &"😀".repeat(2000);
        let pieces = fit(&astral);
        assert!(pieces.len() >= 2, "{}", pieces.len());
        assert!(pieces.iter().all(|p| utf16_len(p) <= MAX_TEXT_UTF16));
        assert_eq!(pieces.concat().matches('😀').count(), 4000, "nothing lost");
    }

    #[test]
    fn keyboards_carry_the_question_within_64_bytes() {
        let k = keyboard("q-7").expect("fits");
        let data: Vec<&str> = k.inline_keyboard[0]
            .iter()
            .map(|b| b.callback_data.as_str())
            .collect();
        assert_eq!(data, ["q:q-7:y", "q:q-7:n"]);
        assert!(keyboard(&"x".repeat(70)).is_none());
    }
}
