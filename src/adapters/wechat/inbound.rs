//! From `WeixinMessage` to the pipeline's `Inbound`: the body text (non-text items as short
//! bracketed descriptions), the dedupe id, the reply context, and the copy filter for
//! redeliveries that carry a new message id.

use std::collections::HashMap;
use std::time::Duration;

use scv_wechat::WeixinMessage;
use scv_wechat::message::{ItemKind, MessageItem};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::config::AccountKey;
use crate::conversation::{ChatId, Inbound, PlatformMsgId, ReplyContext, SenderId};

/// How long a copy with the same sender, creation time and content is recognised (the spec saw
/// copies 30–50 min later; these keep the original `create_time_ms`).
const SAME_ORIGIN_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// More remembered messages than this makes the filter forget the expired ones.
const PRUNE_AT: usize = 4096;
/// A quoted text longer than this is cut: the agent needs the gist, not the whole quote.
const QUOTE_CHARS: usize = 200;

/// What an adapter stores with a message to answer it: the context token it came with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Reply {
    /// The `context_token`, if the message had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_token: Option<String>,
}

impl Reply {
    /// Reads a stored reply context; anything unreadable counts as none.
    pub(super) fn parse(ctx: &ReplyContext) -> Reply {
        serde_json::from_str(&ctx.0).unwrap_or_default()
    }

    fn to_context(&self) -> ReplyContext {
        ReplyContext(serde_json::to_string(self).unwrap_or_default())
    }
}

/// The pipeline's message for a user's `WeixinMessage` (bot messages are filtered before).
pub(super) fn to_inbound(account: &AccountKey, m: &WeixinMessage, now_ms: i64) -> Inbound {
    let at = m.create_time_ms.filter(|t| *t > 0).unwrap_or(now_ms);
    Inbound {
        account: account.clone(),
        // WeChat bots see direct chats only: the peer is the conversation (spec §4.4).
        chat: ChatId::new(m.from_user_id.clone()),
        sender: SenderId::new(m.from_user_id.clone()),
        msg_id: PlatformMsgId::new(m.dedupe_key()),
        text: body(m),
        at_unix_ms: at.max(0) as u64,
        reply: Reply {
            context_token: m.context_token.clone().filter(|t| !t.is_empty()),
        }
        .to_context(),
        media: super::media::refs(m),
    }
}

/// The text the agent sees: text items as written, other items as a bracketed description.
pub(super) fn body(m: &WeixinMessage) -> String {
    let parts: Vec<String> = m.item_list.iter().filter_map(describe).collect();
    if parts.is_empty() {
        return "[empty message]".to_string();
    }
    parts.join("\n")
}

/// One item as text; `None` for items that carry nothing.
fn describe(item: &MessageItem) -> Option<String> {
    let quote = item.ref_msg.as_ref().and_then(|r| {
        let inner = r.message_item.as_ref().and_then(describe_plain);
        let text = inner
            .or_else(|| r.title.clone())
            .filter(|t| !t.is_empty())?;
        Some(format!("[quote: {}]", cut(&text, QUOTE_CHARS)))
    });
    // A voice note's own transcript reaches the agent through its media item, marked as one
    // and chosen by the account's `voice_text` (`conversation::voice`); a quoted one keeps it.
    let own = if item.kind() == ItemKind::Voice {
        Some("[voice]".to_string())
    } else {
        describe_plain(item)
    };
    match (quote, own) {
        (Some(q), Some(o)) => Some(format!("{q}\n{o}")),
        (q, o) => q.or(o),
    }
}

fn describe_plain(item: &MessageItem) -> Option<String> {
    match item.kind() {
        ItemKind::Text => item
            .text_item
            .as_ref()
            .and_then(|t| t.text.clone())
            .filter(|t| !t.is_empty()),
        ItemKind::Image => Some("[image]".to_string()),
        ItemKind::Voice => Some(
            match item
                .voice_item
                .as_ref()
                .and_then(|v| v.text.as_deref())
                .filter(|t| !t.trim().is_empty())
            {
                Some(t) => format!("[voice: {t}]"),
                None => "[voice]".to_string(),
            },
        ),
        ItemKind::File => Some(
            match item
                .file_item
                .as_ref()
                .and_then(|f| f.file_name.as_deref())
                .filter(|n| !n.is_empty())
            {
                Some(n) => format!("[file: {n}]"),
                None => "[file]".to_string(),
            },
        ),
        ItemKind::Video => Some("[video]".to_string()),
        ItemKind::None => None,
        ItemKind::Unknown(_) => Some("[unsupported message]".to_string()),
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// Why a message was recognised as a copy of one seen before. Only [`Copies::check`] makes
/// one, and only from a proof: there is no other way for the adapter to drop a user's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CopyOf {
    /// Same sender, same creation time and same content: the same message delivered again.
    SameOrigin,
    /// A message without a creation time whose sender and content match one seen less than the
    /// copy window ago (the only evidence such a message offers).
    SameContentSoon,
}

impl CopyOf {
    /// The reason code a dropped copy is counted under (`messages_dropped{reason}`).
    pub(super) fn reason(self) -> &'static str {
        "redelivered_copy"
    }
}

