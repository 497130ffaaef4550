//! Sending outbox items as QQ passive replies (spec §4.1): every send carries the `msg_id` of a
//! message the owner (or another sender) wrote, inside its window (60 min one-to-one, 5 min in
//! groups) and its budget (5 replies), with a `msg_seq` never used before for it. An item with
//! no such trigger waits in the queue, visible in status, until the peer next writes
//! (`WindowClosed`). Text is rendered to plain text with links defanged ([`super::render`]);
//! files are uploaded for the chat and sent as media replies, and received ones fetched
//! ([`super::media`]).
//! Platform errors go through the account's one table ([`super::failure`]).

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::BoxFuture;
use scv_qq::limits::{
    C2C_REPLY_WINDOW, GROUP_REPLY_WINDOW, MAX_ANSWER_CHUNKS, MAX_TEXT_CHARS, REPLIES_PER_MESSAGE,
};
use scv_qq::window::WINDOW_MARGIN;
use scv_qq::{Body as QqBody, Client, ErrorClass, Rejection, Reply, Target, Trigger};

use super::failure::{failure, window_closed};
use super::inbound::ReplyRef;
use super::state;
use crate::clock::Clock;
use crate::conversation::body::Body;
use crate::conversation::{
    ChatId, ChatSender, MediaRef, Outbound, OutboundKind, PlatformMsgId, ReplyContext, SendError,
    SendLimits, Sent,
};
use crate::failure::general;
use crate::ids::AccountKey;
use crate::store::AccountState;
use crate::supervisor::Capabilities;
use crate::words::{Language, Msg};

/// What a QQ account can do: questions answered in text; sends only in reply (`send_window`).
/// `buttons`: the platform has them, but custom keyboards are by invitation only (spec §4.5), so
/// each account's `buttons` setting decides whether its questions carry them; the question's
/// text says how to answer by code either way, so an account without them loses nothing. No
/// typing: whether it spends one of the 5 replies is unconfirmed (§4.3), and an answer may need
/// them all. No edits.
pub const CAPABILITIES: Capabilities = Capabilities {
    typing: false,
    buttons: true,
    edit: false,
    questions: true,
    send_window: true,
    voice_bubbles: false,
};

/// QQ's pace. It documents no send rate (only the reply budget and the rate-limit answers, which
/// the client turns into waits); the one figure its sources give is the Tencent plugin's 300 ms
/// between stream frames (spec §4.3), taken as the safe gap between two sends to one chat. No
/// bot-wide or group gap is documented, so none is invented.
pub const PACE: crate::port::pace::Pace = crate::port::pace::Pace {
    per_chat: std::time::Duration::from_millis(300),
    per_bot: std::time::Duration::ZERO,
    per_group: std::time::Duration::ZERO,
};

/// Sends one account's messages.
pub struct QqSender {
    client: Client,
    account: AccountKey,
    state: AccountState,
    clock: Clock,
    language: Language,
    /// Questions carry Yes/No buttons (the account's `buttons` setting).
    buttons: bool,
    /// QQ refused a keyboard in this run: the rest of its questions go as text.
    refused_buttons: AtomicBool,
}

impl QqSender {
    /// A sender over `client` for `account`, spending replies recorded in `state`.
    pub fn new(
        client: Client,
        account: AccountKey,
        state: AccountState,
        clock: Clock,
        language: Language,
    ) -> Self {
        QqSender {
            client,
            account,
            state,
            clock,
            language,
            buttons: false,
            refused_buttons: AtomicBool::new(false),
        }
    }

    /// The same sender, putting Yes/No buttons under questions when `on` (the account says QQ
    /// granted it keyboards and markdown).
    pub fn with_buttons(mut self, on: bool) -> Self {
        self.buttons = on;
        self
    }

