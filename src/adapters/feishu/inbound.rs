//! From a pushed `im.message.receive_v1` to the pipeline's [`Inbound`], or a reason to skip it.
//!
//! Pure functions: which messages the bot answers (p2p, or a group message that @-mentions it,
//! never its own or another app's) and the reply context that routes the answer back.

use serde::{Deserialize, Serialize};

use scv_feishu::event::{ChatType, MessageEvent};

use crate::config::AccountKey;
use crate::conversation::{ChatId, Inbound, PlatformMsgId, ReplyContext, SenderId};

/// Why a message is not handed to the pipeline (a stable name for debug logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Sent by the bot itself or by another app.
    NotAPerson,
    /// A group message that does not @-mention the bot.
    GroupWithoutMention,
    /// A chat type this adapter does not serve.
    UnknownChatType,
}

impl Skip {
    /// A stable name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::NotAPerson => "not_a_person",
            Skip::GroupWithoutMention => "group_without_mention",
            Skip::UnknownChatType => "unknown_chat_type",
        }
    }
}

/// What the adapter stores with a message to answer it: the `om_…` id and whether it is a group.
///
/// Serialized into [`ReplyContext`]; short keys because it is stored with every message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyRef {
    /// The triggering message (replies in groups go in its thread).
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// True for group and topic-group chats.
    #[serde(rename = "g", default)]
    pub group: bool,
}

impl ReplyRef {
    /// Reads a stored context; an empty or foreign one means "send to the chat".
    pub fn parse(ctx: &ReplyContext) -> ReplyRef {
        serde_json::from_str(&ctx.0).unwrap_or_default()
    }

    /// The stored form.
    pub fn to_context(&self) -> ReplyContext {
        ReplyContext(serde_json::to_string(self).unwrap_or_default())
    }
}

/// Maps a message event to an [`Inbound`], or says why the bot ignores it.
pub fn to_inbound(
    account: &AccountKey,
    m: &MessageEvent,
    bot_open_id: &str,
    now_ms: u64,
) -> Result<Inbound, Skip> {
    if !m.is_from_user() || m.sender_open_id == bot_open_id {
        return Err(Skip::NotAPerson);
    }
    let group = match &m.chat_type {
        ChatType::P2p => false,
        ChatType::Group | ChatType::TopicGroup => true,
        ChatType::Other(_) => return Err(Skip::UnknownChatType),
    };
    if group && !m.mentions_bot(bot_open_id) {
        return Err(Skip::GroupWithoutMention);
    }
    let text = m
        .text(Some(bot_open_id))
        .unwrap_or_else(|| format!("[{}]", m.message_type));
    let at_unix_ms = m
        .create_time_ms
        .and_then(|t| u64::try_from(t).ok())
        .unwrap_or(now_ms);
    Ok(Inbound {
        account: account.clone(),
        chat: ChatId::new(&m.chat_id),
        sender: SenderId::new(&m.sender_open_id),
        msg_id: PlatformMsgId::new(&m.message_id),
        text,
        at_unix_ms,
        reply: ReplyRef {
            message_id: Some(m.message_id.clone()),
            group,
        }
        .to_context(),
        media: super::media::media_refs(m),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Channel;
    use scv_feishu::event::Mention;

    fn msg(chat_type: ChatType, sender: &str, mentions: Vec<Mention>, text: &str) -> MessageEvent {
        MessageEvent {
            sender_open_id: sender.into(),
            sender_union_id: None,
            sender_type: "user".into(),
            message_id: "om_1".into(),
            root_id: None,
            parent_id: None,
            thread_id: None,
            chat_id: "oc_1".into(),
            chat_type,
            message_type: "text".into(),
            content: serde_json::json!({ "text": text }).to_string(),
            mentions,
            create_time_ms: Some(1_700_000_000_000),
        }
    }

    fn bot_mention() -> Mention {
        Mention {
            key: "@_user_1".into(),
            open_id: Some("ou_bot".into()),
            name: "Bot".into(),
        }
    }

    fn key() -> AccountKey {
        AccountKey::new(Channel::Feishu, "w")
    }

    #[test]
    fn p2p_is_taken_with_its_reply_context() {
        let m = msg(ChatType::P2p, "ou_a", vec![], "hi");
        let i = to_inbound(&key(), &m, "ou_bot", 5).expect("taken");
        assert_eq!(
            (i.chat.as_str(), i.sender.as_str(), i.msg_id.as_str()),
            ("oc_1", "ou_a", "om_1")
        );
        assert_eq!(i.text, "hi");
        assert_eq!(i.at_unix_ms, 1_700_000_000_000);
        let r = ReplyRef::parse(&i.reply);
        assert_eq!(r.message_id.as_deref(), Some("om_1"));
        assert!(!r.group);
    }

    #[test]
    fn groups_need_a_mention_which_is_stripped() {
        let m = msg(ChatType::Group, "ou_a", vec![], "hi all");
        assert_eq!(
            to_inbound(&key(), &m, "ou_bot", 0),
            Err(Skip::GroupWithoutMention)
        );
        let m = msg(
            ChatType::Group,
            "ou_a",
            vec![bot_mention()],
            "@_user_1 status?",
        );
        let i = to_inbound(&key(), &m, "ou_bot", 0).expect("taken");
        assert_eq!(i.text, "status?");
        assert!(ReplyRef::parse(&i.reply).group);
    }

    #[test]
    fn own_and_app_messages_are_skipped() {
        let m = msg(ChatType::P2p, "ou_bot", vec![], "echo");
        assert_eq!(to_inbound(&key(), &m, "ou_bot", 0), Err(Skip::NotAPerson));
        let mut m = msg(ChatType::P2p, "ou_x", vec![], "from an app");
        m.sender_type = "app".into();
        assert_eq!(to_inbound(&key(), &m, "ou_bot", 0), Err(Skip::NotAPerson));
        let m = msg(ChatType::Other("x".into()), "ou_a", vec![], "?");
        assert_eq!(
            to_inbound(&key(), &m, "ou_bot", 0),
            Err(Skip::UnknownChatType)
        );
    }

    #[test]
    fn non_text_becomes_a_bracketed_description() {
        let mut m = msg(ChatType::P2p, "ou_a", vec![], "");
        m.message_type = "image".into();
        m.content = r#"{"image_key":"img_1"}"#.into();
        assert_eq!(
            to_inbound(&key(), &m, "ou_bot", 7).expect("taken").text,
            "[image]"
        );
    }

    #[test]
    fn reply_context_round_trips_and_tolerates_garbage() {
        let r = ReplyRef {
            message_id: Some("om_9".into()),
            group: true,
        };
        assert_eq!(ReplyRef::parse(&r.to_context()), r);
        assert_eq!(
            ReplyRef::parse(&ReplyContext("not json".into())),
            ReplyRef::default()
        );
        assert_eq!(
            ReplyRef::parse(&ReplyContext::default()),
            ReplyRef::default()
        );
    }
}
