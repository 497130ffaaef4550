//! Where an answer goes, as the pipeline carries it: the chat id names the target a robot send
//! needs (a staff id, a group's `openConversationId`), and the reply context adds the message's
//! reply webhook while it lives (spec §4.1–4.2).
//!
//! Both are journaled with the message: add fields, never rename them.

use scv_dingtalk::Secret;
use scv_dingtalk::message::SessionWebhook;
use serde::{Deserialize, Serialize};

use crate::conversation::ReplyContext;
use crate::ids::ChatId;

/// The target of a chat, read from its [`ChatId`]. Made by [`Target::chat_id`]; the spelling is
/// stored in the journal and the outbox, so it must stay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A direct chat with an org member (`u:<staffId>`): `oToMessages/batchSend`.
    User(String),
    /// A group (`g:<openConversationId>`): `groupMessages/send`.
    Group(String),
    /// A direct chat with someone outside the org (`c:<conversationId>`): no staff id, so only
    /// the message's reply webhook reaches them.
    Webhook(String),
}

impl Target {
    /// Reads a chat id this adapter made, or a bare staff id (the confirm service routes an
    /// owner's question to the owner's user id, the staff id this adapter reports); `None`
    /// for another kind.
    pub fn parse(chat: &ChatId) -> Option<Target> {
        let Some((kind, id)) = chat.as_str().split_once(':') else {
            let staff = chat.as_str();
            return (!staff.is_empty()).then(|| Target::User(staff.to_string()));
        };
        if id.is_empty() {
            return None;
        }
        match kind {
            "u" => Some(Target::User(id.to_string())),
            "g" => Some(Target::Group(id.to_string())),
            "c" => Some(Target::Webhook(id.to_string())),
            _ => None,
        }
    }

    /// The chat id of this target.
    pub fn chat_id(&self) -> ChatId {
        ChatId::new(match self {
            Target::User(s) => format!("u:{s}"),
            Target::Group(g) => format!("g:{g}"),
            Target::Webhook(c) => format!("c:{c}"),
        })
    }
}

/// The reply context of one inbound message.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ReplyRef {
    /// The message's reply webhook (a secret URL; lives about 90 minutes).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub w: String,
    /// When it expires, ms since the epoch.
    #[serde(default)]
    pub e: i64,
    /// The message's `msgId`.
    #[serde(default)]
    pub m: String,
    /// The message's `conversationId` (the thinking reaction names it); empty in contexts
    /// journaled before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub c: String,
}

impl std::fmt::Debug for ReplyRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyRef")
            .field("webhook", &!self.w.is_empty())
            .field("expires_ms", &self.e)
            .finish_non_exhaustive()
    }
}

impl ReplyRef {
    /// Reads a stored reply context; an empty or foreign one reads as nothing.
    pub fn parse(reply: &ReplyContext) -> ReplyRef {
        serde_json::from_str(&reply.0).unwrap_or_default()
    }

    /// The context to journal.
    pub fn context(&self) -> ReplyContext {
        ReplyContext(serde_json::to_string(self).unwrap_or_default())
    }

    /// The reply webhook, when the message carried one.
    pub fn webhook(&self) -> Option<SessionWebhook> {
        (!self.w.is_empty()).then(|| SessionWebhook {
            url: Secret::new(self.w.clone()),
            expires_at_ms: self.e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_ids_round_trip_and_foreign_ones_read_as_nothing() {
        for t in [
            Target::User("manager4521".into()),
            Target::Group("cidGroup==".into()),
            Target::Webhook("cidX==".into()),
        ] {
            assert_eq!(Target::parse(&t.chat_id()), Some(t));
        }
        assert_eq!(
            Target::parse(&ChatId::new("manager4521")),
            Some(Target::User("manager4521".into())),
            "the owner's staff id, as a question is routed"
        );
        assert_eq!(Target::parse(&ChatId::new("")), None);
        assert_eq!(Target::parse(&ChatId::new("x:12345")), None);
        assert_eq!(Target::parse(&ChatId::new("u:")), None);
        let r = ReplyRef {
            w: "http://h/robot/sendBySession?session=s".into(),
            e: 5,
            m: "msg1".into(),
            c: "cid1==".into(),
        };
        assert_eq!(ReplyRef::parse(&r.context()), r);
        // A context journaled before the conversation id was kept still reads.
        let old = ReplyRef::parse(&ReplyContext("{\"w\":\"\",\"e\":5,\"m\":\"msg1\"}".into()));
        assert_eq!((old.m.as_str(), old.c.as_str()), ("msg1", ""));
        assert!(
            !format!("{r:?}").contains("session"),
            "the URL stays out of logs"
        );
        assert_eq!(
            ReplyRef::parse(&ReplyContext("{\"c\":1}".into())),
            ReplyRef::default()
        );
    }
}
