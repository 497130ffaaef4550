//! Callback bodies (spec §2.2–§2.5): messages and events, parsed leniently (unknown types are
//! kept as such, never an error), the dedupe key, and the group mention strip.
//!
//! Made by [`parse_callback`] from a [`crate::Delivery`]; the daemon journals the raw frame,
//! and these types are what it reads back. Ids are case-sensitive and kept verbatim (§3).

use serde_json::Value;

use crate::frame::cmd;

/// Where a callback came from and where an answer goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChatTarget {
    /// A direct chat with this user (`chattype: single`).
    Direct {
        /// The user's `userid`.
        userid: String,
    },
    /// A group chat (`chattype: group`).
    Group {
        /// The group's `chatid`.
        chatid: String,
    },
}

impl ChatTarget {
    /// The `chatid` for `aibot_send_msg`: the userid in a DM, the group chatid otherwise (§4.3).
    pub fn send_id(&self) -> &str {
        match self {
            ChatTarget::Direct { userid } => userid,
            ChatTarget::Group { chatid } => chatid,
        }
    }

    /// Whether this is a group.
    pub fn is_group(&self) -> bool {
        matches!(self, ChatTarget::Group { .. })
    }
}

/// An encrypted media download reference (§2.6). The URL is a capability: never log it.
#[derive(Clone, PartialEq, Eq)]
pub struct MediaRef {
    /// Download URL, valid ~5 min.
    pub url: String,
    /// base64 AES-256 key; `None` means the bytes are plain.
    pub aeskey: Option<String>,
}

impl std::fmt::Debug for MediaRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MediaRef([redacted])")
    }
}

/// One part of a `mixed` message, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MixedItem {
    /// A text part.
    Text(String),
    /// A picture.
    Image(MediaRef),
}

/// What a user sent (§2.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text; in groups it starts with the mention as typed ([`strip_leading_mentions`]).
    Text(String),
    /// A picture (DM only).
    Image(MediaRef),
    /// Text and pictures interleaved.
    Mixed(Vec<MixedItem>),
    /// A voice message: only WeCom's transcript arrives, no audio (§2.3).
    Voice {
        /// The transcript (empty when WeCom gave none).
        transcript: String,
    },
    /// A file; its name comes with the download (DM only).
    File(MediaRef),
    /// A video.
    Video(MediaRef),
    /// A type this client does not read (`appmsg`, new ones): journal it, tell the owner.
    Unknown {
        /// The `msgtype` as sent.
        msgtype: String,
    },
}

impl Content {
    /// The text a person typed or said, when there is any (mixed parts joined by newlines).
    pub fn text(&self) -> Option<String> {
        match self {
            Content::Text(t) => Some(t.clone()),
            Content::Voice { transcript } => Some(transcript.clone()),
            Content::Mixed(items) => {
                let parts: Vec<&str> = items
                    .iter()
                    .filter_map(|i| match i {
                        MixedItem::Text(t) => Some(t.as_str()),
                        MixedItem::Image(_) => None,
                    })
                    .collect();
                (!parts.is_empty()).then(|| parts.join("\n"))
            }
            _ => None,
        }
    }