    /// Sends question `q` as markdown with its buttons. QQ refusing them (no keyboard or
    /// markdown permission after all, `304037`/`50056`) sends the question as text instead, once,
    /// which says how to answer by code.
    async fn send_question(
        &self,
        target: &Target,
        msg: &Outbound,
        q: &crate::conversation::body::Question,
    ) -> Result<Sent, SendError> {
        let text = pieces(&msg.text, self.language).concat();
        let body = QqBody::Markdown {
            content: text.clone(),
            keyboard: Some(super::buttons::keyboard(&q.id, self.language)),
        };
        let m = match self.send_body(target, msg, 0, body).await {
            Err(e) if e.code == super::failure::PERMISSION => {
                tracing::info!(account = %self.account, "QQ refused buttons; questions go as text");
                self.refused_buttons.store(true, Ordering::Relaxed);
                // The same pair: the refused send delivered nothing, and a question may spend
                // only one reply of the latest message. QQ's dedupe is named for a repeated
                // pair (§4.1); whether a refused one counts is unconfirmed.
                self.send_body(target, msg, 0, QqBody::Text(text)).await?
            }
            other => other?,
        };
        Ok(Sent {
            msg_id: (!m.id.is_empty()).then(|| PlatformMsgId::new(m.id)),
            chat: None,
        })
    }

    /// Sends piece `piece` of `msg` as a passive reply.
    ///
    /// Every piece keeps the `msg_id` + `msg_seq` of its first attempt (recorded before that
    /// attempt went out), so a retry (after a timeout, or after a crash between QQ taking the
    /// message and the outbox recording it) sends the very same pair. The spec confirms that QQ
    /// refuses a repeated `msg_id` + `msg_seq` with `40054005` "消息被去重" (§4.1, official doc,
    /// code observed): the platform dedupes, so such a refusal of a repeated attempt means the
    /// earlier one was delivered, and the piece counts as sent, once. Unconfirmed: whether a
    /// pair QQ refused for another reason also blocks it; such a refusal ends the item here
    /// (never a resend), or, for a closed window (`40034024`, which the platform may answer
    /// before its dedupe), the piece tries a fresh pair once. A fresh attempt refused as a
    /// duplicate (the account's state lost a spent reply) takes a fresh pair once (§6
    /// "Duplicate").
    async fn send_body(
        &self,
        target: &Target,
        msg: &Outbound,
        piece: usize,
        body: QqBody,
    ) -> Result<scv_qq::SentMessage, SendError> {
        let name = state::attempt_name(&msg.idempotency_key, piece);
        let mut again = true;
        loop {
            let (reply, repeated) = self.reply_for(msg, &name).await?;
            let e = match self.client.send(target, Some(&reply), &body).await {
                Ok(m) => return Ok(m),
                Err(e) => e,
            };
            let duplicate = e.class() == ErrorClass::Rejected(Rejection::DuplicateSeq);
            let closed = e.class() == ErrorClass::Rejected(Rejection::WindowClosed);
            if duplicate && repeated {
                // The earlier attempt was delivered: QQ deduped this one.
                return Ok(scv_qq::SentMessage {
                    id: String::new(),
                    timestamp: None,
                });
            }
            if !(again && (duplicate || (closed && repeated))) {
                return Err(failure(&e, &self.account));
            }
            again = false;
            state::forget_attempt(&self.state, &name)
                .await
                .map_err(|e| SendError::transient(general::STORE, e.to_string()))?;
        }
    }

