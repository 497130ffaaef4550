//! Sending outbox items to WeCom: an answer rides on its message's `req_id` while the handle
//! lasts (a finished stream bubble, spec §4.1), else — or when WeCom says the handle is gone —
//! it goes as proactive markdown, paced (§4.2, §4.3); questions add a yes/no card; workspace
//! files are uploaded and sent (§4.6); received media is downloaded and decrypted (§2.6).
//! Platform errors go through the account's one table ([`super::failure`]).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_wecom::card::{Button, ButtonCard, valid_task_id};
use scv_wecom::limits::{FILE_DOWNLOAD_TIMEOUT, INBOUND_MEDIA_MAX_BYTES, MARKDOWN_MAX_CHARS};
use scv_wecom::media::MediaKind as UploadKind;
use scv_wecom::{ChatTarget, Connection, Error, ErrorClass};

use super::failure::{PACED, failure};
use super::handles::Handles;
use super::inbound::{Locator, NO_KEY, ReplyRef, YES_KEY};
use super::inflight::InFlight;
use super::pace::Pace;
use super::stream::{Finish, Streams};
use crate::conversation::body::MediaOut;
use crate::conversation::{
    Body, ChatId, ChatSender, MediaRef, Outbound, OutboundKind, ReplyContext, SendError,
    SendLimits, Sent, StreamMode,
};
use crate::failure::general;
use crate::ids::AccountKey;
use crate::supervisor::Capabilities;
use crate::words::{Card, Language};

/// What a WeCom account can do: question cards with buttons, questions. No edits (a sent
/// message cannot be changed, only a clicked card), no typing indicator, no send window (a
/// proactive send needs no recent message).
pub const CAPABILITIES: Capabilities = Capabilities {
    typing: false,
    buttons: true,
    edit: false,
    questions: true,
    send_window: false,
};

/// One send attempt's record of being begun ([`InFlight`]), written once, just before the
/// attempt's first frame a person could see, so waits before it (the pace, an upload) never
/// count as begun.
struct Gate<'a> {
    inflight: &'a InFlight,
    key: &'a str,
    written: std::sync::atomic::AtomicBool,
    /// An earlier run began this send: it was not made again.
    refused: std::sync::atomic::AtomicBool,
}

