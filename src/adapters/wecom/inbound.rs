//! One WeCom callback as the pipeline's input: a message to journal, a card click, or
//! something dropped with a reason (counted; nothing the platform delivered vanishes without a
//! trace). Pure: no IO.

use scv_wecom::message::{MixedItem, strip_leading_mentions};
use scv_wecom::{Callback, CallbackKind, ChatTarget, Content, Event};
use serde::{Deserialize, Serialize};

use crate::agent::MediaKind;
use crate::conversation::{Inbound, MediaRef, ReplyContext};
use crate::ids::{AccountKey, ChatId, PlatformMsgId, SenderId};

/// What to do with one callback.
#[derive(Debug)]
pub(super) enum Taken {
    /// A message for the pipeline (journaled before anything else happens with it).
    Message(Inbound),
    /// A press of a question card's button (answered at once, never journaled).
    Click(Click),
    /// A message type the bridge does not read.
    Unsupported(Unsupported),
    /// Not passed on, for this reason (a stable snake_case code for `messages_dropped`).
    Dropped(&'static str),
}

/// A message of a type the bridge does not read (§2.3: tell the owner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unsupported {
    /// The sender.
    pub userid: String,
    /// Whether it came in a direct chat (only there is the owner told).
    pub direct: bool,
    /// The message's `msgid` (the notice's outbox key).
    pub msgid: String,
    /// The platform's name of the type (`appmsg`); a plain name, not message content.
    pub msgtype: String,
}

/// A button press on a question card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Click {
    /// Who pressed (the platform's userid, case-sensitive).
    pub userid: String,
    /// The card's `task_id`: the question id.
    pub question: String,
    /// Yes or no.
    pub yes: bool,
    /// The event's `msgid` (clicks are deduplicated on it).
    pub msgid: String,
}

/// Where an answer goes, stored with the message (field names are journaled: add, never
/// rename).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ReplyRef {
    /// The callback's `req_id`: the handle a reply rides on while it lasts (verbatim).
    #[serde(default)]
    pub r: String,
    /// The chat to send to proactively: the userid in a direct chat, the group's chatid.
    #[serde(default)]
    pub c: String,
    /// Whether the chat is a group.
    #[serde(default)]
    pub g: bool,
    /// The sender's userid (WeCom limits messages in progress per user, §2.3); empty in
    /// replies journaled before it was kept.
    #[serde(default)]
    pub u: String,
}

impl ReplyRef {
    /// Reads a stored reply context; an empty or foreign one reads as nothing.
    pub fn parse(reply: &ReplyContext) -> ReplyRef {
        serde_json::from_str(&reply.0).unwrap_or_default()
    }

    fn context(&self) -> ReplyContext {
        ReplyContext(serde_json::to_string(self).unwrap_or_default())
    }

    /// The chat a proactive send goes to, `fallback` (the outbox item's chat) when none is
    /// stored. Ids are used exactly as WeCom gave them (§3: case-sensitive).
    pub fn target(&self, fallback: &str) -> ChatTarget {
        let id = if self.c.is_empty() { fallback } else { &self.c };
        if self.g {
            ChatTarget::Group {
                chatid: id.to_string(),
            }
        } else {
            ChatTarget::Direct {
                userid: id.to_string(),
            }
        }
    }
}

/// Where one media item is fetched from (journaled with the message: add, never rename). The
/// URL works for about 5 minutes (§2.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Locator {
    /// The download URL.
    pub u: String,
    /// The item's own AES key (base64), when it is encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<String>,
}

/// The button keys of a question card.
pub(super) const YES_KEY: &str = "yes";
/// See [`YES_KEY`].
pub(super) const NO_KEY: &str = "no";

