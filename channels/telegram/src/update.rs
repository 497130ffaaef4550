//! Inbound updates (spec §1.2, §2): one batch per `getUpdates`, parsed one update at a time so a
//! new or broken kind never fails the batch, and the offset that confirms a batch, which the
//! caller persists only after journaling it.

use serde_json::Value;

use crate::types::{CallbackQuery, GenerationStopped, Message};

/// The update kinds the bridge asks for (spec §1.2: always send the list, because an omitted
/// list keeps whatever an earlier poller set).
pub const ALLOWED_UPDATES: [&str; 5] = [
    "message",
    "edited_message",
    "callback_query",
    "my_chat_member",
    "stopped_message_generation",
];

/// The cursor of the inbound queue: the first `update_id` wanted. Made by the caller from its
/// stored value (`Offset::new`), or by [`Batch::next_offset`]. Never negative: a negative offset
/// makes the server forget every pending update but the last (spec §1.2's trap), so this type
/// cannot hold one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Offset(i64);

impl Offset {
    /// No update confirmed yet: the server returns everything pending.
    pub const START: Offset = Offset(0);

    /// The stored offset; a negative or zero value means [`Offset::START`].
    pub fn new(value: i64) -> Offset {
        Offset(value.max(0))
    }

    /// The value to store (and to send; 0 is sent as "no offset").
    pub fn get(self) -> i64 {
        self.0
    }
}

/// One update. The raw JSON is kept so the journal can store exactly what arrived; `kind` is
/// what this crate understood of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The update's id, the cursor's unit and the journal's dedupe key.
    pub update_id: i64,
    /// What it carries.
    pub kind: UpdateKind,
    /// The update as received.
    pub raw: Value,
}

/// What an update carries. New kinds appear over time; they are `Other`, never an error.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateKind {
    /// A new message.
    Message(Message),
    /// A new version of an earlier message (same chat and `message_id`); not a new prompt.
    EditedMessage(Message),
    /// A button press.
    CallbackQuery(CallbackQuery),
    /// The bot's membership in a chat changed (added, removed, blocked).
    MyChatMember(Value),
    /// The user pressed stop on a draft.
    GenerationStopped(GenerationStopped),
    /// A kind this crate does not read, by its key.
    Other(String),
    /// A known kind whose body does not decode (fields missing or of the wrong type); the
    /// detail names the kind and the field, never the content.
    Unreadable(String),
}

impl Update {
    /// The journal's key for this update: redelivery (a crash before confirming, a webhook
    /// retry) brings the same id.
    pub fn dedupe_key(&self) -> String {
        format!("tg:u:{}", self.update_id)
    }

    /// The message of a new message or an edit.
    pub fn message(&self) -> Option<&Message> {
        match &self.kind {
            UpdateKind::Message(m) | UpdateKind::EditedMessage(m) => Some(m),
            _ => None,
        }
    }

    /// Reads one element of `result`; `None` when it has no integer `update_id` (then nothing
    /// can confirm it, and it is counted as skipped).
    pub(crate) fn parse(raw: Value) -> Option<Update> {
        let update_id = raw.get("update_id")?.as_i64()?;
        let kind = kind_of(&raw);
        Some(Update {
            update_id,
            kind,
            raw,
        })
    }
}

fn kind_of(raw: &Value) -> UpdateKind {
    fn read<T: serde::de::DeserializeOwned>(
        key: &str,
        v: &Value,
        wrap: fn(T) -> UpdateKind,
    ) -> UpdateKind {
        match T::deserialize(v) {
            Ok(t) => wrap(t),
            Err(e) => UpdateKind::Unreadable(format!("{key}: {}", shape_of(&e))),
        }
    }
    let Some(obj) = raw.as_object() else {
        return UpdateKind::Unreadable("not an object".into());
    };
    for (key, v) in obj {
        match key.as_str() {
            "update_id" => continue,
            "message" => return read(key, v, UpdateKind::Message),
            "edited_message" => return read(key, v, UpdateKind::EditedMessage),
            "callback_query" => return read(key, v, UpdateKind::CallbackQuery),
            "stopped_message_generation" => return read(key, v, UpdateKind::GenerationStopped),
            "my_chat_member" => return UpdateKind::MyChatMember(v.clone()),
            other => return UpdateKind::Other(other.to_owned()),
        }
    }
    UpdateKind::Other(String::new())
}

/// A decode error without the input's text: serde_json quotes offending string values
/// ("invalid type: string \"...\""), which may be message text.
pub(crate) fn shape_of(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.find('"') {
        Some(i) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// One `getUpdates` answer. Made by [`crate::Client::get_updates`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    /// The updates, in the server's order.
    pub updates: Vec<Update>,
    /// Elements of `result` without an `update_id`, left out (and logged by count).
    pub skipped: usize,
    /// The offset that confirms every update of this batch; `None` for an empty batch.
    next: Option<Offset>,
}

impl Batch {
    pub(crate) fn new(updates: Vec<Update>, skipped: usize) -> Batch {
        let next = updates
            .iter()
            .map(|u| u.update_id)
            .max()
            .map(|id| Offset::new(id.saturating_add(1)));
        Batch {
            updates,
            skipped,
            next,
        }
    }

    /// The offset to persist once every update of this batch is journaled, and to poll with
    /// next: the highest id + 1, never below `current` (an id is random after a week of
    /// silence, spec §1.2, so never compute gaps; only move forward from what was seen).
    pub fn next_offset(&self, current: Offset) -> Offset {
        match self.next {
            Some(next) if next > current => next,
            _ => current,
        }
    }

    /// Whether the batch is empty (a long poll that ended without updates).
    pub fn is_empty(&self) -> bool {
        self.updates.is_empty() && self.skipped == 0
    }
}