/// Recognises redelivered copies that carry a new message id (spec §7). A message with a
/// creation time is a copy only of one with the same sender, creation time and content (the
/// spec saw copies 30–50 min later, keeping the original `create_time_ms`): two messages
/// created at different times are two messages whatever they say. Only a message without a
/// creation time falls back to sender and content, within a short window that a repeat does
/// not extend (a person saying "yes" twice is heard twice once the window has passed).
/// In memory only: the journal's dedupe by message id is the durable one.
pub(super) struct Copies {
    window: Duration,
    seen: HashMap<u64, (Instant, Duration)>,
}

impl Copies {
    /// A filter whose content-only window (messages without a creation time) is `window`.
    pub(super) fn new(window: Duration) -> Self {
        Copies {
            window,
            seen: HashMap::new(),
        }
    }

    /// Whether `m` is a copy of a message seen before, and why; remembers a new one.
    pub(super) fn check(&mut self, m: &WeixinMessage, now: Instant) -> Option<CopyOf> {
        if self.seen.len() >= PRUNE_AT {
            self.seen
                .retain(|_, (at, keep)| now.duration_since(*at) < *keep);
        }
        // Two photos in a row both read "[image]": their media references tell them apart.
        let content = format!("{}\u{0}{}", body(m), media_refs(m));
        let (key, keep, copy) = match m.create_time_ms.filter(|t| *t > 0) {
            Some(t) => (
                hash(&[
                    m.from_user_id.as_bytes(),
                    &t.to_le_bytes(),
                    content.as_bytes(),
                ]),
                SAME_ORIGIN_WINDOW,
                CopyOf::SameOrigin,
            ),
            None => (
                hash(&[m.from_user_id.as_bytes(), content.as_bytes()]),
                self.window,
                CopyOf::SameContentSoon,
            ),
        };
        if let Some((at, keep)) = self.seen.get(&key)
            && now.duration_since(*at) < *keep
        {
            // Never refreshed: the window runs from the first delivery, not the latest.
            return Some(copy);
        }
        self.seen.insert(key, (now, keep));
        None
    }
}

/// The media references of a message's items, so different media never look like copies.
fn media_refs(m: &WeixinMessage) -> String {
    let param = |c: Option<&scv_wechat::message::CdnMedia>| {
        c.and_then(|c| c.encrypt_query_param.clone().or_else(|| c.full_url.clone()))
    };
    m.item_list
        .iter()
        .filter_map(|i| {
            let media = i
                .image_item
                .as_ref()
                .and_then(|x| param(x.media.as_ref()).or_else(|| x.url.clone()))
                .or_else(|| i.voice_item.as_ref().and_then(|x| param(x.media.as_ref())))
                .or_else(|| i.file_item.as_ref().and_then(|x| param(x.media.as_ref())))
                .or_else(|| i.video_item.as_ref().and_then(|x| param(x.media.as_ref())));
            media.or_else(|| i.msg_id.clone())
        })
        .collect::<Vec<_>>()
        .join("\u{0}")
}