/// Reads one parsed callback with its `req_id` for `account`.
pub(super) fn take(account: &AccountKey, req_id: &str, c: &Callback) -> Taken {
    match &c.kind {
        CallbackKind::Message { content, quote } => message(account, req_id, c, content, quote),
        CallbackKind::Event(Event::CardClick {
            event_key, task_id, ..
        }) => {
            let yes = match event_key.as_str() {
                YES_KEY => true,
                NO_KEY => false,
                _ => return Taken::Dropped("unknown_button"),
            };
            Taken::Click(Click {
                userid: c.from_userid.clone(),
                question: task_id.clone(),
                yes,
                msgid: c.msgid.clone(),
            })
        }
        // The welcome is optional (§4.8) and the bridge writes first only when asked.
        CallbackKind::Event(Event::EnterChat) => Taken::Dropped("enter_chat"),
        CallbackKind::Event(Event::Feedback { .. }) => Taken::Dropped("feedback"),
        // The connection itself stops on it (§1.5); nothing for the pipeline.
        CallbackKind::Event(Event::Disconnected) => Taken::Dropped("superseded"),
        CallbackKind::Event(Event::Other { .. }) => Taken::Dropped("event"),
    }
}

fn message(
    account: &AccountKey,
    req_id: &str,
    c: &Callback,
    content: &Content,
    quote: &Option<Content>,
) -> Taken {
    if c.from_userid.is_empty() || c.msgid.is_empty() {
        return Taken::Dropped("no_sender");
    }
    let group = c.chat.is_group();
    if let Content::Unknown { msgtype } = content {
        // A type name is the platform's word, not the sender's; kept short for the notice.
        let msgtype: String = msgtype
            .chars()
            .filter(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
            .take(32)
            .collect();
        return Taken::Unsupported(Unsupported {
            userid: c.from_userid.clone(),
            direct: !group,
            msgid: c.msgid.clone(),
            msgtype,
        });
    }
    let media = media_refs(content);
    let mut text = content.text().unwrap_or_default();
    if group {
        // Only messages that @-mention the bot arrive in groups; the mention is plain text
        // and the bot's name is not in the callback, so leading mentions go (§2.5).
        text = strip_leading_mentions(&text).to_string();
    }
    let mut text = text.trim().to_string();
    if let Content::Voice { .. } = content {
        // The transcript reaches the agent once, marked, through the media item.
        text = "[voice]".to_string();
    }
    if text.is_empty() {
        match media.first() {
            Some(r) => text = describe(r.kind).to_string(),
            None => return Taken::Dropped("empty"),
        }
    }
    if let Some(q) = quote.as_ref().and_then(Content::text) {
        let q = q.trim();
        if !q.is_empty() {
            text = format!("> {}\n\n{text}", q.replace('\n', "\n> "));
        }
    }
    Taken::Message(Inbound {
        account: account.clone(),
        chat: ChatId::new(c.chat.send_id().to_string()),
        sender: SenderId::new(c.from_userid.clone()),
        msg_id: PlatformMsgId::new(c.msgid.clone()),
        text,
        at_unix_ms: c
            .create_time
            .and_then(|t| u64::try_from(t).ok())
            .unwrap_or(0)
            .saturating_mul(1000),
        reply: ReplyRef {
            r: req_id.to_string(),
            c: c.chat.send_id().to_string(),
            g: group,
            u: c.from_userid.clone(),
        }
        .context(),
        media,
    })
}

fn media_refs(content: &Content) -> Vec<MediaRef> {
    let item = |kind: MediaKind, m: &scv_wecom::message::MediaRef| MediaRef {
        kind,
        name: None,
        size: None,
        transcript: None,
        locator: serde_json::to_value(Locator {
            u: m.url.clone(),
            k: m.aeskey.clone(),
        })
        .unwrap_or_default(),
    };
    match content {
        Content::Image(m) => vec![item(MediaKind::Image, m)],
        Content::File(m) => vec![item(MediaKind::File, m)],
        Content::Video(m) => vec![item(MediaKind::Video, m)],
        Content::Mixed(items) => items
            .iter()
            .filter_map(|i| match i {
                MixedItem::Image(m) => Some(item(MediaKind::Image, m)),
                MixedItem::Text(_) => None,
            })
            .collect(),
        // WeCom delivers its own transcript and no audio (§2.3): nothing to fetch.
        Content::Voice { transcript } => vec![MediaRef {
            kind: MediaKind::Audio,
            name: None,
            size: None,
            transcript: Some(transcript.clone()),
            locator: serde_json::Value::Null,
        }],
        Content::Text(_) | Content::Unknown { .. } => Vec::new(),
    }
}

fn describe(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Image => "[image]",
        MediaKind::Audio => "[voice]",
        MediaKind::Video => "[video]",
        MediaKind::File => "[file]",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ids::Channel;

    fn parse(cmd: &str, body: serde_json::Value) -> Callback {
        scv_wecom::message::parse_callback(cmd, &body).expect("callback")
    }

    fn key() -> AccountKey {
        AccountKey::new(Channel::Wecom, "bot")
    }

    #[test]
    fn group_mentions_are_stripped_and_ids_kept_verbatim() {
        let c = parse(
            "aibot_msg_callback",
            json!({"msgid": "M1", "chattype": "group", "chatid": "wrAbC", "from": {"userid": "ZhangSan"},
                   "msgtype": "text", "text": {"content": "@Robot ＠Other  hello there"}}),
        );
        let Taken::Message(i) = take(&key(), "REQ1", &c) else {
            panic!("a message")
        };
        assert_eq!(i.text, "hello there");
        assert_eq!(
            (i.chat.as_str(), i.sender.as_str(), i.msg_id.as_str()),
            ("wrAbC", "ZhangSan", "M1")
        );
        let r = ReplyRef::parse(&i.reply);
        assert_eq!((r.r.as_str(), r.c.as_str(), r.g), ("REQ1", "wrAbC", true));
        assert_eq!(
            r.target("x"),
            ChatTarget::Group {
                chatid: "wrAbC".into()
            }
        );
    }

    #[test]
    fn voice_is_the_transcript_marked_and_media_is_journaled_with_its_key() {
        let c = parse(
            "aibot_msg_callback",
            json!({"msgid": "M2", "chattype": "single", "from": {"userid": "u"},
                   "msgtype": "voice", "voice": {"content": "turn it off"}}),
        );
        let Taken::Message(i) = take(&key(), "R", &c) else {
            panic!("a message")
        };
        assert_eq!(i.text, "[voice]");
        assert_eq!(i.media[0].transcript.as_deref(), Some("turn it off"));
        let c = parse(
            "aibot_msg_callback",
            json!({"msgid": "M3", "chattype": "single", "from": {"userid": "u"},
                   "msgtype": "file", "file": {"url": "http://h/f", "aeskey": "k"}}),
        );
        let Taken::Message(i) = take(&key(), "R", &c) else {
            panic!("a message")
        };
        assert_eq!(i.text, "[file]");
        let l: Locator = serde_json::from_value(i.media[0].locator.clone()).expect("locator");
        assert_eq!((l.u.as_str(), l.k.as_deref()), ("http://h/f", Some("k")));
    }

    #[test]
    fn clicks_unknown_types_and_events() {
        let click = parse(
            "aibot_event_callback",
            json!({"msgid": "E1", "from": {"userid": "u"}, "msgtype": "event",
                   "event": {"eventtype": "template_card_event", "template_card_event":
                   {"card_type": "button_interaction", "event_key": "yes", "task_id": "q-7"}}}),
        );
        let Taken::Click(k) = take(&key(), "R", &click) else {
            panic!("a click")
        };
        assert_eq!((k.question.as_str(), k.yes), ("q-7", true));
        let other = parse(
            "aibot_msg_callback",
            json!({"msgid": "M4", "from": {"userid": "u"}, "msgtype": "appmsg", "appmsg": {}}),
        );
        assert!(matches!(
            take(&key(), "R", &other),
            Taken::Unsupported(Unsupported { direct: true, .. })
        ));
        let blank = parse(
            "aibot_msg_callback",
            json!({"msgid": "M5", "from": {"userid": "u"}, "msgtype": "text", "text": {"content": "  "}}),
        );
        assert!(matches!(take(&key(), "R", &blank), Taken::Dropped("empty")));
    }
}
