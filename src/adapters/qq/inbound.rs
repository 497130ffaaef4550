//! One gateway dispatch as the pipeline's input: a message to journal, or something dropped
//! with a reason (counted; nothing the platform delivered vanishes without a trace). Pure: no IO.
//!
//! A one-to-one chat's id is the user's `user_openid` (the core takes the owner's id as their
//! direct chat), a group's is `g:<group_openid>` (openids are hex, never `g:`), so the sender
//! knows where a reply goes from the chat alone. The sender id is the platform's per-bot id as given:
//! `user_openid` in one-to-one chats, `member_openid` in groups. Whether a member id equals the
//! same person's `user_openid` is unconfirmed (spec §3.1), so the owner is recognised in a group
//! only when QQ gives the very same id; otherwise the group is strangers to the policy.

use scv_qq::event::Attachment;
use scv_qq::{Event, Message, Scene};
use serde::{Deserialize, Serialize};

use crate::conversation::{Inbound, ReplyContext};
use crate::ids::{AccountKey, ChatId, PlatformMsgId, SenderId};

/// What to do with one dispatch.
#[derive(Debug)]
pub(super) enum Taken {
    /// A message for the pipeline (journaled before the cursor moves).
    Message(Inbound),
    /// A button click (acknowledged at once; only the owner's counts, [`super::buttons`]).
    Click(scv_qq::event::Interaction),
    /// Not passed on, for this reason (a stable snake_case code for `messages_dropped`).
    Dropped(&'static str),
}

/// The trigger a reply to a message carries, stored with the message (field names are
/// journaled: add, never rename).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ReplyRef {
    /// The message id (`msg_id` of replies); empty: none.
    #[serde(default)]
    pub m: String,
    /// When it arrived here, Unix milliseconds: its reply window is counted from then. The
    /// platform's own timestamp is not compared with this machine's clock (they may be apart);
    /// a message that arrives late (a Resume replay) may get a refusal instead, which the
    /// sender takes as a closed window, as it is.
    #[serde(default)]
    pub at: u64,
    /// Whether it was sent in a group (5 min window instead of 60).
    #[serde(default)]
    pub g: bool,
}

impl ReplyRef {
    /// Reads a stored reply context; an empty or foreign one reads as nothing.
    pub fn parse(reply: &ReplyContext) -> ReplyRef {
        serde_json::from_str(&reply.0).unwrap_or_default()
    }

    fn context(&self) -> ReplyContext {
        ReplyContext(serde_json::to_string(self).unwrap_or_default())
    }
}

/// The chat id of a scene.
pub(super) fn chat_of(scene: &Scene) -> ChatId {
    match scene {
        Scene::C2c { user_openid } => ChatId::new(user_openid.as_str()),
        Scene::Group { group_openid, .. } => ChatId::new(format!("g:{group_openid}")),
    }
}

/// The sender's per-bot id in its scene.
pub(super) fn sender_of(scene: &Scene) -> &str {
    match scene {
        Scene::C2c { user_openid } => user_openid,
        Scene::Group { member_openid, .. } => member_openid,
    }
}

/// Reads one parsed dispatch for `account`, received at `now_ms`.
pub(super) fn take(account: &AccountKey, event: &Event, now_ms: u64) -> Taken {
    match event {
        Event::Message(m) => message(account, m, now_ms),
        Event::Interaction(i) => Taken::Click(i.clone()),
        // Friend and group membership events grant one reply each, which nothing here needs.
        Event::Other { .. } => Taken::Dropped("event"),
    }
}

