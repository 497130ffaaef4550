//! Parsing of pushed events: the v2 envelope, `im.message.receive_v1` and `card.action.trigger`.
//!
//! The same parser serves the long connection (`type=event` and `type=card` frames) and the
//! HTTP callback mode, since both carry the same envelope.

use serde_json::{Map, Value};

use crate::card::{Answer, VALUE_ANSWER, VALUE_QUESTION};

/// `header.event_type` of a received IM message.
pub const MESSAGE_RECEIVE: &str = "im.message.receive_v1";
/// `header.event_type` of a card button click.
pub const CARD_ACTION: &str = "card.action.trigger";

/// A payload that is not an event we can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Not JSON, or not an object.
    #[error("event payload is not a JSON object")]
    NotJson,
    /// A required field is missing or has the wrong type.
    #[error("event lacks {0}")]
    Missing(&'static str),
}

/// The v2 envelope header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventHeader {
    /// Unique per push (a re-push gets a new one); a dedupe key.
    pub event_id: String,
    /// e.g. [`MESSAGE_RECEIVE`], [`CARD_ACTION`].
    pub event_type: String,
    /// Event time, ms since the epoch.
    pub create_time_ms: Option<i64>,
    /// Verification token (HTTP mode checks it).
    pub token: Option<String>,
    /// `cli_…` app id; drop the event if it is not ours.
    pub app_id: Option<String>,
    /// Tenant.
    pub tenant_key: Option<String>,
}

/// A parsed event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Envelope header.
    pub header: EventHeader,
    /// Typed body.
    pub body: EventBody,
}

/// The event bodies this crate understands.
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    /// `im.message.receive_v1`.
    Message(MessageEvent),
    /// `card.action.trigger`.
    CardAction(CardAction),
    /// Anything else: the raw `event` object.
    Other(Value),
}

/// Kind of chat a message arrived in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatType {
    /// One-to-one with the bot.
    P2p,
    /// A group chat.
    Group,
    /// A topic group.
    TopicGroup,
    /// Anything newer.
    Other(String),
}

impl ChatType {
    fn parse(s: &str) -> Self {
        match s {
            "p2p" => ChatType::P2p,
            "group" => ChatType::Group,
            "topic_group" => ChatType::TopicGroup,
            o => ChatType::Other(o.to_string()),
        }
    }

    /// True for group and topic-group chats.
    pub fn is_group(&self) -> bool {
        matches!(self, ChatType::Group | ChatType::TopicGroup)
    }
}

/// One `mentions[]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// Placeholder in the text, e.g. `@_user_1`.
    pub key: String,
    /// The mentioned user's (or bot's) open_id.
    pub open_id: Option<String>,
    /// Display name.
    pub name: String,
}

/// An `im.message.receive_v1` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageEvent {
    /// The sender's open_id (per app).
    pub sender_open_id: String,
    /// The sender's union_id.
    pub sender_union_id: Option<String>,
    /// `user` for people; skip anything else.
    pub sender_type: String,
    /// `om_…` id; a dedupe key that survives re-pushes.
    pub message_id: String,
    /// Root of the reply chain.
    pub root_id: Option<String>,
    /// Direct parent.
    pub parent_id: Option<String>,
    /// Topic thread.
    pub thread_id: Option<String>,
    /// `oc_…` chat id (also for p2p).
    pub chat_id: String,
    /// p2p, group, topic group.
    pub chat_type: ChatType,
    /// `text`, `post`, `image`, ...
    pub message_type: String,
    /// The raw `content` JSON string.
    pub content: String,
    /// Mentions in the message.
    pub mentions: Vec<Mention>,
    /// Message time, ms since the epoch.
    pub create_time_ms: Option<i64>,
}

impl MessageEvent {
    /// True when a person sent it (not an app or a bot).
    pub fn is_from_user(&self) -> bool {
        self.sender_type == "user"
    }

    /// True when the message @-mentions the bot.
    pub fn mentions_bot(&self, bot_open_id: &str) -> bool {
        self.mentions
            .iter()
            .any(|m| m.open_id.as_deref() == Some(bot_open_id))
    }

