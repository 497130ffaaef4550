//! Robot messages (spec §2): the payload of a [`crate::stream::ROBOT_TOPIC`] push, parsed
//! leniently (every field optional, unknown ones ignored), with the owner key, the dedupe key,
//! the self-echo and foreign-corp checks, and the reply webhook.

use serde::Deserialize;
use serde_json::Value;

use crate::secret::Secret;

/// A payload that is not the documented JSON. Says what was wrong, never the payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable push: {0}")]
pub struct ParseError(pub String);

/// One robot message. Field names follow the wire (`msgId`, `senderStaffId`, …). Its `Debug`
/// shows ids and the type only, never the text or content (logs must not carry them).
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RobotMessage {
    /// Message id (`msg…==`): the dedupe key.
    pub msg_id: String,
    /// `text`, `picture`, `richText`, `audio`, `video`, `file`, `unknownMsgType`, …
    pub msgtype: String,
    /// Send time, ms since the epoch.
    pub create_at: i64,
    /// `"1"` one-to-one, `"2"` group.
    pub conversation_type: String,
    /// `cid…`; for groups the `openConversationId` to send to.
    pub conversation_id: String,
    /// Group title.
    pub conversation_title: String,
    /// The sender's org userId; empty for non-org senders (never the owner then).
    pub sender_staff_id: String,
    /// The sender's encrypted id (`$:LWCP_v1:$…`): secondary key only.
    pub sender_id: String,
    /// Display name (never used to match anyone).
    pub sender_nick: String,
    /// The sender's corp.
    pub sender_corp_id: String,
    /// The robot's own encrypted id.
    pub chatbot_user_id: String,
    /// The robot's corp.
    pub chatbot_corp_id: String,
    /// Robot code (= client id for internal apps).
    pub robot_code: String,
    /// The robot was @-mentioned (groups).
    pub is_in_at_list: bool,
    /// Reply URL (carries a session key: a secret).
    #[serde(deserialize_with = "secret_string")]
    pub session_webhook: Secret,
    /// When the reply URL expires, ms since the epoch.
    pub session_webhook_expired_time: i64,
    /// `text` messages: `{content, isReplyMsg?, repliedMsg?}`.
    text: Option<Value>,
    /// Other types: the `content` object.
    content: Option<Value>,
}

impl std::fmt::Debug for RobotMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RobotMessage")
            .field("msg_id", &self.msg_id)
            .field("msgtype", &self.msgtype)
            .field("conversation_type", &self.conversation_type)
            .field("sender_staff_id", &self.sender_staff_id)
            .field("sender_corp_id", &self.sender_corp_id)
            .finish_non_exhaustive()
    }
}

fn secret_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(Secret::new(v.as_str().unwrap_or_default()))
}

/// The owner key (spec §3): corp id + staff id, never the encrypted sender id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerKey {
    /// `senderCorpId`.
    pub corp_id: String,
    /// `senderStaffId`.
    pub staff_id: String,
}

/// What a message carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Text, trimmed (groups leave a leading space where the @name was).
    Text(String),
    /// A picture to download with its code.
    Picture {
        /// `downloadCode`.
        download_code: String,
    },
    /// Text and pictures in order.
    RichText(Vec<RichPart>),
    /// Voice, with the server's speech-to-text when present.
    Audio {
        /// `downloadCode`.
        download_code: String,
        /// `recognition`.
        recognition: Option<String>,
    },
    /// Video (`mp4`).
    Video {
        /// `downloadCode`.
        download_code: String,
        /// `videoType`, e.g. `mp4`.
        video_type: String,
    },
    /// A file with its name as the sender gave it (untrusted: see `media::safe_file_name`).
    File {
        /// `downloadCode`.
        download_code: String,
        /// `fileName`.
        file_name: String,
    },
    /// `unknownMsgType`: the platform's human-readable notice.
    Unsupported(String),
    /// A type this crate does not read (`interactiveCard`, `chatRecord`, …).
    Other(String),
}

/// One part of a rich-text message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RichPart {
    /// Text.
    Text(String),
    /// A picture.
    Picture {
        /// `downloadCode`.
        download_code: String,
    },
}

/// The reply webhook of a message (spec §4.2). A secret URL with its expiry.
#[derive(Debug, Clone)]
pub struct SessionWebhook {
    /// The URL (carries a session key).
    pub url: Secret,
    /// Expiry, ms since the epoch.
    pub expires_at_ms: i64,
}

impl RobotMessage {
    /// Parses a push's `data`.
    pub fn parse(data: &str) -> Result<Self, ParseError> {
        let m: RobotMessage =
            serde_json::from_str(data).map_err(|e| json_error("robot message", &e))?;
        if m.msg_id.is_empty() {
            return Err(ParseError("robot message without msgId".into()));
        }
        Ok(m)
    }

    /// The dedupe key: the message's own id (a re-push has a new push id, the same `msgId`).
    pub fn dedupe_key(&self) -> &str {
        &self.msg_id
    }

    /// One-to-one conversation.
    pub fn is_direct(&self) -> bool {
        self.conversation_type == "1"
    }