    /// Every media reference in the content, in order.
    pub fn media(&self) -> Vec<&MediaRef> {
        match self {
            Content::Image(m) | Content::File(m) | Content::Video(m) => vec![m],
            Content::Mixed(items) => items
                .iter()
                .filter_map(|i| match i {
                    MixedItem::Image(m) => Some(m),
                    MixedItem::Text(_) => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// What happened, for an event callback (§2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The user opened the DM for the first time today; a welcome may follow within 5 s.
    EnterChat,
    /// A card button was pressed.
    CardClick {
        /// `card_type`.
        card_type: String,
        /// The pressed button's `key`.
        event_key: String,
        /// The card's `task_id`.
        task_id: String,
    },
    /// 👍/👎 on a reply that carried a feedback id. Journal only.
    Feedback {
        /// The feedback id the reply carried.
        id: String,
        /// `type` (meaning unconfirmed).
        kind: Option<i64>,
    },
    /// Another connection took over (§1.5); the connection stops on it by itself.
    Disconnected,
    /// Any other event type: ignored without failing.
    Other {
        /// The `eventtype` as sent.
        eventtype: String,
    },
}

/// What a callback carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackKind {
    /// A user's message.
    Message {
        /// What was sent.
        content: Content,
        /// The quoted message, if any.
        quote: Option<Content>,
    },
    /// An event.
    Event(Event),
}

/// One parsed callback. Stable: `msgid` is the dedupe key, `chat` and `from_userid` route it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// Unique per callback; redeliveries repeat it (§2.7).
    pub msgid: String,
    /// The bot the callback is for.
    pub aibotid: String,
    /// The chat.
    pub chat: ChatTarget,
    /// The sender's (or clicker's) userid, case-sensitive: match the owner on this.
    pub from_userid: String,
    /// Epoch seconds, when sent.
    pub create_time: Option<i64>,
    /// Message or event.
    pub kind: CallbackKind,
}

impl Callback {
    /// The key to dedupe on, for messages and events alike (§2.7): the `msgid`.
    pub fn dedupe_key(&self) -> &str {
        &self.msgid
    }
}

/// Why a callback body was not usable (never carries its text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A field every callback has is missing or not a string.
    #[error("callback without {0}")]
    Missing(&'static str),
    /// Not a callback command.
    #[error("unknown callback command")]
    UnknownCommand,
}

/// Parses a callback body pushed with `cmd`.
pub fn parse_callback(command: &str, body: &Value) -> Result<Callback, ParseError> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let msgid = s(body, "msgid").ok_or(ParseError::Missing("msgid"))?;
    let from_userid = body
        .get("from")
        .and_then(|f| s(f, "userid"))
        .ok_or(ParseError::Missing("from.userid"))?;
    let chat = match (s(body, "chattype").as_deref(), s(body, "chatid")) {
        (Some("group"), Some(chatid)) => ChatTarget::Group { chatid },
        (Some("group"), None) => return Err(ParseError::Missing("chatid")),
        _ => ChatTarget::Direct {
            userid: from_userid.clone(),
        },
    };
    let kind = match command {
        cmd::MSG_CALLBACK => CallbackKind::Message {
            content: content(body),
            quote: body.get("quote").filter(|q| q.is_object()).map(content),
        },
        cmd::EVENT_CALLBACK => CallbackKind::Event(event(body)),
        _ => return Err(ParseError::UnknownCommand),
    };
    Ok(Callback {
        msgid,
        aibotid: s(body, "aibotid").unwrap_or_default(),
        chat,
        from_userid,
        create_time: body.get("create_time").and_then(Value::as_i64),
        kind,
    })
}

fn str_at<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    v.pointer(path).and_then(Value::as_str)
}

fn media_ref(v: Option<&Value>) -> Option<MediaRef> {
    let v = v?;
    Some(MediaRef {
        url: v.get("url")?.as_str()?.to_owned(),
        aeskey: v
            .get("aeskey")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .map(str::to_owned),
    })
}

fn content(v: &Value) -> Content {
    let msgtype = v.get("msgtype").and_then(Value::as_str).unwrap_or_default();
    let unknown = || Content::Unknown {
        msgtype: msgtype.to_owned(),
    };
    match msgtype {
        "text" => str_at(v, "/text/content").map_or_else(unknown, |t| Content::Text(t.to_owned())),
        "voice" => Content::Voice {
            // cc-connect also reads `voice.text` [observed].
            transcript: str_at(v, "/voice/content")
                .or_else(|| str_at(v, "/voice/text"))
                .unwrap_or_default()
                .to_owned(),
        },
        "image" => media_ref(v.get("image")).map_or_else(unknown, Content::Image),
        "file" => media_ref(v.get("file")).map_or_else(unknown, Content::File),
        "video" => media_ref(v.get("video")).map_or_else(unknown, Content::Video),
        "mixed" => {
            let items = v
                .pointer("/mixed/msg_item")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(mixed_item).collect())
                .unwrap_or_default();
            Content::Mixed(items)
        }
        _ => unknown(),
    }
}

fn mixed_item(v: &Value) -> Option<MixedItem> {
    match v.get("msgtype")?.as_str()? {
        "text" => Some(MixedItem::Text(str_at(v, "/text/content")?.to_owned())),
        "image" => media_ref(v.get("image")).map(MixedItem::Image),
        _ => None,
    }
}