fn message(account: &AccountKey, m: &Message, now_ms: u64) -> Taken {
    if m.from_bot {
        return Taken::Dropped("bot_sender");
    }
    if !m.wanted() {
        return Taken::Dropped("not_addressed");
    }
    let text = match (m.content.trim(), m.attachments.first()) {
        ("", Some(a)) => describe(a).to_string(),
        ("", None) => return Taken::Dropped("unsupported"),
        (t, _) => t.to_string(),
    };
    let sent_ms = m
        .timestamp
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .and_then(|t| u64::try_from(t.timestamp_millis()).ok());
    Taken::Message(Inbound {
        account: account.clone(),
        chat: chat_of(&m.scene),
        sender: SenderId::new(sender_of(&m.scene)),
        msg_id: PlatformMsgId::new(m.dedupe_key()),
        text,
        at_unix_ms: sent_ms.unwrap_or(0),
        reply: ReplyRef {
            m: m.id.clone(),
            at: now_ms,
            g: matches!(m.scene, Scene::Group { .. }),
        }
        .context(),
        media: super::media::refs(&m.attachments),
    })
}

/// What an attachment-only message says to the agent.
fn describe(a: &Attachment) -> &'static str {
    match a.content_type.as_str() {
        t if t.starts_with("image/") => "[image]",
        t if t.starts_with("video/") => "[video]",
        "voice" => "[voice]",
        _ => "[file]",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ids::Channel;

    fn parse(t: &str, d: serde_json::Value) -> Event {
        scv_qq::event::parse(t, &d).expect("parses")
    }

    #[test]
    fn one_to_one_and_group_messages_keep_scene_ids_and_trigger() {
        let key = AccountKey::new(Channel::Qq, "b");
        let c2c = parse(
            "C2C_MESSAGE_CREATE",
            json!({"id": "M1", "content": "hi", "timestamp": "2026-01-01T00:00:00+08:00",
                   "author": {"user_openid": "U1"}}),
        );
        let Taken::Message(i) = take(&key, &c2c, 7) else {
            panic!("a message")
        };
        assert_eq!(
            (i.chat.as_str(), i.sender.as_str(), i.msg_id.as_str()),
            ("U1", "U1", "M1")
        );
        let r = ReplyRef::parse(&i.reply);
        assert_eq!((r.m.as_str(), r.g), ("M1", false));
        assert_eq!(r.at, 7, "the window counts from the arrival");
        assert_eq!(i.at_unix_ms, 1_767_196_800_000, "the platform's time");
        let group = parse(
            "GROUP_AT_MESSAGE_CREATE",
            json!({"id": "M2", "content": " hello", "group_openid": "G1",
                   "author": {"member_openid": "MEM1"}}),
        );
        let Taken::Message(i) = take(&key, &group, 5) else {
            panic!("a message")
        };
        assert_eq!(
            (i.chat.as_str(), i.sender.as_str(), i.text.as_str()),
            ("g:G1", "MEM1", "hello")
        );
        assert_eq!(i.at_unix_ms, 0, "no timestamp");
    }

    #[test]
    fn unaddressed_bots_and_empty_messages_are_dropped_with_a_reason() {
        let key = AccountKey::new(Channel::Qq, "b");
        let all = parse(
            "GROUP_MESSAGE_CREATE",
            json!({"id": "M3", "content": "chat", "group_openid": "G1",
                   "author": {"member_openid": "MEM1"}, "mentions": [{"is_you": false}]}),
        );
        assert!(matches!(
            take(&key, &all, 0),
            Taken::Dropped("not_addressed")
        ));
        let bot = parse(
            "GROUP_AT_MESSAGE_CREATE",
            json!({"id": "M4", "content": "x", "group_openid": "G1",
                   "author": {"member_openid": "B", "bot": true}}),
        );
        assert!(matches!(take(&key, &bot, 0), Taken::Dropped("bot_sender")));
        let empty = parse(
            "C2C_MESSAGE_CREATE",
            json!({"id": "M5", "content": "  ", "author": {"user_openid": "U1"}}),
        );
        assert!(matches!(
            take(&key, &empty, 0),
            Taken::Dropped("unsupported")
        ));
        assert!(
            ReplyRef::parse(&ReplyContext("not json".into()))
                .m
                .is_empty()
        );
    }
}
