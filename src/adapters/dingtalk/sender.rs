//! Sending outbox items (spec §4.1–4.5): each text as DingTalk markdown, through the message's
//! reply webhook while it lives and otherwise (or when the webhook fails) through the robot
//! API, one-to-one by staff id or into the group; questions with Yes / No links that make the
//! owner's own client send the answer with its code (§4.7 A: no template needed, and the answer
//! arrives as the owner's ordinary message, so only the owner's tap counts); files uploaded and
//! sent as a picture or a file; received files fetched with their download codes; with a card
//! template configured, answers streamed into AI cards ([`super::cards`]). Platform errors go
//! through the account's one table ([`super::failure`]).

use futures_util::future::BoxFuture;
use scv_dingtalk::limits::{GROUP_MSG_PARAM_MAX_BYTES, MARKDOWN_CHUNK_CHARS, MEDIA_MAX_BYTES};
use scv_dingtalk::media::MediaKind as UploadKind;
use scv_dingtalk::send::Outgoing;
use scv_dingtalk::{Client, ErrorClass};

use super::cards::{CardStreams, Finish};
use super::failure::failure;
use super::inbound::Locator;
use super::pace::{PACE, Pace, Path};
use super::questions::{self, QuestionCards};
use super::reply::{ReplyRef, Target};
use super::typing::Typing;
use crate::conversation::body::{MediaOut, Question};
use crate::conversation::{
    Body, ChatId, ChatSender, MediaRef, Outbound, ReplyContext, SendError, SendLimits, Sent,
    StreamMode,
};
use crate::failure::general;
use crate::ids::{AccountKey, PlatformMsgId};
use crate::port::held::{self, Attempt, HeldSends};
use crate::supervisor::Capabilities;

/// What a DingTalk account can do: Yes / No buttons on questions (links that need no template,
/// or a question card's callback buttons when the account names its template); the
/// "thinking" reaction as the typing sign (spec §4.8); edits of question messages only (a
/// question card shows how it ended; see [`questions::show_closed`]).
pub const CAPABILITIES: Capabilities = Capabilities {
    typing: true,
    buttons: true,
    edit: true,
    questions: true,
    send_window: false,
    voice_bubbles: false,
};

/// The core splits answers to this many characters (spec §4.4: ≈ 3 500 observed, the low end).
pub const MAX_CHARS: usize = MARKDOWN_CHUNK_CHARS;

/// Sends one account's messages.
pub struct DingTalkSender {
    client: Client,
    account: AccountKey,
    pace: Pace,
    /// Answers streamed into AI cards, when the account names a card template.
    cards: Option<CardStreams>,
    /// Questions on template cards with buttons, when the account names a question template.
    questions: Option<QuestionCards>,
    /// The thinking reactions shown now; `None` when the account turned them off.
    typing: Option<Typing>,
    /// The account's language, for what a question card says when it closes.
    language: crate::words::Language,
    /// Sends begun and replies held: robot sends take no idempotency key (`port::held`).
    held: Option<HeldSends>,
}

impl DingTalkSender {
    /// A sender over `client` for `account`.
    pub fn new(client: Client, account: AccountKey) -> Self {
        DingTalkSender {
            client,
            account,
            pace: Pace::default(),
            cards: None,
            questions: None,
            typing: Some(Typing::default()),
            language: crate::words::Language::default(),
            held: None,
        }
    }

    /// Records each send before it goes (in `held`), so one a crash or an unknown outcome left
    /// undecided is held with a note rather than sent twice.
    pub(super) fn with_held(mut self, held: HeldSends) -> Self {
        self.held = Some(held);
        self
    }

    /// Streams answers into AI cards of `template`, recorded in the account's `state` so a
    /// restart finishes them; a refusal of cards shows on the run's `health`.
    pub fn with_cards(
        mut self,
        template: scv_dingtalk::card::CardTemplate,
        state: crate::store::AccountState,
        health: crate::supervisor::HealthHandle,
    ) -> Self {
        self.cards = Some(CardStreams::new(
            self.client.clone(),
            template,
            self.account.clone(),
            state,
            health,
        ));
        self
    }

    /// Says what a closed question card shows in `language`.
    pub(super) fn with_language(mut self, language: crate::words::Language) -> Self {
        self.language = language;
        self
    }

    /// Shows no thinking reaction (`thinking_reaction = false`).
    pub(super) fn without_thinking(mut self) -> Self {
        self.typing = None;
        self
    }