impl Gate<'_> {
    /// Writes the record on the first call. False: an earlier run began this very send and
    /// never learned its outcome, so it must not go again.
    async fn pass(&self) -> Result<bool, SendError> {
        if self.written.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Ok(true);
        }
        match self.inflight.begin(self.key).await {
            Ok(earlier) => {
                self.refused
                    .store(earlier, std::sync::atomic::Ordering::SeqCst);
                Ok(!earlier)
            }
            Err(e) => {
                self.written
                    .store(false, std::sync::atomic::Ordering::SeqCst);
                Err(SendError::transient(
                    general::STORE,
                    format!("cannot record the send before making it: {e}"),
                ))
            }
        }
    }

    fn written(&self) -> bool {
        self.written.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn refused(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// How many characters of a held reply its note quotes.
const PREVIEW_CHARS: usize = 30;

/// Sends one account's messages.
pub struct WecomSender {
    conn: Connection,
    account: AccountKey,
    handles: Arc<Handles>,
    pace: Pace,
    streams: Streams,
    inflight: InFlight,
    language: Language,
}

impl WecomSender {
    /// A sender over `conn` for `account`, replying on the handles the intake keeps.
    pub(super) fn new(
        conn: Connection,
        account: AccountKey,
        handles: Arc<Handles>,
        inflight: InFlight,
        language: Language,
    ) -> Self {
        WecomSender {
            inflight,
            streams: Streams::new(conn.clone(), account.clone(), handles.clone()),
            conn,
            account,
            handles,
            pace: Pace::default(),
            language,
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
        gate: &Gate<'_>,
    ) -> Result<Sent, SendError> {
        if let Some(key) = &msg.finishes
            && self.streams.has(key)
        {
            if !gate.pass().await? {
                return Ok(self.skipped());
            }
            if let Some(finished) = self.streams.finish(key, &msg.text).await {
                return match finished {
                    Ok(Finish::Done) => Ok(Sent::default()),
                    Ok(Finish::Rest(rest)) => {
                        self.proactive(&reply.target(msg.chat.as_str()), &rest, gate)
                            .await
                    }
                    Err(e) if e.outcome_unknown() => Ok(self.indeterminate(&e)),
                    Err(e) => Err(self.fail(&e)),
                };
            }
        }
        let handle = match msg.kind {
            OutboundKind::Reply => self.handles.get(&reply.r),
            _ => None,
        };
        if let Some(h) = handle {
            if !gate.pass().await? {
                return Ok(self.skipped());
            }
            match self.conn.reply_text(&h, &msg.text).await {
                Ok(()) => return Ok(Sent::default()),
                Err(e) if matches!(e.class(), ErrorClass::HandleGone { .. }) => {
                    tracing::info!(account = %self.account, error = %e, "reply handle gone; sending proactively");
                }
                Err(e) if e.outcome_unknown() => return Ok(self.indeterminate(&e)),
                Err(e) => return Err(self.fail(&e)),
            }
        }
        self.proactive(&reply.target(msg.chat.as_str()), &msg.text, gate)
            .await
    }

    /// One proactive markdown message, paced.
    async fn proactive(
        &self,
        chat: &ChatTarget,
        text: &str,
        gate: &Gate<'_>,
    ) -> Result<Sent, SendError> {
        self.paced().await?;
        if !gate.pass().await? {
            return Ok(self.skipped());
        }
        match self.conn.send_markdown(chat, text).await {
            Ok(()) => Ok(Sent::default()),
            Err(e) if e.outcome_unknown() => Ok(self.indeterminate(&e)),
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

    /// A send an earlier run began and never settled (see [`InFlight`]): counted as sent.
    fn skipped(&self) -> Sent {
        tracing::warn!(account = %self.account, "a send begun before a restart never learned its outcome; not sent again on its own");
        Sent::default()
    }

    /// Holds a reply an earlier run may have shown (see [`InFlight`]) and sends a note in its
    /// place saying how it began and that `/again` brings it.
    async fn hold(&self, msg: &Outbound, reply: &ReplyRef) -> Result<Sent, SendError> {
        self.inflight
            .hold(&msg.idempotency_key, msg.chat.as_str(), &msg.text)
            .await
            .map_err(|e| {
                SendError::transient(general::STORE, format!("cannot hold a reply: {e}"))
            })?;
        let preview: String = msg.text.chars().take(PREVIEW_CHARS).collect();
        let note = crate::words::Resend::MayBeCutOff { preview };
        let note = match self.language.fixed() {
            Some(lang) => note.text(lang).into_owned(),
            None => note.text(crate::words::Lang::En).into_owned(),
        };
        let chat = reply.target(msg.chat.as_str());
        self.paced().await?;
        match self.conn.send_markdown(&chat, &note).await {
            Ok(()) => Ok(Sent::default()),
            Err(e) if e.outcome_unknown() => Ok(self.indeterminate(&e)),
            Err(e) => Err(self.fail(&e)),
        }
    }

    /// A frame that may have arrived although no answer came (§5: ack timeout, socket lost):
    /// sending it again could show the answer twice, so it counts as sent, loudly.
    fn indeterminate(&self, e: &Error) -> Sent {
        tracing::warn!(account = %self.account, error = %e, "WeCom did not confirm a send; it may or may not have arrived, and is not sent again");
        Sent::default()
    }

    /// The question's text (with its code, for a text answer), then a yes/no card.
    async fn send_question(
        &self,
        msg: &Outbound,
        reply: &ReplyRef,
        id: &str,
        gate: &Gate<'_>,
    ) -> Result<Sent, SendError> {
        let sent = self.send_text(msg, reply, gate).await?;
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
        gate: &Gate<'_>,
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
        if !gate.pass().await? {
            return Ok(self.skipped());
        }
        match self.conn.send_media(&chat, &uploaded).await {
            Ok(()) => Ok(Sent::default()),
            Err(e) if e.outcome_unknown() => Ok(self.indeterminate(&e)),
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
            min_interval: Duration::ZERO,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            let gate = Gate {
                inflight: &self.inflight,
                key: msg.idempotency_key.as_str(),
                written: std::sync::atomic::AtomicBool::new(false),
                refused: std::sync::atomic::AtomicBool::new(false),
            };
            let reply = ReplyRef::parse(&msg.reply);
            let sent = match &msg.body {
                Body::Media(media) => self.send_media(msg, media, &gate).await,
                Body::Question(q) if q.buttons => {
                    self.send_question(msg, &reply, &q.id, &gate).await
                }
                _ => self.send_text(msg, &reply, &gate).await,
            };
            if sent.is_err() && gate.written() && !gate.refused() {
                self.inflight.failed(gate.key).await;
            }
            if gate.refused() && !matches!(msg.body, Body::Media(_)) {
                return self.hold(msg, &reply).await;
            }
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
        _chat: &'a ChatId,
        reply: &'a ReplyContext,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(self.streams.show(key, reply, text))
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
            let got = self
                .conn
                .download(&item, cap, FILE_DOWNLOAD_TIMEOUT)
                .await
                .map_err(|e| self.fail(&e))?;
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
