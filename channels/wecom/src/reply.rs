//! Replies on a callback's handle and proactive sends (§4.1–§4.4, §4.7, §4.8), with the
//! fallback a reply takes when its handle can no longer carry it (§4.2).

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::classify::{BUSY, ErrorClass, VERSION_CONFLICT};
use crate::connection::{Connection, Response};
use crate::delivery::{HandleKind, ReplyHandle};
use crate::error::Error;
use crate::frame::{self, cmd};
use crate::limits::{
    EVENT_REPLY_WINDOW, FINISH_IMAGES_MAX, IMAGE_MAX_BYTES, MARKDOWN_MAX_CHARS,
    STREAM_CONTENT_MAX_BYTES, STREAM_FINISH_BY,
};
use crate::media::md5_hex;
use crate::message::ChatTarget;
use crate::text::split_markdown;

/// Which way an answer went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// On the callback's handle (a reply in the user's conversation).
    Reply,
    /// With `aibot_send_msg`, because the handle could not carry it.
    Proactive,
}

/// Retries of a frame answered "busy" or "version conflict" (§5: at most 3, 0.2 × 2^n s).
const CONFLICT_RETRIES: u32 = 3;

impl Connection {
    /// Sends a reply command on `handle`, after checking it takes `command` and is inside its
    /// window (else [`Error::WindowClosed`], nothing sent). Busy and version-conflict answers
    /// are retried 3 times, 0.2 s doubling (replacing a bubble's content is idempotent).
    pub(crate) async fn respond(
        &self,
        handle: &ReplyHandle,
        command: &'static str,
        body: Value,
    ) -> Result<Response, Error> {
        let (kind, window) = match command {
            cmd::RESPOND_MSG => (HandleKind::Message, STREAM_FINISH_BY),
            cmd::RESPOND_WELCOME => (HandleKind::EnterChat, EVENT_REPLY_WINDOW),
            _ => (HandleKind::CardEvent, EVENT_REPLY_WINDOW),
        };
        if handle.kind != kind || Instant::now() >= handle.received_at + window {
            return Err(Error::WindowClosed { cmd: command });
        }
        let timeout = self.options().ack_timeout;
        let mut attempt = 0;
        loop {
            match self
                .command(command, &handle.req_id, body.clone(), timeout)
                .await
            {
                Err(Error::Platform { code, .. })
                    if (code == VERSION_CONFLICT || code == BUSY) && attempt < CONFLICT_RETRIES =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(200 << attempt)).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// A whole answer on a message handle: one stream frame with `finish: true` (the reply
    /// types the long connection documents are stream, card and media; §4.1).
    pub async fn reply_text(&self, handle: &ReplyHandle, text: &str) -> Result<(), Error> {
        let mut stream = StreamReply::new(self.clone(), handle.clone());
        stream.finish(text).await
    }

    /// [`Connection::reply_text`], or — when the handle cannot carry it (window passed,
    /// `846604/846605/846608`, `600039`, socket lost before the answer) — the same text as
    /// proactive markdown to the handle's chat, split at [`MARKDOWN_MAX_CHARS`].
    pub async fn reply_or_send(&self, handle: &ReplyHandle, text: &str) -> Result<Route, Error> {
        match self.reply_text(handle, text).await {
            Ok(()) => Ok(Route::Reply),
            Err(e) if matches!(e.class(), ErrorClass::HandleGone { .. }) => {
                tracing::info!(error = %e, "wecom reply handle gone; sending proactively");
                self.send_markdown(&handle.chat, text).await?;
                Ok(Route::Proactive)
            }
            Err(e) => Err(e),
        }
    }

    /// A card as the reply to a message (not inside a stream on the same handle: finish the
    /// stream and use [`Connection::send_card`] instead, §4.7).
    pub async fn reply_card(
        &self,
        handle: &ReplyHandle,
        card: &crate::card::ButtonCard,
    ) -> Result<(), Error> {
        card.validate()?;
        let body = json!({"msgtype": "template_card", "template_card": card.to_json()});
        self.respond(handle, cmd::RESPOND_MSG, body).await.map(drop)
    }

    /// The welcome text on an `enter_chat` handle, within 5 s of the event (§4.8).
    pub async fn welcome(&self, handle: &ReplyHandle, text: &str) -> Result<(), Error> {
        blank_check(text)?;
        let body = json!({"msgtype": "text", "text": {"content": text}});
        self.respond(handle, cmd::RESPOND_WELCOME, body)
            .await
            .map(drop)
    }

    /// Replaces the clicked card for `userids` (empty: for everyone) on a card-event handle,
    /// within 5 s of the click (§4.7). `card` must carry the clicked card's `task_id`.
    pub async fn update_card(
        &self,
        handle: &ReplyHandle,
        userids: &[String],
        card: Value,
    ) -> Result<(), Error> {
        let mut body = json!({"response_type": "update_template_card", "template_card": card});
        if !userids.is_empty() {
            body["userids"] = json!(userids);
        }
        self.respond(handle, cmd::RESPOND_UPDATE, body)
            .await
            .map(drop)
    }

    /// Proactive markdown to a chat, split at [`MARKDOWN_MAX_CHARS`]; one `aibot_send_msg`
    /// per piece. The caller paces by [`crate::limits::SEND_SPACING`]; a `45009` answer
    /// classifies as slow down.
    pub async fn send_markdown(&self, chat: &ChatTarget, text: &str) -> Result<(), Error> {
        let pieces = split_markdown(text, MARKDOWN_MAX_CHARS);
        if pieces.is_empty() {
            return Err(Error::Invalid("blank message".into()));
        }
        for piece in pieces {
            self.send_msg(
                chat,
                json!({"msgtype": "markdown", "markdown": {"content": piece}}),
            )
            .await?;
        }
        Ok(())
    }

    /// A yes/no card sent proactively (§4.7).
    pub async fn send_card(
        &self,
        chat: &ChatTarget,
        card: &crate::card::ButtonCard,
    ) -> Result<(), Error> {
        card.validate()?;
        self.send_msg(
            chat,
            json!({"msgtype": "template_card", "template_card": card.to_json()}),
        )
        .await
    }

    /// `aibot_send_msg` with `body` plus the chat id (§4.3).
    pub(crate) async fn send_msg(&self, chat: &ChatTarget, mut body: Value) -> Result<(), Error> {
        body["chatid"] = Value::from(chat.send_id());
        let req_id = frame::new_req_id(cmd::SEND_MSG);
        let timeout = self.options().ack_timeout;
        self.command(cmd::SEND_MSG, &req_id, body, timeout)
            .await
            .map(drop)
    }
}

fn blank_check(text: &str) -> Result<(), Error> {
    if text.trim().is_empty() {
        // Invisible text leaves the "thinking" bubble spinning (§4.4).
        return Err(Error::Invalid("blank text is never sent".into()));
    }
    Ok(())
}

/// One streamed answer bubble on a message handle (§4.5). Made by the account task per
/// answer; every frame replaces the whole bubble, so each call passes the full text so far.
#[derive(Debug)]
pub struct StreamReply {
    conn: Connection,
    handle: ReplyHandle,
    id: String,
    last: Option<String>,
    finished: bool,
}

impl StreamReply {
    /// A new bubble (a fresh stream id) on `handle`. Sends nothing yet.
    pub fn new(conn: Connection, handle: ReplyHandle) -> Self {
        let id = frame::new_req_id("stream");
        Self {
            conn,
            handle,
            id,
            last: None,
            finished: false,
        }
    }

    /// The stream id (journal it: a restart cannot reopen the bubble, but can tell it was one).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The handle this bubble is on.
    pub fn handle(&self) -> &ReplyHandle {
        &self.handle
    }

    /// Shows `text` (the whole answer so far) in the bubble. `Ok(false)`: unchanged, not sent.
    /// The caller keeps [`crate::limits::STREAM_FRAME_INTERVAL`] between calls.
    pub async fn update(&mut self, text: &str) -> Result<bool, Error> {
        if self.last.as_deref() == Some(text) {
            return Ok(false);
        }
        self.frame(text, false).await.map(|()| true)
    }

    /// Closes the bubble with `text`. Blank text is refused (the bubble would spin for ever);
    /// finish with the words the daemon has instead.
    pub async fn finish(&mut self, text: &str) -> Result<(), Error> {
        blank_check(text)?;
        self.frame(text, true).await?;
        self.finished = true;
        Ok(())
    }

    /// Closes the bubble with `text` and up to 10 JPG/PNG images of ≤ 10 MB each, shown under
    /// it (`msg_item`, allowed on the finish frame only, §4.5).
    pub async fn finish_with_images(
        &mut self,
        text: &str,
        images: &[Vec<u8>],
    ) -> Result<(), Error> {
        blank_check(text)?;
        if images.len() > FINISH_IMAGES_MAX {
            return Err(Error::Invalid(format!(
                "at most {FINISH_IMAGES_MAX} images on a finish frame"
            )));
        }
        let mut items = Vec::with_capacity(images.len());
        for image in images {
            if image.len() as u64 > IMAGE_MAX_BYTES {
                return Err(Error::TooLarge {
                    what: "image",
                    limit: IMAGE_MAX_BYTES,
                });
            }
            if !(image.starts_with(b"\xFF\xD8\xFF") || image.starts_with(b"\x89PNG\r\n\x1A\n")) {
                return Err(Error::Invalid(
                    "finish-frame images must be JPG or PNG".into(),
                ));
            }
            let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, image);
            items
                .push(json!({"msgtype": "image", "image": {"base64": b64, "md5": md5_hex(image)}}));
        }
        self.send_frame(text, true, Some(Value::Array(items)))
            .await?;
        self.finished = true;
        Ok(())
    }

    /// [`StreamReply::finish`], or the whole text as proactive markdown when the handle can no
    /// longer carry it (window, `846604/846605/846608`, `600039`, connection lost).
    pub async fn finish_or_send(&mut self, text: &str) -> Result<Route, Error> {
        match self.finish(text).await {
            Ok(()) => Ok(Route::Reply),
            Err(e) if matches!(e.class(), ErrorClass::HandleGone { .. }) => {
                tracing::info!(error = %e, "wecom stream handle gone; sending the answer proactively");
                self.conn.send_markdown(&self.handle.chat, text).await?;
                self.finished = true;
                Ok(Route::Proactive)
            }
            Err(e) => Err(e),
        }
    }

    async fn frame(&mut self, text: &str, finish: bool) -> Result<(), Error> {
        self.send_frame(text, finish, None).await
    }

    async fn send_frame(
        &mut self,
        text: &str,
        finish: bool,
        items: Option<Value>,
    ) -> Result<(), Error> {
        if self.finished {
            return Err(Error::Invalid("the stream is already finished".into()));
        }
        if text.len() > STREAM_CONTENT_MAX_BYTES {
            return Err(Error::TooLarge {
                what: "stream content",
                limit: STREAM_CONTENT_MAX_BYTES as u64,
            });
        }
        let mut body = json!({"msgtype": "stream",
            "stream": {"id": self.id, "finish": finish, "content": text}});
        if let Some(items) = items {
            body["stream"]["msg_item"] = items;
        }
        self.conn
            .respond(&self.handle, cmd::RESPOND_MSG, body)
            .await?;
        self.last = Some(text.to_owned());
        Ok(())
    }
}