    /// The text of a `text` or `post` message with mention placeholders resolved: the bot's own
    /// mention is removed, others become `@Name`. `None` for other types or bad content.
    pub fn text(&self, bot_open_id: Option<&str>) -> Option<String> {
        let content: Value = serde_json::from_str(&self.content).ok()?;
        let raw = match self.message_type.as_str() {
            "text" => content.get("text")?.as_str()?.to_string(),
            "post" => flatten_post(&content)?,
            _ => return None,
        };
        let mut text = raw;
        // Longest keys first so `@_user_1` does not eat the prefix of `@_user_10`.
        let mut mentions: Vec<&Mention> = self.mentions.iter().collect();
        mentions.sort_by_key(|m| std::cmp::Reverse(m.key.len()));
        for m in mentions {
            if m.key.is_empty() {
                continue;
            }
            let is_bot = bot_open_id.is_some() && m.open_id.as_deref() == bot_open_id;
            let with = if is_bot {
                String::new()
            } else {
                format!("@{}", m.name)
            };
            text = text.replace(&m.key, &with);
        }
        Some(text.trim().to_string())
    }
}

/// Flattens the three accepted post shapes into plain text, one line per paragraph.
fn flatten_post(content: &Value) -> Option<String> {
    let body = if content.get("content").is_some() {
        content
    } else {
        let inner = content.get("post").unwrap_or(content);
        inner
            .get("zh_cn")
            .or_else(|| inner.get("en_us"))
            .or_else(|| inner.as_object()?.values().next())?
    };
    let mut lines = Vec::new();
    if let Some(title) = body
        .get("title")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        lines.push(title.to_string());
    }
    for para in body.get("content")?.as_array()? {
        let mut line = String::new();
        for el in para.as_array().into_iter().flatten() {
            match el.get("tag").and_then(Value::as_str) {
                Some("text" | "a" | "md" | "code_block") => {
                    line.push_str(el.get("text").and_then(Value::as_str).unwrap_or_default())
                }
                Some("at") => {
                    let who = el
                        .get("user_name")
                        .or_else(|| el.get("user_id"))
                        .and_then(Value::as_str);
                    line.push_str(&format!("@{}", who.unwrap_or_default()));
                }
                _ => {}
            }
        }
        lines.push(line);
    }
    Some(lines.join("\n"))
}

/// A `card.action.trigger` body: who clicked what.
#[derive(Debug, Clone, PartialEq)]
pub struct CardAction {
    /// Who clicked: compare with the owner's open_id.
    pub operator_open_id: String,
    /// `c-…` callback token: for delayed update, and a dedupe key.
    pub token: Option<String>,
    /// `button`, `select_static`, ...
    pub tag: Option<String>,
    /// The button's value object (parsed when sent as a string).
    pub value: Value,
    /// The card message.
    pub open_message_id: Option<String>,
    /// The chat of the card.
    pub open_chat_id: Option<String>,
}

impl CardAction {
    /// The question id and answer of a yes/no card button.
    pub fn yes_no(&self) -> Option<(&str, Answer)> {
        let q = self.value.get(VALUE_QUESTION)?.as_str()?;
        let a = Answer::parse(self.value.get(VALUE_ANSWER)?.as_str()?)?;
        Some((q, a))
    }
}

/// Reads only `header.event_type` (cheap, for routing before a full parse).
pub fn peek_event_type(payload: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(payload).ok()?;
    if let Some(t) = v.pointer("/header/event_type").and_then(Value::as_str) {
        return Some(t.to_string());
    }
    // Legacy card callbacks carry no header but an `action`.
    v.get("action").map(|_| CARD_ACTION.to_string())
}

/// Parses an event payload (v2 envelope, or a legacy card callback).
pub fn parse_event(payload: &[u8]) -> Result<Event, EventError> {
    let v: Value = serde_json::from_slice(payload).map_err(|_| EventError::NotJson)?;
    let obj = v.as_object().ok_or(EventError::NotJson)?;
    let Some(h) = obj.get("header").and_then(Value::as_object) else {
        return parse_legacy_card(obj);
    };
    let header = EventHeader {
        event_id: str_of(h, "event_id").ok_or(EventError::Missing("header.event_id"))?,
        event_type: str_of(h, "event_type").ok_or(EventError::Missing("header.event_type"))?,
        create_time_ms: h.get("create_time").and_then(int_of),
        token: str_of(h, "token"),
        app_id: str_of(h, "app_id"),
        tenant_key: str_of(h, "tenant_key"),
    };
    let event = obj.get("event").cloned().unwrap_or(Value::Null);
    let body = match header.event_type.as_str() {
        MESSAGE_RECEIVE => EventBody::Message(parse_message(&event)?),
        CARD_ACTION => EventBody::CardAction(parse_card_action(&event)?),
        _ => EventBody::Other(event),
    };
    Ok(Event { header, body })
}

