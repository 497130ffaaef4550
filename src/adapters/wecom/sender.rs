//! Sending outbox items to WeCom: an answer rides on its message's `req_id` while the handle
//! lasts (a finished stream bubble, spec §4.1), else — or when WeCom says the handle is gone —
//! it goes as proactive markdown, paced (§4.2, §4.3); questions add a yes/no card; workspace
//! files are uploaded and sent (§4.6); received media is downloaded and decrypted (§2.6).
//! Platform errors go through the account's one table ([`super::failure`]).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use scv_wecom::card::{Button, ButtonCard, valid_task_id};
use scv_wecom::limits::{FILE_DOWNLOAD_TIMEOUT, INBOUND_MEDIA_MAX_BYTES, MARKDOWN_MAX_CHARS};
use scv_wecom::media::MediaKind as UploadKind;
use scv_wecom::{ChatTarget, Connection, Error, ErrorClass};

use super::early::Early;
use super::failure::{PACED, failure};
use super::handles::Handles;
use super::inbound::{Locator, NO_KEY, ReplyRef, YES_KEY};
use super::pace::Pace;
use super::stream::{Finish, Streams};
use crate::conversation::body::MediaOut;
use crate::conversation::{
    Body, ChatId, ChatSender, MediaRef, Outbound, OutboundKind, ReplyContext, SendError,
    SendLimits, Sent, StreamMode,
};
use crate::failure::general;
use crate::ids::AccountKey;
use crate::port::held::{self, Attempt, HeldSends};
use crate::supervisor::{Capabilities, HealthHandle, NoteSource};
use crate::words::{Card, Lang, Language, Msg};

/// What a WeCom account can do: question cards with buttons, questions. No edits (a sent
/// message cannot be changed, only a clicked card), no typing indicator, no send window (a
/// proactive send needs no recent message).
pub const CAPABILITIES: Capabilities = Capabilities {
    typing: false,
    buttons: true,
    edit: false,
    questions: true,
    send_window: false,
    voice_bubbles: false,
};

/// Sends one account's messages.
pub struct WecomSender {
    conn: Connection,
    account: AccountKey,
    handles: Arc<Handles>,
    pace: Pace,
    streams: Streams,
    held: HeldSends,
    language: Language,
    early: Arc<Early>,
    health: HealthHandle,
}

impl WecomSender {
    /// A sender over `conn` for `account`, replying on the handles the intake keeps.
    pub(super) fn new(
        conn: Connection,
        account: AccountKey,
        handles: Arc<Handles>,
        held: HeldSends,
        language: Language,
        health: HealthHandle,
    ) -> Self {
        let early = Arc::new(Early::new(conn.clone(), account.clone()));
        WecomSender {
            held,
            streams: Streams::new(
                conn.clone(),
                account.clone(),
                handles.clone(),
                health.clone(),
            ),
            conn,
            account,
            handles,
            pace: Pace::default(),
            language,
            early,
            health,
        }
    }

    /// Starts downloading `media` now (see [`Early`]): its URL expires in minutes.
    pub(super) fn download_early(&self, media: &MediaRef) {
        if let Ok(l) = serde_json::from_value::<Locator>(media.locator.clone()) {
            self.early.start(scv_wecom::message::MediaRef {
                url: l.u,
                aeskey: l.k,
            });
        }
    }

    fn fail(&self, e: &Error) -> SendError {
        if let ErrorClass::SlowDown(d) = e.class() {
            self.pace.hold_for(d);
        }
        failure(e, &self.account)
    }

    /// `text` on the message's handle while it lasts, else proactively; the first piece of a
    /// streamed answer finishes its bubble.
    async fn send_text(
        &self,
        msg: &Outbound,
        reply: &ReplyRef,
        attempt: &Attempt<'_>,
    ) -> Result<Sent, SendError> {
        if let Some(key) = &msg.finishes
            && self.streams.has(key)
        {
            if !attempt.pass().await? {
                return Ok(self.skipped());
            }
            if let Some(finished) = self.streams.finish(key, &msg.text).await {
                return match finished {
                    Ok(Finish::Done) => Ok(Sent::default()),
                    Ok(Finish::Rest(rest)) => {
                        let chat = reply.target(msg.chat.as_str());
                        self.note_if_refused(&chat).await;
                        self.proactive(&chat, &rest, attempt).await
                    }
                    Err(e) if e.outcome_unknown() => Ok(self.in_doubt(&e, attempt)),
                    Err(e) => Err(self.fail(&e)),
                };
            }
        }
        let handle = match msg.kind {
            // A reply on the handle is a stream frame too (§4.1): once WeCom refused streams
            // for the client, replies go proactively.
            OutboundKind::Reply if !self.streams.refused() => self.handles.get(&reply.r),
            _ => None,
        };
        if let Some(h) = handle {
            if !attempt.pass().await? {
                return Ok(self.skipped());
            }
            match self.conn.reply_text(&h, &msg.text).await {
                Ok(()) => return Ok(Sent::default()),
                Err(e) if matches!(e.class(), ErrorClass::HandleGone { .. }) => {
                    tracing::info!(account = %self.account, error = %e, "reply handle gone; sending proactively");
                    self.streams.saw(&e);
                    self.note_if_refused(&reply.target(msg.chat.as_str())).await;
                }
                Err(e) if e.outcome_unknown() => return Ok(self.in_doubt(&e, attempt)),
                Err(e) => return Err(self.fail(&e)),
            }
        }
        self.proactive(&reply.target(msg.chat.as_str()), &msg.text, attempt)
            .await
    }