    /// The trigger and `msg_seq` for the piece recorded as `name`: its earlier attempt's
    /// (`true`), else a reply spent in the account's state and recorded before the send.
    async fn reply_for(&self, msg: &Outbound, name: &str) -> Result<(Reply, bool), SendError> {
        let now = self.clock.now_ms();
        let own = ReplyRef::parse(&msg.reply);
        let journaled = ReplyRef::parse(&msg.latest_reply);
        let (kind, chat, name) = (msg.kind, msg.chat.as_str().to_string(), name.to_string());
        let picked = self
            .state
            .call(move |s| {
                if let Some(a) = state::attempt_in(s, &name)? {
                    return Ok(Some((a, true)));
                }
                // A pairing code is answered but never journaled: its trigger is kept aside.
                let latest = match state::latest_in(s, &chat)? {
                    Some(aside) if aside.at > journaled.at => aside,
                    _ => journaled,
                };
                for c in candidates(kind, &own, &latest, now) {
                    let allows = |n: u32| n < c.allowed;
                    if let Some(seq) = state::spend_in(s, &c.trigger.m, c.trigger.at, allows)? {
                        let a = state::Attempt {
                            m: c.trigger.m,
                            seq,
                            at: c.trigger.at,
                        };
                        state::record_attempt_in(s, &name, &a)?;
                        return Ok(Some((a, false)));
                    }
                }
                Ok(None)
            })
            .await
            .map_err(|e| SendError::transient(general::STORE, e.to_string()))?;
        let Some((a, repeated)) = picked else {
            return Err(window_closed());
        };
        let reply = Reply {
            trigger: Trigger::Message(a.m),
            msg_seq: a.seq,
        };
        Ok((reply, repeated))
    }
}

/// A trigger a send may use, and how many replies of its budget it may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Candidate {
    pub trigger: ReplyRef,
    /// The send may take a reply while fewer than this many are spent.
    pub allowed: u32,
}

/// Which triggers `msg` may reply with at `now_ms`, in order of preference (pure).
///
/// An answer uses its own message's window and the whole budget. Anything else (a question, a
/// notice, an answer whose own window closed) may use the chat's latest message only while
/// none of its replies is spent: the rest stay for that message's own answer (at most
/// [`MAX_ANSWER_CHUNKS`] pieces), so a queued message never spends a reply a later answer needs.
pub(super) fn candidates(
    kind: OutboundKind,
    own: &ReplyRef,
    latest: &ReplyRef,
    now_ms: u64,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    if kind == OutboundKind::Reply && open(own, now_ms) {
        out.push(Candidate {
            trigger: own.clone(),
            allowed: REPLIES_PER_MESSAGE,
        });
    }
    if latest.m != own.m || kind != OutboundKind::Reply {
        let foreign = REPLIES_PER_MESSAGE.saturating_sub(MAX_ANSWER_CHUNKS);
        if open(latest, now_ms) && foreign > 0 {
            out.push(Candidate {
                trigger: latest.clone(),
                allowed: foreign,
            });
        }
    }
    out
}

/// Whether `r`'s window is still open at `now_ms`, closing a margin early (a send in flight
/// must arrive inside it).
fn open(r: &ReplyRef, now_ms: u64) -> bool {
    if r.m.is_empty() {
        return false;
    }
    let window = if r.g {
        GROUP_REPLY_WINDOW
    } else {
        C2C_REPLY_WINDOW
    };
    let closes = r.at.saturating_add(window.as_millis() as u64);
    now_ms.saturating_add(WINDOW_MARGIN.as_millis() as u64) < closes
}

/// Where a chat's replies go.
fn target_of(chat: &ChatId) -> Result<Target, SendError> {
    let id = chat.as_str();
    match id.strip_prefix("g:") {
        Some(group) if !group.is_empty() => Ok(Target::Group(group.to_string())),
        None if !id.is_empty() && !id.contains(':') => Ok(Target::User(id.to_string())),
        _ => Err(SendError::rejected(
            general::UPDATE_TARGET_MISSING,
            "not a QQ chat id (a chat of another platform?)",
        )),
    }
}

/// `text` as QQ pieces: plain text, links defanged with one line saying so, within the limit.
fn pieces(text: &str, language: Language) -> Vec<String> {
    let r = super::render::plain(text);
    let mut out = r.text;
    if r.links > 0 {
        out.push_str("\n\n");
        out.push_str(&Msg::LinksDefanged { count: r.links }.text_for(language));
    }
    if out.chars().count() <= MAX_TEXT_CHARS {
        return vec![out];
    }
    crate::conversation::split(&out, MAX_TEXT_CHARS)
}