fn parse_message(event: &Value) -> Result<MessageEvent, EventError> {
    let sender = event
        .get("sender")
        .and_then(Value::as_object)
        .ok_or(EventError::Missing("event.sender"))?;
    let sid = sender.get("sender_id").and_then(Value::as_object);
    let msg = event
        .get("message")
        .and_then(Value::as_object)
        .ok_or(EventError::Missing("event.message"))?;
    let mentions = msg
        .get("mentions")
        .and_then(Value::as_array)
        .map(|arr| {
            arr.iter()
                .filter_map(Value::as_object)
                .map(|m| Mention {
                    key: str_of(m, "key").unwrap_or_default(),
                    open_id: m
                        .get("id")
                        .and_then(|id| id.get("open_id"))
                        .and_then(Value::as_str)
                        .map(String::from),
                    name: str_of(m, "name").unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(MessageEvent {
        sender_open_id: sid
            .and_then(|s| str_of(s, "open_id"))
            .ok_or(EventError::Missing("event.sender.sender_id.open_id"))?,
        sender_union_id: sid.and_then(|s| str_of(s, "union_id")),
        sender_type: str_of(sender, "sender_type").unwrap_or_default(),
        message_id: str_of(msg, "message_id")
            .ok_or(EventError::Missing("event.message.message_id"))?,
        root_id: str_of(msg, "root_id").filter(|s| !s.is_empty()),
        parent_id: str_of(msg, "parent_id").filter(|s| !s.is_empty()),
        thread_id: str_of(msg, "thread_id").filter(|s| !s.is_empty()),
        chat_id: str_of(msg, "chat_id").ok_or(EventError::Missing("event.message.chat_id"))?,
        chat_type: ChatType::parse(&str_of(msg, "chat_type").unwrap_or_default()),
        message_type: str_of(msg, "message_type").unwrap_or_default(),
        content: str_of(msg, "content").unwrap_or_default(),
        mentions,
        create_time_ms: msg.get("create_time").and_then(int_of),
    })
}

fn parse_card_action(event: &Value) -> Result<CardAction, EventError> {
    let op = event
        .get("operator")
        .ok_or(EventError::Missing("event.operator"))?;
    let action = event.get("action");
    let ctx = event.get("context");
    let pick = |k: &str| {
        ctx.and_then(|c| c.get(k))
            .or_else(|| event.get(k))
            .and_then(Value::as_str)
            .map(String::from)
    };
    Ok(CardAction {
        operator_open_id: op
            .get("open_id")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or(EventError::Missing("event.operator.open_id"))?,
        token: event.get("token").and_then(Value::as_str).map(String::from),
        tag: action
            .and_then(|a| a.get("tag"))
            .and_then(Value::as_str)
            .map(String::from),
        value: action_value(action),
        open_message_id: pick("open_message_id"),
        open_chat_id: pick("open_chat_id"),
    })
}

/// The legacy card callback (`{open_id, action, open_message_id, token}`, no header).
fn parse_legacy_card(obj: &Map<String, Value>) -> Result<Event, EventError> {
    let action = obj.get("action").ok_or(EventError::Missing("header"))?;
    let card = CardAction {
        operator_open_id: str_of(obj, "open_id").ok_or(EventError::Missing("open_id"))?,
        token: str_of(obj, "token"),
        tag: action.get("tag").and_then(Value::as_str).map(String::from),
        value: action_value(Some(action)),
        open_message_id: str_of(obj, "open_message_id"),
        open_chat_id: str_of(obj, "open_chat_id"),
    };
    Ok(Event {
        header: EventHeader {
            event_id: card.token.clone().unwrap_or_default(),
            event_type: CARD_ACTION.to_string(),
            ..Default::default()
        },
        body: EventBody::CardAction(card),
    })
}

fn action_value(action: Option<&Value>) -> Value {
    match action.and_then(|a| a.get("value")) {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Some(v) => v.clone(),
        None => Value::Null,
    }
}

fn str_of(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(String::from)
}

/// Accepts `"1700000000000"` and `1700000000000`.
fn int_of(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str()?.trim().parse().ok())
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
