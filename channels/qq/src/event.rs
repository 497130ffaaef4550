//! Inbound events (§2, §4.5): the dispatch `t`/`d` of a gateway frame parsed into [`Event`].
//! Parsing is lenient about extra and missing optional fields and never panics; a payload
//! without what identifies it (an id, a sender) is an [`EventError`], which the daemon counts.

use std::time::Duration;

use serde_json::Value;

use crate::limits::{C2C_REPLY_WINDOW, GROUP_REPLY_WINDOW};
use crate::send::{Target, Trigger};

/// Where a message or click happened, with the sender's per-bot ids (§3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scene {
    /// A one-to-one chat.
    C2c {
        /// The sender's `user_openid`.
        user_openid: String,
    },
    /// A group.
    Group {
        /// `group_openid`.
        group_openid: String,
        /// The sender's `member_openid` (may differ from their `user_openid`: unconfirmed).
        member_openid: String,
    },
}

impl Scene {
    /// Where a reply goes.
    pub fn target(&self) -> Target {
        match self {
            Scene::C2c { user_openid } => Target::User(user_openid.clone()),
            Scene::Group { group_openid, .. } => Target::Group(group_openid.clone()),
        }
    }

    /// How long a message here can be answered (§4.1).
    pub fn reply_window(&self) -> Duration {
        match self {
            Scene::C2c { .. } => C2C_REPLY_WINDOW,
            Scene::Group { .. } => GROUP_REPLY_WINDOW,
        }
    }
}

/// An attachment of an inbound message (§2.1). Download at once with [`crate::Client::download`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attachment {
    /// `image/jpeg`, `image/png`, `image/gif`, `file`, `video/mp4` or `voice`.
    pub content_type: String,
    /// File name as sent (untrusted: may hold `../`).
    pub filename: Option<String>,
    /// Declared size in bytes.
    pub size: Option<u64>,
    /// The URL, possibly without a scheme.
    pub url: String,
    /// For voice: a WAV link (avoids SILK decoding).
    pub voice_wav_url: Option<String>,
    /// For voice: the platform's transcript.
    pub asr_refer_text: Option<String>,
}

/// An inbound C2C or group message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `d.id`: the dedupe key and the `msg_id` of replies.
    pub id: String,
    /// Where it came from.
    pub scene: Scene,
    /// Text; in groups without the leading space left by the stripped @bot.
    pub content: String,
    /// RFC 3339 timestamp as sent.
    pub timestamp: Option<String>,
    /// Attachments.
    pub attachments: Vec<Attachment>,
    /// `author.bot`: drop it (§2.3).
    pub from_bot: bool,
    /// Whether it addresses the bot: always in C2C and `GROUP_AT_MESSAGE_CREATE`; in a full
    /// `GROUP_MESSAGE_CREATE` only with a mention whose `is_you` is true (§2.2).
    pub addressed: bool,
}

impl Message {
    /// The dedupe key (the platform may push a `msg_id` twice, §2.3).
    pub fn dedupe_key(&self) -> &str {
        &self.id
    }

    /// Whether the daemon should take it in at all: addressed to the bot, not from a bot.
    pub fn wanted(&self) -> bool {
        self.addressed && !self.from_bot
    }

    /// The trigger a reply to it carries.
    pub fn trigger(&self) -> Trigger {
        Trigger::Message(self.id.clone())
    }
}

/// A button click (`INTERACTION_CREATE`, §4.5). Acknowledge it with
/// [`crate::Client::ack_interaction`], then reply with `Trigger::Event(id)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interaction {
    /// Interaction id: ack it, reply with it as `event_id`, dedupe on it.
    pub id: String,
    /// Where it was clicked (`group_member_openid` as the member id in groups).
    pub scene: Scene,
    /// `data.resolved.button_data`.
    pub button_data: String,
    /// `data.resolved.button_id`.
    pub button_id: String,
}

