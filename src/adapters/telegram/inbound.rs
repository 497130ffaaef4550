//! One `getUpdates` batch as the pipeline's input: each update is a message to journal, a
//! button press, a pairing attempt, or something dropped with a reason (counted; nothing the
//! platform delivered vanishes without a trace). Pure: no IO.

use scv_telegram::{BotInfo, CallbackQuery, MediaKind, Message, Update, UpdateKind};
use serde::{Deserialize, Serialize};

use crate::conversation::{Inbound, MediaRef, ReplyContext};
use crate::ids::{AccountKey, ChatId, PlatformMsgId, SenderId};

/// What to do with one update.
#[derive(Debug)]
pub(super) enum Taken {
    /// A message for the pipeline (journaled before the offset moves).
    Message(Inbound),
    /// A button press (answered at once, never journaled).
    Press(Box<CallbackQuery>),
    /// The user pressed stop on a streamed draft: the chat's `/stop`, journaled as such.
    Stop(Inbound),
    /// Not passed on, for this reason (a stable snake_case code for `messages_dropped`).
    Dropped(&'static str),
}

/// Where an answer goes, stored with the message (field names are journaled: add, never
/// rename).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ReplyRef {
    /// The chat id.
    pub c: i64,
    /// The message answered (0: none, a proactive message).
    #[serde(default)]
    pub m: i64,
    /// Whether the chat is a group (answers there quote the message they answer).
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

/// Where one media item is fetched from (journaled with the message: add, never rename).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Locator {
    /// `file_id`, the `getFile` handle (this bot's own).
    pub f: String,
}

/// Reads one update of the bot `bot` for `account`.
pub(super) fn take(account: &AccountKey, bot: &BotInfo, update: &Update) -> Taken {
    match &update.kind {
        UpdateKind::Message(m) => message(account, bot, m),
        // A new version of a message already handled is not a new prompt (spec §2.2).
        UpdateKind::EditedMessage(_) => Taken::Dropped("edited"),
        UpdateKind::CallbackQuery(q) => Taken::Press(Box::new(q.clone())),
        UpdateKind::GenerationStopped(g) if g.chat.is_private() => {
            // In a private chat the chat's id is the user's: the stop is theirs.
            let id = g.chat.id;
            Taken::Stop(Inbound {
                account: account.clone(),
                chat: ChatId::new(id.to_string()),
                sender: SenderId::new(id.to_string()),
                msg_id: PlatformMsgId::new(format!("tg:u:{}", update.update_id)),
                text: "/stop".into(),
                at_unix_ms: 0,
                reply: ReplyRef {
                    c: id,
                    m: 0,
                    g: false,
                }
                .context(),
                media: Vec::new(),
            })
        }
        UpdateKind::GenerationStopped(_) => Taken::Dropped("group_stop"),
        UpdateKind::MyChatMember(_) => Taken::Dropped("membership"),
        UpdateKind::Other(_) => Taken::Dropped("unsupported"),
        UpdateKind::Unreadable(_) => Taken::Dropped("undecodable"),
    }
}

fn message(account: &AccountKey, bot: &BotInfo, m: &Message) -> Taken {
    let Some(from) = &m.from else {
        return Taken::Dropped("no_sender");
    };
    if from.is_bot {
        // Another bot, or an anonymous group admin (`GroupAnonymousBot`): no person's stable
        // id to match the owner on.
        return Taken::Dropped("bot_sender");
    }
    if !m.addresses(bot) {
        return Taken::Dropped("not_addressed");
    }
    let group = !m.chat.is_private();
    let media = media_refs(m);
    let text = match (text_of(bot, m), media.first()) {
        (Some(t), _) => t,
        (None, Some(r)) => describe(r.kind).to_string(),
        (None, None) => return Taken::Dropped("unsupported"),
    };
    Taken::Message(Inbound {
        account: account.clone(),
        chat: ChatId::new(m.chat.id.to_string()),
        sender: SenderId::new(from.id.to_string()),
        msg_id: PlatformMsgId::new(m.dedupe_key()),
        text,
        at_unix_ms: u64::try_from(m.date).unwrap_or(0).saturating_mul(1000),
        reply: ReplyRef {
            c: m.chat.id,
            m: m.message_id,
            g: group,
        }
        .context(),
        media,
    })
}

