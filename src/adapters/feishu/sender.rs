//! Sending outbox items through the Feishu IM API (and patching sent cards); platform errors
//! go through the account's one table ([`super::failure`]).

use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_feishu::Client;
use scv_feishu::rest::MessageContent;

use super::address::{receive_id, uuid_for};
use super::failure::{CARD_INVALID, failure};
use super::inbound::ReplyRef;
use super::stream::{CardStreams, Finish};
use crate::conversation::{
    Body, ChatId, ChatSender, Outbound, OutboundKind, PlatformMsgId, SendError, SendLimits, Sent,
    StreamMode,
};
use crate::ids::AccountKey;
use crate::store::AccountState;
use crate::supervisor::{Capabilities, HealthHandle};

/// What a Feishu account can do: cards with buttons, edited in place once a question closes.
pub const CAPABILITIES: Capabilities = Capabilities {
    // A `Typing` reaction on the owner's message (super::typing).
    typing: true,
    buttons: true,
    edit: true,
    questions: true,
    send_window: false,
    // Spoken answers go as `audio` messages of an `opus` upload with its duration.
    voice_bubbles: true,
};

/// Characters per message: far below the 150 KB text / 30 KB post limits even for 4-byte
/// characters plus JSON escaping, and a screenful that still reads well on a phone.
pub const MAX_CHARS: usize = 4000;

/// Feishu's limits as gaps (spec: 5 QPS per recipient and per group, 50/s per app), each kept
/// just under: the core keeps the chat's, [`FeishuSender`]'s pacer the app's.
pub const PACE: crate::port::pace::Pace = crate::port::pace::Pace {
    per_chat: Duration::from_millis(220),
    per_bot: Duration::from_millis(22),
    // A group is one chat: its 5 QPS is the chat's gap.
    per_group: Duration::ZERO,
};

/// A streamed answer's card is updated at most this often: the 300–500 ms the spec
/// recommends (§5.1), far under CardKit's 10 operations per second on one card, leaving room
/// for the finish and the close.
pub const SHOW_EVERY: Duration = Duration::from_millis(400);

/// Sends one account's messages.
pub struct FeishuSender {
    client: Client,
    /// The account, for the fixes its failures name.
    account: AccountKey,
    /// The typing reactions shown now.
    typing: super::typing::Typing,
    /// Answers streamed into cards, when the account's state is at hand to record them.
    cards: Option<CardStreams>,
    /// The app's 50 sends a second, over all its chats (the core keeps each chat's gap).
    pace: crate::port::pace::Pacer,
}

impl FeishuSender {
    /// A sender over `client` (shares its token cache) for `account`; answers go out whole.
    pub fn new(client: Client, account: AccountKey) -> Self {
        FeishuSender {
            client,
            account,
            typing: Default::default(),
            cards: None,
            pace: crate::port::pace::Pacer::new(PACE),
        }
    }

    /// Streams long answers into CardKit cards, recorded in the account's `state` so a
    /// restart finishes them; a refusal of cards shows on the run's `health`.
    pub fn with_state(mut self, state: AccountState, health: HealthHandle) -> Self {
        self.cards = Some(CardStreams::new(
            self.client.clone(),
            self.account.clone(),
            state,
            health,
        ));
        self
    }

    /// Sends `text` (a piece of `msg`, or what a dead card did not show) as a new message.
    async fn send_new(&self, msg: &Outbound, text: &str) -> Result<Sent, SendError> {
        let content = content_of(&msg.body, text)?;
        let uuid = uuid_for(&msg.idempotency_key);
        let reply = ReplyRef::parse(&msg.reply);
        let sent = match (&reply.message_id, reply.group, msg.kind) {
            // In groups an answer goes in the thread of the message that asked.
            (Some(parent), true, OutboundKind::Reply) => {
                self.client.reply(parent, &content, true, &uuid).await
            }
            _ => {
                let to = receive_id(msg.chat.as_str());
                self.client.send(&to, &content, &uuid).await
            }
        };
        let sent = sent.map_err(|e| failure(&e, &self.account))?;
        Ok(Sent {
            msg_id: Some(PlatformMsgId::new(sent.message_id)),
            chat: sent.chat_id.map(ChatId::new),
        })
    }