/// A parsed dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `C2C_MESSAGE_CREATE`, `GROUP_AT_MESSAGE_CREATE` or `GROUP_MESSAGE_CREATE`.
    Message(Message),
    /// `INTERACTION_CREATE`.
    Interaction(Interaction),
    /// Any other event: its type, and where a passive reply may go with its id as `event_id`
    /// (`FRIEND_ADD`, `C2C_MSG_RECEIVE`, `GROUP_ADD_ROBOT`, `GROUP_MSG_RECEIVE`, §4.1).
    Other {
        /// `t`.
        kind: String,
        /// A target when this event type grants one passive reply.
        reply_target: Option<Target>,
    },
}

/// A dispatch that cannot be read as its type says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("qq {kind} event without {missing}")]
pub struct EventError {
    /// `t`.
    pub kind: String,
    /// The field that was missing or not text.
    pub missing: &'static str,
}

/// Parses the `d` of a dispatch of type `t`.
pub fn parse(t: &str, d: &Value) -> Result<Event, EventError> {
    let need = |path: &[&str], missing: &'static str| {
        text_at(d, path).ok_or(EventError {
            kind: t.to_owned(),
            missing,
        })
    };
    match t {
        "C2C_MESSAGE_CREATE" => {
            let user_openid = text_at(d, &["author", "user_openid"])
                .or_else(|| text_at(d, &["author", "id"]))
                .ok_or(EventError {
                    kind: t.to_owned(),
                    missing: "author.user_openid",
                })?;
            message(d, need(&["id"], "id")?, Scene::C2c { user_openid }, true)
        }
        "GROUP_AT_MESSAGE_CREATE" | "GROUP_MESSAGE_CREATE" => {
            let scene = Scene::Group {
                group_openid: need(&["group_openid"], "group_openid")?,
                member_openid: need(&["author", "member_openid"], "author.member_openid")?,
            };
            let addressed = t == "GROUP_AT_MESSAGE_CREATE" || mentions_me(d);
            message(d, need(&["id"], "id")?, scene, addressed)
        }
        "INTERACTION_CREATE" => interaction(t, d),
        _ => Ok(Event::Other {
            kind: t.to_owned(),
            reply_target: reply_target(t, d),
        }),
    }
}

fn message(d: &Value, id: String, scene: Scene, addressed: bool) -> Result<Event, EventError> {
    let raw = d.get("content").and_then(Value::as_str).unwrap_or("");
    let content = match scene {
        // The @bot is cut out and leaves a leading space (§2.2).
        Scene::Group { .. } => raw.trim_start().to_owned(),
        Scene::C2c { .. } => raw.to_owned(),
    };
    let attachments = d
        .get("attachments")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(attachment).collect())
        .unwrap_or_default();
    Ok(Event::Message(Message {
        id,
        scene,
        content,
        timestamp: text_at(d, &["timestamp"]),
        attachments,
        from_bot: d
            .pointer("/author/bot")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        addressed,
    }))
}

fn mentions_me(d: &Value) -> bool {
    d.get("mentions")
        .and_then(Value::as_array)
        .is_some_and(|m| {
            m.iter()
                .any(|x| x.get("is_you").and_then(Value::as_bool) == Some(true))
        })
}

fn attachment(a: &Value) -> Option<Attachment> {
    let url = text_at(a, &["url"])?;
    Some(Attachment {
        content_type: text_at(a, &["content_type"]).unwrap_or_default(),
        filename: text_at(a, &["filename"]),
        size: a
            .get("size")
            .and_then(|s| s.as_u64().or_else(|| s.as_str()?.parse().ok())),
        url,
        voice_wav_url: text_at(a, &["voice_wav_url"]),
        asr_refer_text: text_at(a, &["asr_refer_text"]),
    })
}