impl ChatSender for QqSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: MAX_TEXT_CHARS,
            min_interval: PACE.per_chat,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            let target = target_of(&msg.chat)?;
            if let Body::Media(media) = &msg.body {
                let file_info =
                    super::media::upload(&self.client, &self.account, &target, media).await?;
                let m = self
                    .send_body(&target, msg, 0, QqBody::Media { file_info })
                    .await?;
                return Ok(Sent {
                    msg_id: (!m.id.is_empty()).then(|| PlatformMsgId::new(m.id)),
                    chat: None,
                });
            }
            if let Body::Question(q) = &msg.body
                && q.buttons
                && self.buttons
                && !self.refused_buttons.load(Ordering::Relaxed)
                && msg.text.chars().count() <= MAX_TEXT_CHARS
            {
                return self.send_question(&target, msg, q).await;
            }
            let mut sent = Sent::default();
            for (i, piece) in pieces(&msg.text, self.language).into_iter().enumerate() {
                let m = self.send_body(&target, msg, i, QqBody::Text(piece)).await?;
                sent = Sent {
                    msg_id: (!m.id.is_empty()).then(|| PlatformMsgId::new(m.id)),
                    chat: None,
                };
            }
            Ok(sent)
        })
    }

    fn fetch<'a>(
        &'a self,
        media: &'a MediaRef,
        _reply: &'a ReplyContext,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60 * 1000;

    fn at(m: &str, at: u64, g: bool) -> ReplyRef {
        ReplyRef { m: m.into(), at, g }
    }

    fn picked(c: &[Candidate]) -> Vec<(&str, u32)> {
        c.iter()
            .map(|c| (c.trigger.m.as_str(), c.allowed))
            .collect()
    }

    #[test]
    fn an_answer_uses_its_own_window_then_the_latest_one_sparingly() {
        let own = at("A", 0, false);
        let latest = at("B", 30 * MIN, false);
        let c = candidates(OutboundKind::Reply, &own, &latest, 31 * MIN);
        assert_eq!(picked(&c), [("A", 5), ("B", 1)]);
        // One-to-one: 60 min, closing 10 s early.
        let c = candidates(OutboundKind::Reply, &own, &latest, 60 * MIN - 10_000);
        assert_eq!(picked(&c), [("B", 1)]);
        let c = candidates(OutboundKind::Reply, &own, &own, 59 * MIN);
        assert_eq!(picked(&c), [("A", 5)], "its own message once");
    }

    #[test]
    fn groups_close_after_five_minutes_and_proactive_messages_wait() {
        let own = at("G", 0, true);
        assert_eq!(
            picked(&candidates(OutboundKind::Reply, &own, &own, 4 * MIN)),
            [("G", 5)]
        );
        assert!(candidates(OutboundKind::Reply, &own, &own, 5 * MIN - 10_000).is_empty());
        let none = ReplyRef::default();
        assert!(candidates(OutboundKind::Proactive, &none, &none, 0).is_empty());
        assert_eq!(
            picked(&candidates(OutboundKind::Proactive, &none, &own, MIN)),
            [("G", 1)]
        );
    }

    #[test]
    fn chats_name_their_scene_and_links_are_said() {
        assert_eq!(
            target_of(&ChatId::new("U1")).ok(),
            Some(Target::User("U1".into()))
        );
        assert_eq!(
            target_of(&ChatId::new("g:G1")).ok(),
            Some(Target::Group("G1".into()))
        );
        assert!(target_of(&ChatId::new("wechat:x")).is_err());
        let p = pieces("see https://a.cn/x", Language::En);
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("see a[.]cn/x\n\n(QQ refuses links"),
            "{}",
            p[0]
        );
        let long = "字".repeat(MAX_TEXT_CHARS) + "\n\nhttps://b.cn";
        assert!(
            pieces(&long, Language::ZhCn)
                .iter()
                .all(|p| p.chars().count() <= MAX_TEXT_CHARS)
        );
    }
}