    /// Delivers the first piece of an answer streamed into a card by finishing the card; `None`
    /// when the answer has no card.
    async fn finish_card(&self, msg: &Outbound) -> Option<Result<Sent, SendError>> {
        let cards = self.cards.as_ref()?;
        let answer = msg.finishes.as_deref()?;
        if !matches!(msg.body, Body::Text) || !cards.has(answer).await {
            return None;
        }
        Some(
            async {
                match cards
                    .finish(answer, &msg.chat, &msg.reply, &msg.text)
                    .await?
                {
                    Finish::Done(sent) => Ok(sent),
                    Finish::Rest(rest) => {
                        let sent = self.send_new(msg, &rest).await?;
                        cards.rest_sent(answer).await?;
                        Ok(sent)
                    }
                }
            }
            .await,
        )
    }
}

impl ChatSender for FeishuSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: MAX_CHARS,
            min_interval: PACE.per_chat,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            self.pace.wait((), None).await;
            if let Body::Media(out) = &msg.body {
                return super::media_send::send(&self.client, &self.account, msg, out).await;
            }
            if let Some(finished) = self.finish_card(msg).await {
                return finished;
            }
            self.send_new(msg, &msg.text).await
        })
    }

    fn stream_mode(&self) -> StreamMode {
        if self.cards.is_some() {
            StreamMode::Edit { every: SHOW_EVERY }
        } else {
            StreamMode::Whole
        }
    }

    fn stream_show<'a>(
        &'a self,
        key: &'a str,
        chat: &'a ChatId,
        reply: &'a crate::conversation::ReplyContext,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            match &self.cards {
                Some(cards) => cards.show(key, chat, reply, text).await,
                None => Err(SendError::rejected(
                    crate::failure::general::UPDATE_UNSUPPORTED,
                    "this sender does not stream answers",
                )),
            }
        })
    }

    fn fetch<'a>(
        &'a self,
        media: &'a crate::conversation::MediaRef,
        _reply: &'a crate::conversation::ReplyContext,
        dest: &'a std::path::Path,
        max_bytes: u64,
    ) -> BoxFuture<'a, Result<u64, SendError>> {
        Box::pin(super::media::fetch(
            &self.client,
            &self.account,
            media,
            dest,
            max_bytes,
        ))
    }

    fn typing<'a>(
        &'a self,
        _chat: &'a ChatId,
        reply: &'a crate::conversation::ReplyContext,
        on: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(id) = ReplyRef::parse(reply).message_id {
                self.typing.set(&self.client, &id, on).await;
            }
        })
    }

    fn update<'a>(
        &'a self,
        target: &'a PlatformMsgId,
        msg: &'a Outbound,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            // Only cards can be patched; anything else goes out as a new message.
            let card = match content_of(&msg.body, &msg.text)? {
                MessageContent::Card(card) => card,
                _ => {
                    return Err(SendError::rejected(
                        CARD_INVALID,
                        "only a card can replace a card",
                    ));
                }
            };
            self.client
                .patch_card(target.as_str(), &card)
                .await
                .map_err(|e| failure(&e, &self.account))
        })
    }
}

/// The message content: the card of the body when it has one (a question, how one ended, a
/// card stored by an earlier release), a markdown post when the text uses markdown, plain text
/// otherwise.
fn content_of(body: &Body, text: &str) -> Result<MessageContent, SendError> {
    match super::render::card(body) {
        Ok(Some(card)) => return Ok(MessageContent::Card(card)),
        Ok(None) => {}
        Err(_) => {
            return Err(SendError::rejected(
                CARD_INVALID,
                "the card is not valid JSON",
            ));
        }
    }
    if looks_like_markdown(text) {
        let post = MessageContent::post_markdown("", &super::markdown::for_post(text));
        if post.content_string().len() <= post.size_limit() {
            return Ok(post);
        }
    }
    Ok(MessageContent::Text(text.to_string()))
}

/// True when rendering as markdown helps: code fences, bold, headings, lists, links.
fn looks_like_markdown(text: &str) -> bool {
    if text.contains("```") || text.contains("**") || text.contains("](") {
        return true;
    }
    text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("# ")
            || l.starts_with("## ")
            || l.starts_with("- ")
            || l.starts_with("* ")
            || l.split_once(". ").is_some_and(|(n, _)| {
                !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit())
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_detected_only_when_it_helps() {
        assert!(looks_like_markdown("use **this**"));
        assert!(looks_like_markdown("steps:\n1. one\n2. two"));
        assert!(looks_like_markdown("```rust\nfn x() {}\n```"));
        assert!(looks_like_markdown("- a\n- b"));
        assert!(!looks_like_markdown("just a sentence. Another one."));
        assert!(!looks_like_markdown("2024. was a year"));
    }
}