fn interaction(t: &str, d: &Value) -> Result<Event, EventError> {
    let err = |missing| EventError {
        kind: t.to_owned(),
        missing,
    };
    let id = text_at(d, &["id"]).ok_or(err("id"))?;
    let scene = match text_at(d, &["group_openid"]) {
        Some(group_openid) => Scene::Group {
            group_openid,
            member_openid: text_at(d, &["group_member_openid"])
                .ok_or(err("group_member_openid"))?,
        },
        None => Scene::C2c {
            user_openid: text_at(d, &["user_openid"]).ok_or(err("user_openid"))?,
        },
    };
    Ok(Event::Interaction(Interaction {
        id,
        scene,
        button_data: text_at(d, &["data", "resolved", "button_data"]).unwrap_or_default(),
        button_id: text_at(d, &["data", "resolved", "button_id"]).unwrap_or_default(),
    }))
}

fn reply_target(t: &str, d: &Value) -> Option<Target> {
    match t {
        "FRIEND_ADD" | "C2C_MSG_RECEIVE" => text_at(d, &["openid"]).map(Target::User),
        "GROUP_ADD_ROBOT" | "GROUP_MSG_RECEIVE" => text_at(d, &["group_openid"]).map(Target::Group),
        _ => None,
    }
}

/// The non-empty string at `path`.
fn text_at(v: &Value, path: &[&str]) -> Option<String> {
    let mut cur = v;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn group_at_message() {
        let d = json!({"id": "ROBOT1.0_g", "group_openid": "G", "content": " hi",
            "author": {"member_openid": "M", "bot": false},
            "attachments": [{"content_type": "voice", "url": "h/x.silk", "asr_refer_text": "hello", "size": "12"}]});
        let Ok(Event::Message(m)) = parse("GROUP_AT_MESSAGE_CREATE", &d) else {
            panic!("parses")
        };
        assert_eq!(m.content, "hi");
        assert!(m.wanted());
        assert_eq!(m.attachments[0].asr_refer_text.as_deref(), Some("hello"));
        assert_eq!(m.attachments[0].size, Some(12));
        assert_eq!(m.scene.reply_window(), GROUP_REPLY_WINDOW);
    }

    #[test]
    fn full_group_messages_only_when_they_mention_the_bot() {
        let d = json!({"id": "x", "group_openid": "G", "author": {"member_openid": "M"}, "content": "hey"});
        let Ok(Event::Message(m)) = parse("GROUP_MESSAGE_CREATE", &d) else {
            panic!()
        };
        assert!(!m.wanted());
        let d = json!({"id": "x", "group_openid": "G", "author": {"member_openid": "M", "bot": true},
            "mentions": [{"is_you": true}]});
        let Ok(Event::Message(m)) = parse("GROUP_MESSAGE_CREATE", &d) else {
            panic!()
        };
        assert!(
            m.addressed && !m.wanted(),
            "a bot's message is never wanted"
        );
    }

    #[test]
    fn hostile_payloads_are_errors_not_panics() {
        for (t, d) in [
            ("C2C_MESSAGE_CREATE", json!(null)),
            (
                "C2C_MESSAGE_CREATE",
                json!({"id": 5, "author": {"user_openid": "U"}}),
            ),
            ("C2C_MESSAGE_CREATE", json!({"id": "m"})),
            (
                "GROUP_AT_MESSAGE_CREATE",
                json!({"id": "m", "group_openid": ["x"]}),
            ),
            ("INTERACTION_CREATE", json!({"id": "i"})),
        ] {
            assert!(parse(t, &d).is_err(), "{t} {d}");
        }
        let d =
            json!({"id": "m", "author": {"user_openid": "U"}, "attachments": [{"url": 3}, "x"]});
        let Ok(Event::Message(m)) = parse("C2C_MESSAGE_CREATE", &d) else {
            panic!()
        };
        assert!(m.attachments.is_empty());
        let Ok(Event::Other { reply_target, .. }) = parse("FRIEND_ADD", &json!({"openid": "U"}))
        else {
            panic!()
        };
        assert_eq!(reply_target, Some(Target::User("U".into())));
    }
}