fn event(body: &Value) -> Event {
    let ev = body.get("event").cloned().unwrap_or(Value::Null);
    let eventtype = str_at(&ev, "/eventtype").unwrap_or_default().to_owned();
    match eventtype.as_str() {
        "enter_chat" => Event::EnterChat,
        "disconnected_event" => Event::Disconnected,
        "template_card_event" => {
            // The plugin nests the payload; the SDK types put it flat on `event` (§2.4).
            let nested = ev.get("template_card_event").unwrap_or(&Value::Null);
            let field = |k: &str| {
                nested
                    .get(k)
                    .or_else(|| ev.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            Event::CardClick {
                card_type: field("card_type"),
                event_key: field("event_key"),
                task_id: field("task_id"),
            }
        }
        "feedback_event" => Event::Feedback {
            id: str_at(&ev, "/feedback_event/id")
                .unwrap_or_default()
                .to_owned(),
            kind: ev.pointer("/feedback_event/type").and_then(Value::as_i64),
        },
        _ => Event::Other { eventtype },
    }
}

/// The text with its leading `@name` tokens (ASCII `@` or full-width `＠`) removed (§2.5): in
/// groups the mention arrives as plain text and the bot's display name is not in the callback.
pub fn strip_leading_mentions(text: &str) -> &str {
    let mut rest = text.trim_start();
    while let Some(after) = rest.strip_prefix('@').or_else(|| rest.strip_prefix('＠')) {
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        rest = after[end..].trim_start();
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn group_text_and_mentions() {
        let body = json!({"msgid": "M1", "aibotid": "aib1", "chatid": "GrpA", "chattype": "group",
            "from": {"userid": "ZhangSan"}, "msgtype": "text", "text": {"content": "@RobotA  hi"}});
        let c = parse_callback(cmd::MSG_CALLBACK, &body).unwrap();
        assert_eq!(
            c.chat,
            ChatTarget::Group {
                chatid: "GrpA".into()
            }
        );
        assert_eq!(c.from_userid, "ZhangSan");
        assert_eq!(c.dedupe_key(), "M1");
        let CallbackKind::Message { content, .. } = c.kind else {
            panic!()
        };
        assert_eq!(strip_leading_mentions(&content.text().unwrap()), "hi");
        assert_eq!(strip_leading_mentions("＠机器人 @b yes"), "yes");
        assert_eq!(strip_leading_mentions("@"), "");
        assert_eq!(strip_leading_mentions("mail a@b.c"), "mail a@b.c");
    }

    #[test]
    fn hostile_bodies_are_errors_or_unknown_never_panics() {
        for body in [
            json!(null),
            json!([]),
            json!({"msgid": 5}),
            json!({"msgid": "x"}),
            json!({"msgid": "x", "from": {"userid": "u"}, "chattype": "group"}),
        ] {
            assert!(parse_callback(cmd::MSG_CALLBACK, &body).is_err());
        }
        let odd = json!({"msgid": "x", "from": {"userid": "u"}, "msgtype": "image", "image": 7,
            "quote": "no", "event": 3});
        let c = parse_callback(cmd::MSG_CALLBACK, &odd).unwrap();
        assert!(matches!(
            c.kind,
            CallbackKind::Message {
                content: Content::Unknown { .. },
                quote: None
            }
        ));
        let ev = parse_callback(cmd::EVENT_CALLBACK, &odd).unwrap();
        assert_eq!(
            ev.kind,
            CallbackKind::Event(Event::Other {
                eventtype: String::new()
            })
        );
    }

    #[test]
    fn card_click_nested_or_flat() {
        let nested = json!({"msgid": "E", "from": {"userid": "u"}, "msgtype": "event",
            "event": {"eventtype": "template_card_event", "template_card_event":
                {"card_type": "button_interaction", "event_key": "yes", "task_id": "q1"}}});
        let flat = json!({"msgid": "E", "from": {"userid": "u"}, "msgtype": "event",
            "event": {"eventtype": "template_card_event", "event_key": "yes", "task_id": "q1",
                "card_type": "button_interaction"}});
        for b in [nested, flat] {
            let c = parse_callback(cmd::EVENT_CALLBACK, &b).unwrap();
            assert_eq!(
                c.kind,
                CallbackKind::Event(Event::CardClick {
                    card_type: "button_interaction".into(),
                    event_key: "yes".into(),
                    task_id: "q1".into()
                })
            );
        }
    }
}