    /// One proactive markdown message, paced.
    async fn proactive(
        &self,
        chat: &ChatTarget,
        text: &str,
        attempt: &Attempt<'_>,
    ) -> Result<Sent, SendError> {
        self.paced().await?;
        if !attempt.pass().await? {
            return Ok(self.skipped());
        }
        match self.conn.send_markdown(chat, text).await {
            Ok(()) => Ok(Sent::default()),
            Err(e) if e.outcome_unknown() => Ok(self.in_doubt(&e, attempt)),
            Err(e) => Err(self.fail(&e)),
        }
    }

    /// Waits for the next proactive slot, or says how long until it comes.
    async fn paced(&self) -> Result<(), SendError> {
        self.pace.take().await.map_err(|wait| {
            SendError::slow_down(
                PACED,
                format!(
                    "WeCom takes at most 30 proactive messages a minute and 1000 an hour; the next goes in {} s",
                    wait.as_secs().max(1)
                ),
                wait,
            )
        })
    }

    /// A send an earlier run began and never settled (see [`held`]): not made again here; the
    /// caller holds it.
    fn skipped(&self) -> Sent {
        Sent::default()
    }

    /// Holds a reply an earlier run may have shown (see [`held`]) and sends a note in its
    /// place saying how it began and that `/again` brings it.
    async fn hold(&self, msg: &Outbound, reply: &ReplyRef) -> Result<Sent, SendError> {
        self.held.hold(msg).await?;
        let note = held::note(self.language.fixed(), &msg.text);
        let chat = reply.target(msg.chat.as_str());
        self.paced().await?;
        match self.conn.send_markdown(&chat, &note).await {
            Ok(()) => Ok(Sent::default()),
            Err(e) if e.outcome_unknown() => Ok(self.indeterminate(&e)),
            Err(e) => Err(self.fail(&e)),
        }
    }

    /// A reply frame that may have arrived although no answer came (§5: ack timeout, socket
    /// lost): sending it again could show it twice, and counting it sent could lose it, so the
    /// attempt is marked in doubt and the caller holds it with a note (`port::held`).
    fn in_doubt(&self, e: &Error, attempt: &Attempt<'_>) -> Sent {
        tracing::warn!(account = %self.account, error = %e, "WeCom did not confirm a send; it may or may not have arrived: held for /again, not sent again");
        attempt.outcome_unknown();
        Sent::default()
    }

    /// A note frame that may have arrived although no answer came: counted as sent (the
    /// reply it stands for is held either way).
    fn indeterminate(&self, e: &Error) -> Sent {
        tracing::warn!(account = %self.account, error = %e, "WeCom did not confirm a send; it may or may not have arrived, and is not sent again");
        Sent::default()
    }

    /// Says once, in the chat whose client refused and in status, that answers now go whole
    /// (§4.5: `600039`). Sent directly, not through the outbox: a note lost to a crash is
    /// said again by the next refusal.
    async fn note_if_refused(&self, chat: &ChatTarget) {
        let Some(code) = self.streams.take_refusal() else {
            return;
        };
        tracing::warn!(account = %self.account, code, "WeCom refuses streamed replies for this client; answers go whole until the account restarts");
        let note = Msg::StreamsRefused { code };
        self.health
            .note(NoteSource::Cards, Some(note.text(Lang::En).into_owned()));
        let text = note.text_for(self.language);
        if let Err(e) = self.paced().await {
            tracing::info!(account = %self.account, error = %e.message, "the streams note is not sent: the send pace is full");
            return;
        }
        if let Err(e) = self.conn.send_markdown(chat, &text).await {
            tracing::warn!(account = %self.account, error = %e, "the streams note was not sent");
        }
    }

