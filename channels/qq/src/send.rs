//! Sending (§4): every message is a passive reply to a trigger (`msg_id` of an inbound message,
//! or `event_id` of a click or a friend/group event) with a `msg_seq` unique per trigger.
//! The caller (the daemon) allocates `msg_seq` 1, 2, 3… per trigger and persists it. A retry of
//! the same message may repeat its pair on purpose: the platform refuses a repeated `msg_id` +
//! `msg_seq` with [`Rejection::DuplicateSeq`] (§4.1), which then means the first was delivered.
//!
//! [`Rejection::DuplicateSeq`]: crate::Rejection::DuplicateSeq

use reqwest::Method;
use serde_json::{Value, json};

use crate::client::{Client, path_safe};
use crate::error::{Call, Error};
use crate::limits::{MAX_BUTTONS_PER_ROW, MAX_KEYBOARD_ROWS, MAX_TEXT_CHARS, MAX_TYPING_SECONDS};

/// Who a message goes to. Ids are the per-bot openids of §3.1.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A one-to-one chat: the user's `user_openid`.
    User(String),
    /// A group: its `group_openid`.
    Group(String),
}

impl Target {
    fn call(&self) -> Call {
        match self {
            Target::User(_) => Call::SendC2c,
            Target::Group(_) => Call::SendGroup,
        }
    }

    /// `/v2/users/{id}` or `/v2/groups/{id}`; `None` for an id that may not go into a path.
    pub(crate) fn base_path(&self) -> Option<String> {
        let (kind, id) = match self {
            Target::User(id) => ("users", id),
            Target::Group(id) => ("groups", id),
        };
        path_safe(id).then(|| format!("/v2/{kind}/{id}"))
    }
}

/// What a reply answers: an inbound message's id, or an event's id (§4.1 lists which events).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// `msg_id` of an inbound message.
    Message(String),
    /// `event_id` of a click, `FRIEND_ADD`, `C2C_MSG_RECEIVE`, `GROUP_ADD_ROBOT`, `GROUP_MSG_RECEIVE`.
    Event(String),
}

/// The idempotency handle of one reply: its trigger and its `msg_seq`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reply {
    /// What it answers.
    pub trigger: Trigger,
    /// 1, 2, 3… per trigger; the platform refuses a repeated pair with `40054005`.
    pub msg_seq: u32,
}

/// One button of a keyboard (§4.5), a callback button: a click arrives as `INTERACTION_CREATE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    /// Button id, unique in the keyboard.
    pub id: String,
    /// Label.
    pub label: String,
    /// Label after a click.
    pub visited_label: String,
    /// `action.data`, returned in the click's `button_data`.
    pub data: String,
    /// Only this openid may press it (the owner); `None` lets everyone press.
    pub only: Option<String>,
}

/// What is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Plain text (`msg_type` 0), the default. Must hold no `http(s)://` link (§4.2).
    Text(String),
    /// Markdown (`msg_type` 2), only with the permission (invite-only, §4.3), optionally with a
    /// keyboard of callback buttons (also invite-only, §4.5).
    Markdown {
        /// Markdown source.
        content: String,
        /// Rows of buttons (at most 5×5).
        keyboard: Option<Vec<Vec<Button>>>,
    },
    /// A media message (`msg_type` 7) from an upload's `file_info` for the same target kind.
    Media {
        /// `file_info` from [`Client::upload`].
        file_info: String,
    },
    /// Typing (`msg_type` 6, C2C only) for 1..=60 s. It may spend a reply slot (unconfirmed,
    /// §4.3), so the daemon should count it as one.
    Typing {
        /// Seconds, clamped to 1..=60.
        seconds: u32,
    },
}

/// The platform's answer to a send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    /// Message id (for recall within 2 minutes).
    pub id: String,
    /// Timestamp as the platform wrote it.
    pub timestamp: Option<String>,
}

impl Client {
    /// Sends `body` to `target` as a reply. `reply: None` is an active message, which the
    /// platform refuses since 2025-04-21 (`Rejected(NeedsTrigger)`): the daemon queues instead.
    pub async fn send(
        &self,
        target: &Target,
        reply: Option<&Reply>,
        body: &Body,
    ) -> Result<SentMessage, Error> {
        let call = target.call();
        let base = target.base_path().ok_or(Error::Invalid {
            call,
            detail: "the target id is not a platform id",
        })?;
        let json = request_body(target, reply, body)?;
        let value = self
            .call(call, Method::POST, &format!("{base}/messages"), Some(&json))
            .await?;
        let id = value.get("id").and_then(Value::as_str).unwrap_or_default();
        Ok(SentMessage {
            id: id.to_owned(),
            timestamp: value
                .get("timestamp")
                .map(|t| t.as_str().map_or_else(|| t.to_string(), str::to_owned)),
        })
    }