/// FNV-1a over length-separated parts; stable and cheap (nothing here is adversarial).
pub(super) fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain(&(p.len() as u64).to_le_bytes()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Channel;

    fn msg(json: &str) -> WeixinMessage {
        serde_json::from_str(json).expect("decodes")
    }

    #[test]
    fn non_text_items_become_bracketed_descriptions() {
        let m = msg(r#"{"from_user_id":"u@im.wechat","item_list":[
            {"type":2,"image_item":{}},
            {"type":3,"voice_item":{"text":"call me"}},
            {"type":3,"voice_item":{}},
            {"type":4,"file_item":{"file_name":"a.pdf"}},
            {"type":5,"video_item":{}},
            {"type":0},
            {"type":9},
            {"type":1,"text_item":{"text":"hello"},"ref_msg":{"message_item":{"type":1,"text_item":{"text":"earlier"}}}}]}"#);
        assert_eq!(
            body(&m),
            "[image]\n[voice]\n[voice]\n[file: a.pdf]\n[video]\n[unsupported message]\n[quote: earlier]\nhello"
        );
        assert_eq!(body(&msg(r#"{"item_list":[]}"#)), "[empty message]");
    }

    #[test]
    fn inbound_keys_on_the_message_id_and_keeps_the_token() {
        let m = msg(
            r#"{"message_id":7492913259736648968,"from_user_id":"u@im.wechat","create_time_ms":5,
            "item_list":[{"type":1,"text_item":{"text":"hi"}}],"context_token":"ctx1"}"#,
        );
        let key = AccountKey::new(Channel::Wechat, "phone");
        let i = to_inbound(&key, &m, 99);
        assert_eq!(i.msg_id.as_str(), "id:7492913259736648968");
        assert_eq!(
            (i.chat.as_str(), i.sender.as_str()),
            ("u@im.wechat", "u@im.wechat")
        );
        assert_eq!(i.at_unix_ms, 5);
        assert_eq!(
            Reply::parse(&i.reply).context_token.as_deref(),
            Some("ctx1")
        );
        assert_eq!(Reply::parse(&ReplyContext::default()), Reply::default());
    }

    fn text(id: u64, from: &str, created: Option<i64>, text: &str) -> WeixinMessage {
        let mut m = msg(&format!(
            r#"{{"message_id":{id},"from_user_id":"{from}","item_list":[{{"type":1,"text_item":{{"text":"{text}"}}}}]}}"#
        ));
        m.create_time_ms = created;
        m
    }

    #[test]
    fn messages_created_at_different_times_are_never_copies_whatever_they_say() {
        let mut c = Copies::new(Duration::from_secs(5));
        let t0 = Instant::now();
        // Six "/digest" three seconds apart: six messages.
        for i in 0..6u64 {
            let at = t0 + Duration::from_secs(3 * i);
            let m = text(i + 1, "u", Some(1_000 + 3_000 * i as i64), "/digest");
            assert_eq!(c.check(&m, at), None, "message {i}");
        }
        // A copy with a new id keeps the creation time: a copy, even 40 min later.
        let copy = text(99, "u", Some(1_000), "/digest");
        assert_eq!(
            c.check(&copy, t0 + Duration::from_secs(2400)),
            Some(CopyOf::SameOrigin)
        );
        // Same creation time, other text: another message.
        let other = text(100, "u", Some(1_000), "yes");
        assert_eq!(c.check(&other, t0 + Duration::from_secs(1)), None);
        // Another sender's same message is not a copy.
        let theirs = text(101, "v", Some(1_000), "/digest");
        assert_eq!(c.check(&theirs, t0 + Duration::from_secs(1)), None);
    }

    #[test]
    fn without_a_creation_time_only_a_short_window_that_never_slides_applies() {
        let mut c = Copies::new(Duration::from_secs(5));
        let t0 = Instant::now();
        let yes = |id| text(id, "u", None, "yes");
        assert_eq!(c.check(&yes(1), t0), None);
        assert_eq!(
            c.check(&yes(2), t0 + Duration::from_secs(3)),
            Some(CopyOf::SameContentSoon)
        );
        // The repeat at 3 s did not extend the window: at 6 s "yes" is heard again.
        assert_eq!(c.check(&yes(3), t0 + Duration::from_secs(6)), None);
        assert_eq!(CopyOf::SameContentSoon.reason(), "redelivered_copy");
    }

    #[test]
    fn different_photos_are_different_messages() {
        let mut c = Copies::new(Duration::from_secs(5));
        let t0 = Instant::now();
        let photo = |id: u64, param: &str| {
            msg(&format!(
                r#"{{"message_id":{id},"from_user_id":"w","item_list":[{{"type":2,"image_item":{{"media":{{"encrypt_query_param":"{param}"}}}}}}]}}"#
            ))
        };
        assert_eq!(c.check(&photo(10, "p1"), t0), None);
        assert_eq!(c.check(&photo(11, "p2"), t0 + Duration::from_secs(1)), None);
        assert!(
            c.check(&photo(12, "p2"), t0 + Duration::from_secs(2))
                .is_some()
        );
    }
}