    /// Asks questions on cards of `template` (spec §4.7 B), whose buttons answer through the
    /// Stream connection.
    pub(super) fn with_question_cards(mut self, template: String) -> Self {
        self.questions = Some(QuestionCards::new(
            self.client.clone(),
            template,
            self.account.clone(),
        ));
        self
    }

    /// Delivers the first piece of an answer streamed into a card by finishing the card (and
    /// sending what it cannot hold); `None` when the answer has no card.
    async fn finish_card(
        &self,
        msg: &Outbound,
        target: &Target,
        reply: &ReplyRef,
    ) -> Option<Result<Sent, SendError>> {
        let cards = self.cards.as_ref()?;
        let answer = msg.finishes.as_deref()?;
        if !matches!(msg.body, Body::Text) || !cards.has(answer).await {
            return None;
        }
        Some(
            async {
                match cards.finish(answer, &msg.text).await? {
                    Finish::Done => Ok(Sent::default()),
                    Finish::Rest(rest) => {
                        let sent = self.send_markdown(target, reply, &rest, None).await?;
                        cards.rest_sent(answer).await?;
                        Ok(sent)
                    }
                }
            }
            .await,
        )
    }

    fn fail(&self, e: &scv_dingtalk::Error) -> SendError {
        failure(e, &self.account)
    }

    /// Sends `text` as markdown, split again where one piece's `msgParam` would be over the
    /// group limit. Returns the last message.
    async fn send_markdown(
        &self,
        target: &Target,
        reply: &ReplyRef,
        text: &str,
        attempt: Option<&Attempt<'_>>,
    ) -> Result<Sent, SendError> {
        let rendered = scv_dingtalk::markdown::render(text);
        let mut sent = Sent::default();
        for piece in fit(&rendered) {
            let out = Outgoing::Markdown {
                title: scv_dingtalk::markdown::title(&piece, "…"),
                text: piece,
            };
            sent = self.send_one(target, reply, &out, attempt).await?;
        }
        Ok(sent)
    }

    /// One message: the reply webhook first while it lives (text and markdown only), else the
    /// robot API. A webhook that fails for any reason but a fatal one, or one that may have
    /// delivered, falls back to the API (spec §4.1). `attempt` is passed before each request.
    async fn send_one(
        &self,
        target: &Target,
        reply: &ReplyRef,
        out: &Outgoing,
        attempt: Option<&Attempt<'_>>,
    ) -> Result<Sent, SendError> {
        let group = match target {
            Target::Group(g) => Some(g.as_str()),
            _ => None,
        };
        let webhook_body = matches!(out, Outgoing::Markdown { .. } | Outgoing::Text { .. });
        if let (true, Some(hook)) = (webhook_body, reply.webhook()) {
            self.pace.wait(Path::Webhook, group).await;
            held::pass(attempt).await?;
            match self.client.reply_by_webhook(&hook, out).await {
                Ok(s) => return Ok(sent(s)),
                Err(e) if matches!(e.class(), ErrorClass::Fatal(_)) || e.outcome_unknown() => {
                    return Err(self.fail_in(&e, attempt));
                }
                Err(e) => {
                    tracing::debug!(account = %self.account, error = %e, "reply webhook not used; sending through the robot API");
                }
            }
        }
        let r = match target {
            Target::User(staff) => {
                self.pace.wait(Path::User, None).await;
                held::pass(attempt).await?;
                self.client.send_to_user(staff, out).await
            }
            Target::Group(cid) => {
                self.pace.wait(Path::Group, group).await;
                held::pass(attempt).await?;
                self.client.send_to_group(cid, out).await
            }
            Target::Webhook(_) => Err(scv_dingtalk::Error::WebhookExpired),
        };
        r.map(sent).map_err(|e| self.fail_in(&e, attempt))
    }

    /// [`Self::fail`] of a send: one whose outcome is unknown keeps its record (`port::held`).
    fn fail_in(&self, e: &scv_dingtalk::Error, attempt: Option<&Attempt<'_>>) -> SendError {
        if e.outcome_unknown()
            && let Some(a) = attempt
        {
            a.outcome_unknown();
        }
        self.fail(e)
    }