    /// Acknowledges a button click (`PUT /interactions/{id}`), which must happen for every click
    /// or the button spins until it times out (§4.5).
    pub async fn ack_interaction(&self, id: &str, result: ClickResult) -> Result<(), Error> {
        if !path_safe(id) {
            return Err(Error::Invalid {
                call: Call::Interaction,
                detail: "the interaction id is not a platform id",
            });
        }
        let body = json!({"code": result as u8});
        self.call(
            Call::Interaction,
            Method::PUT,
            &format!("/interactions/{id}"),
            Some(&body),
        )
        .await
        .map(drop)
    }
}

/// What a click acknowledgement reports (§4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ClickResult {
    /// Handled.
    Ok = 0,
    /// Failed.
    Failed = 1,
    /// Too frequent.
    TooFrequent = 2,
    /// Repeated.
    Repeated = 3,
    /// The clicker may not press it (a stranger pressing the owner's button).
    NoPermission = 4,
    /// Admins only.
    AdminsOnly = 5,
}

/// The JSON of a send, checked against what the client knows the platform refuses.
fn request_body(target: &Target, reply: Option<&Reply>, body: &Body) -> Result<Value, Error> {
    let call = target.call();
    let mut v = match body {
        Body::Text(text) => json!({"msg_type": 0, "content": checked_text(call, text)?}),
        Body::Markdown { content, keyboard } => {
            let mut v =
                json!({"msg_type": 2, "markdown": {"content": checked_text(call, content)?}});
            if let Some(rows) = keyboard {
                v["keyboard"] = keyboard_json(call, rows)?;
            }
            v
        }
        // `content` is required on group sends; the doc asks for a placeholder (§4.2).
        Body::Media { file_info } => {
            json!({"msg_type": 7, "content": " ", "media": {"file_info": file_info}})
        }
        Body::Typing { seconds } => {
            if matches!(target, Target::Group(_)) {
                return Err(Error::Invalid {
                    call,
                    detail: "typing exists only in C2C chats",
                });
            }
            let s = (*seconds).clamp(1, MAX_TYPING_SECONDS);
            json!({"msg_type": 6, "input_notify": {"input_type": 1, "input_second": s}})
        }
    };
    if let Some(r) = reply {
        match &r.trigger {
            Trigger::Message(id) => v["msg_id"] = json!(id),
            Trigger::Event(id) => v["event_id"] = json!(id),
        }
        v["msg_seq"] = json!(r.msg_seq);
    }
    Ok(v)
}

fn checked_text(call: Call, text: &str) -> Result<&str, Error> {
    if text.trim().is_empty() {
        return Err(Error::Invalid {
            call,
            detail: "empty text",
        });
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(Error::TooLarge {
            call,
            limit: MAX_TEXT_CHARS as u64,
        });
    }
    Ok(text)
}

fn keyboard_json(call: Call, rows: &[Vec<Button>]) -> Result<Value, Error> {
    if rows.is_empty()
        || rows.len() > MAX_KEYBOARD_ROWS
        || rows
            .iter()
            .any(|r| r.is_empty() || r.len() > MAX_BUTTONS_PER_ROW)
    {
        return Err(Error::Invalid {
            call,
            detail: "a keyboard has 1 to 5 rows of 1 to 5 buttons",
        });
    }
    let rows: Vec<Value> = rows
        .iter()
        .map(|row| json!({"buttons": row.iter().map(button_json).collect::<Vec<_>>()}))
        .collect();
    Ok(json!({"content": {"rows": rows}}))
}

fn button_json(b: &Button) -> Value {
    let permission = match &b.only {
        Some(id) => json!({"type": 0, "specify_user_ids": [id]}),
        None => json!({"type": 2}),
    };
    json!({
        "id": b.id,
        "render_data": {"label": b.label, "visited_label": b.visited_label, "style": 1},
        "action": {"type": 1, "data": b.data, "permission": permission,
                   "unsupport_tips": "Please update QQ to answer"},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies() {
        let user = Target::User("U1".into());
        let reply = Reply {
            trigger: Trigger::Message("m1".into()),
            msg_seq: 2,
        };
        let v = request_body(&user, Some(&reply), &Body::Text("hi".into())).unwrap();
        assert_eq!(
            v,
            json!({"msg_type": 0, "content": "hi", "msg_id": "m1", "msg_seq": 2})
        );
        let v = request_body(&user, None, &Body::Typing { seconds: 500 }).unwrap();
        assert_eq!(v["input_notify"]["input_second"], 60);
        let group = Target::Group("G1".into());
        assert!(request_body(&group, None, &Body::Typing { seconds: 5 }).is_err());
        let long = "字".repeat(MAX_TEXT_CHARS + 1);
        let e = request_body(&user, None, &Body::Text(long)).unwrap_err();
        assert_eq!(
            e.class(),
            crate::ErrorClass::Rejected(crate::Rejection::TooLarge)
        );
        let six = vec![vec![]; 6];
        let e = request_body(
            &user,
            None,
            &Body::Markdown {
                content: "x".into(),
                keyboard: Some(six),
            },
        );
        assert!(e.is_err());
        assert_eq!(Target::User("../x".into()).base_path(), None);
    }
}
