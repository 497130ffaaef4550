//! One robot message as the pipeline's input, or dropped with a reason (counted, so nothing the
//! platform delivered vanishes without a trace). Pure: no IO.
//!
//! Who is who (spec §3): the sender is matched on the staff id, and only inside the robot's own
//! corp: a message from another corp (or one whose corp cannot be compared) is dropped, so a
//! staff id here always means (corp id, staff id) and never the encrypted `senderId`. A sender
//! outside the org (no staff id) is known by the encrypted id, which never matches an owner.

use scv_dingtalk::message::{Body, RichPart, RobotMessage};
use serde::{Deserialize, Serialize};

use super::reply::{ReplyRef, Target};
use crate::agent::MediaKind;
use crate::conversation::{Inbound, MediaRef};
use crate::ids::{AccountKey, PlatformMsgId, SenderId};

/// What to do with one robot message.
#[derive(Debug)]
pub(super) enum Taken {
    /// A message for the pipeline (journaled before the push is acknowledged).
    Message(Inbound),
    /// Not passed on, for this reason (a stable snake_case code for `messages_dropped`).
    Dropped(&'static str),
}

/// Where one media item is fetched from (journaled with the message: add, never rename).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Locator {
    /// The `downloadCode` (for `messageFiles/download` with this app's robot code).
    pub d: String,
}

/// Reads one robot message for `account`.
pub(super) fn take(account: &AccountKey, m: &RobotMessage) -> Taken {
    if m.is_from_bot() {
        return Taken::Dropped("self_echo");
    }
    if !m.addresses_bot() {
        return Taken::Dropped("not_addressed");
    }
    let staff = m.sender_staff_id.trim();
    let sender = if staff.is_empty() {
        if m.sender_id.is_empty() {
            return Taken::Dropped("no_sender");
        }
        m.sender_id.clone()
    } else if m.chatbot_corp_id.is_empty() || m.sender_corp_id != m.chatbot_corp_id {
        // Cross-corp senders are not wanted (spec §2.4), and without both corp ids a staff id
        // cannot be told apart from another corp's same id: the safe side drops it.
        return Taken::Dropped("foreign_corp");
    } else {
        staff.to_string()
    };
    let target = if !m.is_direct() {
        if m.conversation_id.is_empty() {
            return Taken::Dropped("no_chat");
        }
        Target::Group(m.conversation_id.clone())
    } else if !staff.is_empty() {
        Target::User(staff.to_string())
    } else if !m.conversation_id.is_empty() {
        Target::Webhook(m.conversation_id.clone())
    } else {
        return Taken::Dropped("no_chat");
    };
    let (text, media) = content(m);
    if text.is_empty() && media.is_empty() {
        return Taken::Dropped("unsupported");
    }
    let hook = m.session_webhook();
    let reply = ReplyRef {
        w: hook
            .as_ref()
            .map(|h| h.url.expose().to_string())
            .unwrap_or_default(),
        e: hook.map_or(0, |h| h.expires_at_ms),
        m: m.msg_id.clone(),
        c: m.conversation_id.clone(),
    };
    Taken::Message(Inbound {
        account: account.clone(),
        chat: target.chat_id(),
        sender: SenderId::new(sender),
        msg_id: PlatformMsgId::new(m.dedupe_key()),
        text,
        at_unix_ms: u64::try_from(m.create_at).unwrap_or(0),
        reply: reply.context(),
        media,
    })
}

/// The text the pipeline reads and the media to fetch after the commit.
fn content(m: &RobotMessage) -> (String, Vec<MediaRef>) {
    let item = |kind, code: &str, name: Option<String>, transcript: Option<String>| MediaRef {
        kind,
        name,
        size: None,
        transcript,
        locator: serde_json::to_value(Locator {
            d: code.to_string(),
        })
        .unwrap_or_default(),
    };
    match m.body() {
        Body::Text(t) => (t, Vec::new()),
        Body::Picture { download_code } => (
            "[image]".into(),
            vec![item(MediaKind::Image, &download_code, None, None)],
        ),
        Body::RichText(parts) => rich(parts),
        Body::Audio {
            download_code,
            recognition,
        } => (
            "[voice]".into(),
            vec![item(MediaKind::Audio, &download_code, None, recognition)],
        ),
        Body::Video {
            download_code,
            video_type,
        } => {
            let ext = if video_type.chars().all(|c| c.is_ascii_alphanumeric())
                && !video_type.is_empty()
            {
                video_type
            } else {
                "mp4".to_string()
            };
            let name = Some(format!("video.{ext}"));
            (
                "[video]".into(),
                vec![item(MediaKind::Video, &download_code, name, None)],
            )
        }
        Body::File {
            download_code,
            file_name,
        } => {
            let name = Some(file_name).filter(|n| !n.trim().is_empty());
            (
                "[file]".into(),
                vec![item(MediaKind::File, &download_code, name, None)],
            )
        }
        // The platform's own notice of a type it cannot show to robots.
        Body::Unsupported(_) | Body::Other(_) => (String::new(), Vec::new()),
    }
}