/// The text the pipeline reads: a command for this bot as `/cmd args` (its `@bot` dropped, so
/// `/new@bot` is `/new`), the deep link's `/start CODE` as the bare code (pairing), else the
/// text or caption with the bot's @mention taken out.
fn text_of(bot: &BotInfo, m: &Message) -> Option<String> {
    if let Some((name, rest)) = m.command(&bot.username) {
        if name == "start" && !rest.is_empty() {
            return Some(rest);
        }
        let line = format!("/{name} {rest}");
        return Some(line.trim_end().to_string());
    }
    let body = m.body()?;
    let mention = format!("@{}", bot.username);
    let text = if bot.username.is_empty() {
        body
    } else {
        replace_ignoring_case(&body, &mention)
    };
    let text = text.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// `text` without any ASCII-case-insensitive copy of `needle` (usernames are ASCII).
fn replace_ignoring_case(text: &str, needle: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let needle = needle.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(at) = lower[from..].find(&needle) {
        let start = from + at;
        out.push_str(&text[from..start]);
        from = start + needle.len();
    }
    out.push_str(&text[from..]);
    out
}

fn media_refs(m: &Message) -> Vec<MediaRef> {
    let Some(item) = m.media() else {
        return Vec::new();
    };
    let kind = match item.kind {
        MediaKind::Photo => crate::agent::MediaKind::Image,
        MediaKind::Voice | MediaKind::Audio => crate::agent::MediaKind::Audio,
        MediaKind::Video | MediaKind::VideoNote | MediaKind::Animation => {
            crate::agent::MediaKind::Video
        }
        MediaKind::Document => crate::agent::MediaKind::File,
    };
    let locator = serde_json::to_value(Locator { f: item.file_id }).unwrap_or_default();
    vec![MediaRef {
        kind,
        name: item.file_name,
        size: item.file_size,
        transcript: None,
        locator,
    }]
}

fn describe(kind: crate::agent::MediaKind) -> &'static str {
    match kind {
        crate::agent::MediaKind::Image => "[image]",
        crate::agent::MediaKind::Audio => "[voice]",
        crate::agent::MediaKind::Video => "[video]",
        crate::agent::MediaKind::File => "[file]",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ids::Channel;

    fn bot() -> BotInfo {
        serde_json::from_value(json!({"id": 5_000_000_001_i64, "is_bot": true, "first_name": "B", "username": "scv_bot"}))
            .expect("bot")
    }

    fn update(raw: serde_json::Value) -> Update {
        let kind = serde_json::from_value::<scv_telegram::Message>(raw["message"].clone())
            .map(UpdateKind::Message)
            .unwrap_or(UpdateKind::Unreadable("message".into()));
        Update {
            update_id: 7,
            kind,
            raw,
        }
    }

    fn msg(chat: serde_json::Value, text: &str, entities: serde_json::Value) -> Update {
        update(json!({"update_id": 7, "message": {
            "message_id": 3, "date": 1, "chat": chat, "text": text, "entities": entities,
            "from": {"id": 42, "is_bot": false, "first_name": "O"}
        }}))
    }

    fn text(t: Taken) -> String {
        match t {
            Taken::Message(i) => i.text,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn groups_pass_only_what_addresses_the_bot() {
        let key = AccountKey::new(Channel::Telegram, "b");
        let group = json!({"id": -100, "type": "supergroup"});
        let plain = take(&key, &bot(), &msg(group.clone(), "hello all", json!([])));
        assert!(matches!(plain, Taken::Dropped("not_addressed")));
        let cmd = msg(
            group.clone(),
            "/new@scv_bot now",
            json!([{"type": "bot_command", "offset": 0, "length": 12}]),
        );
        assert_eq!(text(take(&key, &bot(), &cmd)), "/new now");
        let other = msg(
            group.clone(),
            "/new@other_bot",
            json!([{"type": "bot_command", "offset": 0, "length": 14}]),
        );
        assert!(matches!(
            take(&key, &bot(), &other),
            Taken::Dropped("not_addressed")
        ));
        let mention = msg(
            group,
            "hi @SCV_bot, help",
            json!([{"type": "mention", "offset": 3, "length": 8}]),
        );
        assert_eq!(text(take(&key, &bot(), &mention)), "hi , help");
    }

    #[test]
    fn private_messages_keep_their_ids_and_reply_context() {
        let key = AccountKey::new(Channel::Telegram, "b");
        let Taken::Message(i) = take(
            &key,
            &bot(),
            &msg(json!({"id": 42, "type": "private"}), "hi", json!([])),
        ) else {
            panic!("a message");
        };
        assert_eq!(
            (i.chat.as_str(), i.sender.as_str(), i.msg_id.as_str()),
            ("42", "42", "tg:m:42:3")
        );
        assert_eq!(
            ReplyRef::parse(&i.reply),
            ReplyRef {
                c: 42,
                m: 3,
                g: false
            }
        );
        let start = msg(
            json!({"id": 42, "type": "private"}),
            "/start 123456",
            json!([{"type": "bot_command", "offset": 0, "length": 6}]),
        );
        assert_eq!(
            text(take(&key, &bot(), &start)),
            "123456",
            "the deep link's code"
        );
    }

    #[test]
    fn hostile_updates_are_dropped_with_a_reason() {
        let key = AccountKey::new(Channel::Telegram, "b");
        let empty = update(json!({"update_id": 7, "message": {}}));
        assert!(matches!(
            take(&key, &bot(), &empty),
            Taken::Dropped("undecodable")
        ));
        let nobody = update(
            json!({"update_id": 7, "message": {"message_id": 1, "date": 1, "chat": {"id": -5, "type": "channel"}, "text": "x"}}),
        );
        assert!(matches!(
            take(&key, &bot(), &nobody),
            Taken::Dropped("no_sender")
        ));
        let wild_entity = msg(
            json!({"id": -100, "type": "group"}),
            "😀",
            json!([{"type": "mention", "offset": 1, "length": 999}]),
        );
        assert!(matches!(
            take(&key, &bot(), &wild_entity),
            Taken::Dropped("not_addressed")
        ));
    }
}