    /// The question's text (with its code, for a text answer), then a yes/no card.
    async fn send_question(
        &self,
        msg: &Outbound,
        reply: &ReplyRef,
        id: &str,
        attempt: &Attempt<'_>,
    ) -> Result<Sent, SendError> {
        let sent = self.send_text(msg, reply, attempt).await?;
        if !valid_task_id(id) {
            // The text alone still takes an answer with the code.
            tracing::info!(account = %self.account, "question id cannot be a card's task_id; text only");
            return Ok(sent);
        }
        let lang = self.language;
        let card = ButtonCard {
            title: Card::Title.text_for(lang).into_owned(),
            desc: None,
            buttons: vec![
                Button {
                    text: Card::Yes.text_for(lang).into_owned(),
                    style: 1,
                    key: YES_KEY.into(),
                },
                Button {
                    text: Card::No.text_for(lang).into_owned(),
                    style: 2,
                    key: NO_KEY.into(),
                },
            ],
            task_id: id.to_string(),
        };
        let chat = reply.target(msg.chat.as_str());
        if let Err(wait) = self.pace.take().await {
            // The text went; the card would only repeat it later. The code answers it.
            tracing::info!(account = %self.account, wait_s = wait.as_secs(), "question card skipped: the send pace is full");
            return Ok(sent);
        }
        if let Err(e) = self.conn.send_card(&chat, &card).await {
            tracing::warn!(account = %self.account, error = %e, "question card not sent; the text answer with the code still works");
        }
        Ok(sent)
    }

    async fn send_media(
        &self,
        msg: &Outbound,
        media: &MediaOut,
        attempt: &Attempt<'_>,
    ) -> Result<Sent, SendError> {
        let bytes = tokio::fs::read(&media.path).await.map_err(|e| {
            SendError::rejected(
                general::MEDIA_INVALID,
                format!("cannot read the file to send: {}", e.kind()),
            )
        })?;
        let wanted = match media.kind {
            crate::agent::MediaKind::Image => UploadKind::Image,
            crate::agent::MediaKind::Video => UploadKind::Video,
            _ => UploadKind::File,
        };
        // Voice must be AMR (§4.6); nothing the bridge sends is, so audio goes as a file.
        let kind =
            UploadKind::choose(wanted, bytes.len() as u64, false).map_err(|e| self.fail(&e))?;
        let reply = ReplyRef::parse(&msg.reply);
        let chat = reply.target(msg.chat.as_str());
        self.paced().await?;
        let uploaded = self
            .conn
            .upload(kind, &media.name, &bytes)
            .await
            .map_err(|e| self.fail(&e))?;
        if !attempt.pass().await? {
            return Ok(self.skipped());
        }
        match self.conn.send_media(&chat, &uploaded).await {
            Ok(()) => Ok(Sent::default()),
            Err(e) if e.outcome_unknown() => Ok(self.in_doubt(&e, attempt)),
            Err(e) => Err(self.fail(&e)),
        }
    }
}

impl ChatSender for WecomSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            // 3,500 characters of CJK are at most 10,500 bytes: inside a stream frame's 20,480.
            max_chars: MARKDOWN_MAX_CHARS,
            // Proactive sends are paced per bot here; replies on a handle need no gap.
            min_interval: super::pace::PACE.per_chat,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            let attempt = self.held.attempt(msg);
            let reply = ReplyRef::parse(&msg.reply);
            let sent = match &msg.body {
                Body::Media(media) => self.send_media(msg, media, &attempt).await,
                Body::Question(q) if q.buttons => {
                    self.send_question(msg, &reply, &q.id, &attempt).await
                }
                _ => self.send_text(msg, &reply, &attempt).await,
            };
            if attempt.in_doubt() {
                return self.hold(msg, &reply).await;
            }
            attempt.settle(&sent).await;
            sent
        })
    }

    fn stream_mode(&self) -> StreamMode {
        StreamMode::Edit {
            every: scv_wecom::limits::STREAM_FRAME_INTERVAL,
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
            let shown = self.streams.show(key, reply, text).await;
            self.note_if_refused(&ReplyRef::parse(reply).target(chat.as_str()))
                .await;
            shown
        })
    }

    fn media_name<'a>(
        &'a self,
        media: &'a MediaRef,
        _reply: &'a ReplyContext,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let locator = serde_json::from_value::<Locator>(media.locator.clone()).ok()?;
            self.early.name(&locator.u).await
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
                    "the stored media reference is not WeCom's",
                ));
            };
            let item = scv_wecom::message::MediaRef {
                url: locator.u,
                aeskey: locator.k,
            };
            let cap = max_bytes.min(INBOUND_MEDIA_MAX_BYTES);
            let got = match self.early.take(&item.url).await {
                Some(got) => got,
                None => Arc::new(
                    self.conn
                        .download(&item, cap, FILE_DOWNLOAD_TIMEOUT)
                        .await
                        .map_err(|e| self.fail(&e))?,
                ),
            };
            if got.bytes.len() as u64 > cap {
                let e = Error::TooLarge {
                    what: "inbound media",
                    limit: cap,
                };
                return Err(self.fail(&e));
            }
            tokio::fs::write(dest, &got.bytes).await.map_err(|e| {
                SendError::transient(
                    general::STORE,
                    format!("cannot write the received file: {}", e.kind()),
                )
            })?;
            Ok(got.bytes.len() as u64)
        })
    }
}