    /// Addressed to the robot: every DM; in groups only an @-mention (spec §2.1).
    pub fn addresses_bot(&self) -> bool {
        self.is_direct() || self.is_in_at_list
    }

    /// The robot's own message echoed back (spec §2.4): drop it.
    pub fn is_from_bot(&self) -> bool {
        !self.chatbot_user_id.is_empty()
            && (self.sender_id == self.chatbot_user_id
                || self.sender_staff_id == self.chatbot_user_id)
    }

    /// From another corp than the robot's (spec §2.4): dropped unless cross-corp is wanted.
    pub fn is_foreign_corp(&self) -> bool {
        !self.chatbot_corp_id.is_empty() && self.sender_corp_id != self.chatbot_corp_id
    }

    /// The sender as an owner candidate; `None` for non-org senders (empty staff id).
    pub fn owner_key(&self) -> Option<OwnerKey> {
        (!self.sender_staff_id.is_empty() && !self.sender_corp_id.is_empty()).then(|| OwnerKey {
            corp_id: self.sender_corp_id.clone(),
            staff_id: self.sender_staff_id.clone(),
        })
    }

    /// The reply webhook, when the message carries one.
    pub fn session_webhook(&self) -> Option<SessionWebhook> {
        (!self.session_webhook.is_empty()).then(|| SessionWebhook {
            url: self.session_webhook.clone(),
            expires_at_ms: self.session_webhook_expired_time,
        })
    }

    /// True when the message names a robot code other than `expected` (spec §3: for internal
    /// apps it is the client id; the daemon warns once when it differs).
    pub fn robot_code_differs(&self, expected: &str) -> bool {
        !self.robot_code.is_empty() && self.robot_code != expected
    }

    /// The quoted message's id, when this text replies to one.
    pub fn quoted_msg_id(&self) -> Option<&str> {
        let t = self.text.as_ref()?;
        if t.get("isReplyMsg").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        t.pointer("/repliedMsg/msgId").and_then(Value::as_str)
    }

    /// What the message carries.
    pub fn body(&self) -> Body {
        let c = self.content.as_ref();
        let s = |k: &str| {
            c.and_then(|c| c.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match self.msgtype.as_str() {
            "text" => Body::Text(
                self.text
                    .as_ref()
                    .and_then(|t| t.get("content"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            ),
            "picture" => Body::Picture {
                download_code: s("downloadCode"),
            },
            "richText" => Body::RichText(rich_parts(c)),
            "audio" => Body::Audio {
                download_code: s("downloadCode"),
                recognition: Some(s("recognition")).filter(|r| !r.trim().is_empty()),
            },
            "video" => Body::Video {
                download_code: s("downloadCode"),
                video_type: s("videoType"),
            },
            "file" => Body::File {
                download_code: s("downloadCode"),
                file_name: s("fileName"),
            },
            "unknownMsgType" => Body::Unsupported(s("unknownMsgType")),
            other => Body::Other(other.chars().take(40).collect()),
        }
    }
}

/// A JSON error without its message: serde's text can quote the input (message text).
pub(crate) fn json_error(what: &str, e: &serde_json::Error) -> ParseError {
    ParseError(format!(
        "{what}: {:?} error at line {} column {}",
        e.classify(),
        e.line(),
        e.column()
    ))
}

fn rich_parts(content: Option<&Value>) -> Vec<RichPart> {
    let Some(items) = content
        .and_then(|c| c.get("richText"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| {
            if let Some(code) = i.get("downloadCode").and_then(Value::as_str) {
                return Some(RichPart::Picture {
                    download_code: code.to_string(),
                });
            }
            i.get("text")
                .and_then(Value::as_str)
                .map(|t| RichPart::Text(t.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_payloads_never_panic() {
        for bad in [
            "",
            "[]",
            "null",
            "{}",
            r#"{"msgId":5}"#,
            r#"{"msgId":"m","text":"no object","content":[1]}"#,
            &"[".repeat(50_000),
            "\u{feff}{",
        ] {
            if let Ok(m) = RobotMessage::parse(bad) {
                let _ = (
                    m.body(),
                    m.owner_key(),
                    m.quoted_msg_id(),
                    m.session_webhook(),
                );
            }
        }
        let m = RobotMessage::parse(
            r#"{"msgId":"m","msgtype":"text","text":"no object","content":[1]}"#,
        )
        .unwrap();
        assert_eq!(m.body(), Body::Text(String::new()));
    }

    #[test]
    fn owner_self_echo_and_corp() {
        let m = RobotMessage::parse(
            r#"{"msgId":"m1","msgtype":"text","text":{"content":"  hi "},"conversationType":"2",
               "senderStaffId":"","senderCorpId":"ding1","chatbotUserId":"$:LWCP_v1:$bot","chatbotCorpId":"ding1",
               "senderId":"$:LWCP_v1:$bot","isInAtList":true}"#,
        )
        .unwrap();
        assert_eq!(m.body(), Body::Text("hi".into()));
        assert!(m.owner_key().is_none());
        assert!(m.is_from_bot());
        assert!(m.addresses_bot() && !m.is_direct());
        assert!(!m.is_foreign_corp());
        let shown = format!("{m:?}");
        assert!(shown.contains("m1") && !shown.contains("hi"), "{shown}");
    }
}