    /// Holds `msg`, which may have been shown, and sends the note that stands in for it.
    async fn hold(
        &self,
        held: &HeldSends,
        msg: &Outbound,
        target: &Target,
        reply: &ReplyRef,
    ) -> Result<Sent, SendError> {
        held.hold(msg).await?;
        let note = held::note(self.language.fixed(), &msg.text);
        let out = Outgoing::Markdown {
            title: scv_dingtalk::markdown::title(&note, "…"),
            text: note,
        };
        // A failed note is retried by the outbox, which holds the reply again (a no-op) first.
        self.send_one(target, reply, &out, None).await
    }

    /// A question on a card with buttons when the account names a question template and the
    /// card goes, else with Yes / No links that send "yes CODE" / "no CODE" as the owner.
    async fn send_question(
        &self,
        target: &Target,
        reply: &ReplyRef,
        text: &str,
        q: &Question,
        attempt: Option<&Attempt<'_>>,
    ) -> Result<Sent, SendError> {
        if let Some(cards) = &self.questions
            && let Some(sent) = cards.send(target, text, q).await
        {
            return Ok(sent);
        }
        let out = question_markdown(text, q);
        self.send_one(target, reply, &out, attempt).await
    }

    /// Uploads a workspace file and sends it as a picture or a file; a type DingTalk does not
    /// take (spec §4.5) is refused, and the core then sends the item's text instead.
    async fn send_media(
        &self,
        target: &Target,
        media: &MediaOut,
        attempt: Option<&Attempt<'_>>,
    ) -> Result<Sent, SendError> {
        let ext = std::path::Path::new(&media.name)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let kind = [UploadKind::Image, UploadKind::File]
            .into_iter()
            .find(|k| k.extensions().contains(&ext.as_str()))
            .ok_or_else(|| {
                SendError::rejected(
                    general::MEDIA_UNSUPPORTED,
                    "DingTalk takes pictures (jpg, png, gif, bmp) and office, pdf, zip or rar files only",
                )
            })?;
        self.pace.wait(Path::Upload, None).await;
        let media_id = self
            .client
            .upload(&media.path, kind)
            .await
            .map_err(|e| self.fail(&e))?;
        let out = match kind {
            UploadKind::Image => Outgoing::Image {
                photo_url: media_id,
            },
            _ => Outgoing::File {
                media_id,
                file_name: scv_dingtalk::media::safe_file_name(&media.name, "file"),
                file_type: ext,
            },
        };
        // Files never go through the webhook (text and markdown only).
        self.send_one(target, &ReplyRef::default(), &out, attempt)
            .await
    }
}

fn sent(s: scv_dingtalk::send::Sent) -> Sent {
    Sent {
        msg_id: (!s.process_query_key.is_empty()).then(|| PlatformMsgId::new(s.process_query_key)),
        chat: None,
    }
}

/// The question's text with its Yes / No links under it, labelled in the question's language.
fn question_markdown(text: &str, q: &Question) -> Outgoing {
    let lang = crate::words::detect(&q.text).unwrap_or_default();
    let yes = crate::words::answer_word(crate::protocol::ConfirmState::Yes, lang);
    let no = crate::words::answer_word(crate::protocol::ConfirmState::No, lang);
    let links = format!(
        "[{yes}]({}) · [{no}]({})",
        answer_link("yes", &q.code),
        answer_link("no", &q.code),
    );
    Outgoing::Markdown {
        title: scv_dingtalk::markdown::title(&q.text, "?"),
        text: format!("{}\n\n{links}", scv_dingtalk::markdown::render(text)),
    }
}

/// `dtmd://dingtalkclient/sendMessage?content=<word CODE>`: tapping it sends that text as the
/// person who tapped (spec §4.4), which the core reads as an answer with its code.
/// Codes are two ASCII letters or digits and the words ASCII, so only the space needs escaping
/// (as `%20`: the client does not read form encoding's `+`).
fn answer_link(word: &str, code: &str) -> String {
    let safe: String = code.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("dtmd://dingtalkclient/sendMessage?content={word}%20{safe}")
}

/// `text` in pieces whose `msgParam` stays within the group limit (15 000 bytes; CJK text and
/// escapes can take a 3 500-character piece past it): the core's own split, tightened.
fn fit(text: &str) -> Vec<String> {
    let fits = |p: &str| {
        let param = Outgoing::Markdown {
            title: String::new(),
            text: p.to_string(),
        }
        .msg_param();
        param.len() + 64 <= GROUP_MSG_PARAM_MAX_BYTES
    };
    if fits(text) {
        return vec![text.to_string()];
    }
    let mut max = MAX_CHARS;
    loop {
        max = max * 3 / 4;
        let pieces = crate::conversation::split(text, max);
        if max <= 64 || pieces.iter().all(|p| fits(p)) {
            return pieces;
        }
    }
}