fn locator(code: &str) -> serde_json::Value {
    serde_json::to_value(Locator {
        d: code.to_string(),
    })
    .unwrap_or_default()
}

/// Rich text: its text parts in order, its pictures as media ("[image]" when it has no text).
fn rich(parts: Vec<RichPart>) -> (String, Vec<MediaRef>) {
    let mut text = String::new();
    let mut media = Vec::new();
    for p in parts {
        match p {
            RichPart::Text(t) => text.push_str(&t),
            RichPart::Picture { download_code } => media.push(MediaRef {
                kind: MediaKind::Image,
                name: None,
                size: None,
                transcript: None,
                locator: locator(&download_code),
            }),
        }
    }
    let text = text.trim().to_string();
    if text.is_empty() && !media.is_empty() {
        return ("[image]".to_string(), media);
    }
    (text, media)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ids::Channel;

    fn msg(v: serde_json::Value) -> RobotMessage {
        let mut base = json!({
            "msgId": "msg1==", "msgtype": "text", "text": {"content": " hi "},
            "conversationType": "1", "conversationId": "cidA==", "senderStaffId": "s1",
            "senderCorpId": "corp", "chatbotCorpId": "corp", "senderId": "$:LWCP_v1:$s1",
            "chatbotUserId": "$:LWCP_v1:$bot", "createAt": 1000,
            "sessionWebhook": "http://h/robot/sendBySession?session=x", "sessionWebhookExpiredTime": 9
        });
        for (k, val) in v.as_object().cloned().unwrap_or_default() {
            base[k] = val;
        }
        RobotMessage::parse(&base.to_string()).expect("parses")
    }

    fn key() -> AccountKey {
        AccountKey::new(Channel::Dingtalk, "d")
    }

    #[test]
    fn a_direct_message_names_the_staff_id_and_keeps_its_webhook() {
        let Taken::Message(i) = take(&key(), &msg(json!({}))) else {
            panic!("a message")
        };
        assert_eq!(
            (
                i.chat.as_str(),
                i.sender.as_str(),
                i.msg_id.as_str(),
                i.text.as_str()
            ),
            ("u:s1", "s1", "msg1==", "hi")
        );
        let r = ReplyRef::parse(&i.reply);
        assert!(r.w.contains("session=x") && r.e == 9 && r.m == "msg1==");
    }

    #[test]
    fn who_is_dropped_and_why() {
        let cases = [
            (json!({"senderId": "$:LWCP_v1:$bot"}), "self_echo"),
            (
                json!({"conversationType": "2", "isInAtList": false}),
                "not_addressed",
            ),
            (json!({"senderCorpId": "other"}), "foreign_corp"),
            (json!({"chatbotCorpId": ""}), "foreign_corp"),
            (
                json!({"msgtype": "unknownMsgType", "content": {"unknownMsgType": "x"}}),
                "unsupported",
            ),
            (
                json!({"senderStaffId": "", "senderId": "", "conversationId": ""}),
                "no_sender",
            ),
        ];
        for (v, reason) in cases {
            match take(&key(), &msg(v.clone())) {
                Taken::Dropped(r) => assert_eq!(r, reason, "{v}"),
                other => panic!("{v}: {other:?}"),
            }
        }
    }

    #[test]
    fn groups_and_outsiders_get_their_own_targets() {
        let Taken::Message(g) = take(
            &key(),
            &msg(json!({"conversationType": "2", "isInAtList": true, "conversationId": "cidG=="})),
        ) else {
            panic!()
        };
        assert_eq!(g.chat.as_str(), "g:cidG==");
        let Taken::Message(o) = take(&key(), &msg(json!({"senderStaffId": ""}))) else {
            panic!()
        };
        assert_eq!(
            (o.chat.as_str(), o.sender.as_str()),
            ("c:cidA==", "$:LWCP_v1:$s1")
        );
    }

    #[test]
    fn media_carries_its_code_name_and_transcript() {
        let Taken::Message(a) = take(
            &key(),
            &msg(
                json!({"msgtype": "audio", "content": {"downloadCode": "dc1", "recognition": "hello"}}),
            ),
        ) else {
            panic!()
        };
        assert_eq!(a.text, "[voice]");
        assert_eq!(a.media[0].transcript.as_deref(), Some("hello"));
        assert_eq!(a.media[0].locator, json!({"d": "dc1"}));
        let Taken::Message(f) = take(
            &key(),
            &msg(
                json!({"msgtype": "file", "content": {"downloadCode": "dc2", "fileName": "../x.pdf"}}),
            ),
        ) else {
            panic!()
        };
        // The name stays untrusted text: the media seam makes it safe.
        assert_eq!(f.media[0].name.as_deref(), Some("../x.pdf"));
        let rich = json!({"msgtype": "richText", "content": {"richText": [
            {"text": "look "}, {"type": "picture", "downloadCode": "dc3"}, {"text": "here"}]}});
        let Taken::Message(r) = take(&key(), &msg(rich)) else {
            panic!()
        };
        assert_eq!((r.text.as_str(), r.media.len()), ("look here", 1));
        assert_eq!(r.media[0].locator, json!({"d": "dc3"}));
    }
}