/// An update this account cannot make: the pipeline sends the item as a new message.
fn cannot_update() -> SendError {
    SendError::rejected(
        general::UPDATE_UNSUPPORTED,
        "DingTalk updates only question cards",
    )
}

/// The target an outbox item names.
fn target_of(msg: &Outbound) -> Result<Target, SendError> {
    Target::parse(&msg.chat).ok_or_else(|| {
        SendError::rejected(
            general::UPDATE_TARGET_MISSING,
            "not a DingTalk chat id (a chat of another platform?)",
        )
    })
}

impl ChatSender for DingTalkSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: MAX_CHARS,
            min_interval: PACE.per_chat,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            let target = target_of(msg)?;
            // A proactive message rides on the chat's latest reply webhook while it lives.
            let context = if msg.reply.0.is_empty() {
                &msg.latest_reply
            } else {
                &msg.reply
            };
            let reply = ReplyRef::parse(context);
            if let Some(finished) = self.finish_card(msg, &target, &reply).await {
                return finished;
            }
            let attempt = self.held.as_ref().map(|h| h.attempt(msg));
            let a = attempt.as_ref();
            let sent = match &msg.body {
                Body::Media(media) => self.send_media(&target, media, a).await,
                Body::Question(q) if q.buttons => {
                    self.send_question(&target, &reply, &msg.text, q, a).await
                }
                _ => self.send_markdown(&target, &reply, &msg.text, a).await,
            };
            if let (Some(a), Some(held)) = (a, &self.held) {
                if a.in_doubt() {
                    return self.hold(held, msg, &target, &reply).await;
                }
                a.settle(&sent).await;
            }
            let sent = sent?;
            // Sent to a bare staff id (an owner's question), it landed in the owner's direct
            // chat, where the answers come from.
            let chat = target.chat_id();
            // A question a reply webhook took has no id from DingTalk; a stand-in lets the
            // pipeline still ask to show it closed (see `questions::show_closed`).
            let msg_id = match &msg.body {
                Body::Question(q) => sent.msg_id.or_else(|| Some(questions::links_id(&q.id))),
                _ => sent.msg_id,
            };
            Ok(Sent {
                msg_id,
                chat: (chat != msg.chat).then_some(chat),
            })
        })
    }

    /// Shows a closed question on the message that asked it (see [`questions::show_closed`]);
    /// nothing else is ever updated.
    fn update<'a>(
        &'a self,
        target: &'a PlatformMsgId,
        msg: &'a Outbound,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let Body::QuestionClosed(c) = &msg.body else {
                return Err(cannot_update());
            };
            questions::show_closed(&self.client, target, c, self.language)
                .await
                .map_err(|e| e.map_or_else(cannot_update, |e| self.fail(&e)))
        })
    }

    fn typing<'a>(
        &'a self,
        _chat: &'a crate::ids::ChatId,
        reply: &'a crate::conversation::ReplyContext,
        on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let r = ReplyRef::parse(reply);
            if let Some(t) = &self.typing
                && !r.m.is_empty()
                && !r.c.is_empty()
            {
                t.set(&self.client, &r.m, &r.c, on).await;
            }
        })
    }

    fn stream_mode(&self) -> StreamMode {
        match self.cards {
            // One update in flight, at most one a second (spec §4.6); each counts against the
            // app's monthly quota, so no finer.
            Some(_) => StreamMode::Edit {
                every: scv_dingtalk::limits::CARD_UPDATE_INTERVAL,
            },
            None => StreamMode::Whole,
        }
    }

    fn stream_show<'a>(
        &'a self,
        key: &'a str,
        chat: &'a ChatId,
        _reply: &'a ReplyContext,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let (Some(cards), Some(target)) = (&self.cards, Target::parse(chat)) else {
                return Err(SendError::rejected(
                    general::UPDATE_UNSUPPORTED,
                    "this account streams no cards",
                ));
            };
            cards.show(key, &target, text).await
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
                    "the stored media reference is not DingTalk's",
                ));
            };
            let cap = max_bytes.min(MEDIA_MAX_BYTES);
            self.client
                .download(&locator.d, dest, cap)
                .await
                .map(|d| d.bytes)
                .map_err(|e| self.fail(&e))
        })
    }
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
