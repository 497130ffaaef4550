//! What a test pushes: robot messages of every type (spec §7.5) and card clicks (§7.15), with
//! real-looking ids, a live session webhook, and media registered for download.

use serde_json::{Value, json};
use tokio::time::Instant;

use super::FakeDingTalk;
use super::records::PushRecord;
use super::state::now_ms;
use crate::stream::{CARD_CALLBACK_TOPIC, ROBOT_TOPIC};

/// The body of a pushed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboundBody {
    /// `text`.
    Text(String),
    /// `text` quoting an earlier message by its `msgId`.
    Quote {
        /// The text.
        text: String,
        /// The quoted `msgId`.
        quoted: String,
    },
    /// `picture` with these bytes behind its download code.
    Picture(Vec<u8>),
    /// `richText`: a text part and a picture.
    RichText(String, Vec<u8>),
    /// `audio` with the server's recognition text, if any.
    Audio(Vec<u8>, Option<String>),
    /// `video` (`mp4`).
    Video(Vec<u8>),
    /// `file` with its name as the sender gave it.
    File(Vec<u8>, String),
    /// `unknownMsgType`.
    Unsupported,
}

/// A message to push. Build with [`Inbound::text`] and adjust the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbound {
    /// `senderStaffId` (empty = a non-org sender).
    pub staff_id: String,
    /// `senderCorpId` (defaults to the robot's corp).
    pub corp_id: Option<String>,
    /// A group's `conversationId`; `None` = a direct message.
    pub group: Option<String>,
    /// `isInAtList` (groups).
    pub at_bot: bool,
    /// A self-echo: the sender is the robot itself.
    pub from_bot: bool,
    /// What it carries.
    pub body: InboundBody,
}

impl Inbound {
    /// A direct text message from `staff_id`.
    pub fn text(staff_id: &str, text: &str) -> Self {
        Self::new(staff_id, InboundBody::Text(text.to_string()))
    }

    /// A direct message from `staff_id` with `body`.
    pub fn new(staff_id: &str, body: InboundBody) -> Self {
        Self {
            staff_id: staff_id.to_string(),
            corp_id: None,
            group: None,
            at_bot: false,
            from_bot: false,
            body,
        }
    }

    /// The same message in group `cid`, @-mentioning the robot or not.
    pub fn in_group(mut self, cid: &str, at_bot: bool) -> Self {
        self.group = Some(cid.to_string());
        self.at_bot = at_bot;
        self
    }
}

/// What the fake pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The robot message's `msgId` (or the card's `outTrackId`).
    pub msg_id: String,
    /// The push record (its `messageId`, the connection it went to, or lost).
    pub push: PushRecord,
    /// The download code of the message's media, if any.
    pub download_code: Option<String>,
}

impl FakeDingTalk {
    /// Pushes a robot message to one live connection subscribed to the robot topic (lost,
    /// as on the platform, when there is none).
    pub fn push(&self, m: &Inbound) -> Pushed {
        let c = &self.shared.config;
        let mut st = self.shared.lock();
        let n = st.next();
        let msg_id = format!(
            "msg{n:04}{:012x}==",
            rand::random::<u64>() & 0xffff_ffff_ffff
        );
        let session = format!("sess-{n}-{:016x}", rand::random::<u64>());
        st.webhooks
            .insert(session.clone(), Instant::now() + c.webhook_lifetime);
        let mut code_for = |bytes: &[u8], name: &str| {
            let code = format!("dc-{n}-{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
            st.media
                .insert(code.clone(), (bytes.to_vec(), name.to_string()));
            code
        };
        let (msgtype, text, content, download_code) = body_json(&m.body, &mut code_for);
        let corp = m.corp_id.clone().unwrap_or_else(|| c.corp_id.clone());
        let sender_id = if m.from_bot {
            c.bot_user_id.clone()
        } else {
            format!("$:LWCP_v1:${}", m.staff_id)
        };
        let (ctype, cid) = match &m.group {
            Some(g) => ("2", g.clone()),
            None => ("1", format!("cid{}==", m.staff_id)),
        };
        let mut data = json!({
            "conversationId": cid, "conversationType": ctype, "chatbotCorpId": c.corp_id,
            "chatbotUserId": c.bot_user_id, "msgId": msg_id, "senderNick": "Fake Sender",
            "isAdmin": false, "senderStaffId": m.staff_id, "senderCorpId": corp, "senderId": sender_id,
            "sessionWebhookExpiredTime": now_ms() + c.webhook_lifetime.as_millis() as i64,
            "sessionWebhook": format!("{}/robot/sendBySession?session={session}", self.shared.base_url),
            "createAt": now_ms(), "robotCode": c.client_id, "msgtype": msgtype,
            "senderPlatform": "Mac", "x-fake-unknown-field": {"kept": true},
        });
        if m.group.is_some() {
            data["isInAtList"] = json!(m.at_bot);
            data["conversationTitle"] = json!("Fake group");
        }
        if let Some(mut t) = text {
            // In groups the @name is cut out and its space stays (spec §2.3).
            if m.group.is_some()
                && let Some(s) = t["content"].as_str()
            {
                t["content"] = json!(format!(" {s}"));
            }
            data["text"] = t;
        }
        if let Some(ct) = content {
            data["content"] = ct;
        }
        let push = st.dispatch(ROBOT_TOPIC, &msg_id, data.to_string(), false);
        Pushed {
            msg_id,
            push,
            download_code,
        }
    }

    /// Pushes a direct text message from `staff_id`.
    pub fn push_text(&self, staff_id: &str, text: &str) -> Pushed {
        self.push(&Inbound::text(staff_id, text))
    }

    /// Pushes a press on card `out_track_id` by `staff_id` with button `params`.
    pub fn click_card(&self, out_track_id: &str, staff_id: &str, params: Value) -> Pushed {
        let content =
            json!({"cardPrivateData": {"actionIds": ["action"], "params": params}}).to_string();
        let data = json!({
            "outTrackId": out_track_id, "userId": staff_id, "userIdType": 1,
            "corpId": self.shared.config.corp_id, "spaceType": "im", "spaceId": "space-1",
            "type": "actionCallback", "content": content, "value": content, "extension": "{}",
        });
        let push =
            self.shared
                .lock()
                .dispatch(CARD_CALLBACK_TOPIC, out_track_id, data.to_string(), false);
        Pushed {
            msg_id: out_track_id.to_string(),
            push,
            download_code: None,
        }
    }

    /// Pushes an earlier payload again under a new `messageId` (a duplicate even after ACK,
    /// spec §7.6). `None` when `key` was never pushed.
    pub fn repush(&self, key: &str) -> Option<PushRecord> {
        let mut st = self.shared.lock();
        let (topic, data) = st.payloads.get(key).cloned()?;
        Some(st.dispatch(&topic, key, data, true))
    }
}

type Parts = (&'static str, Option<Value>, Option<Value>, Option<String>);

/// `msgtype`, the `text` object, the `content` object, and the media's download code.
fn body_json(body: &InboundBody, code_for: &mut impl FnMut(&[u8], &str) -> String) -> Parts {
    match body {
        InboundBody::Text(t) => ("text", Some(json!({"content": t})), None, None),
        InboundBody::Quote { text, quoted } => (
            "text",
            Some(json!({"content": text, "isReplyMsg": true,
                        "repliedMsg": {"msgType": "text", "msgId": quoted, "content": {"text": "…"}}})),
            None,
            None,
        ),
        InboundBody::Picture(b) => {
            let code = code_for(b, "image.png");
            (
                "picture",
                None,
                Some(json!({"downloadCode": code, "pictureDownloadCode": "pdc"})),
                Some(code),
            )
        }
        InboundBody::RichText(t, b) => {
            let code = code_for(b, "image.png");
            let parts = json!([{"text": t}, {"type": "picture", "downloadCode": code, "pictureDownloadCode": "pdc"}]);
            (
                "richText",
                None,
                Some(json!({"richText": parts})),
                Some(code),
            )
        }
        InboundBody::Audio(b, rec) => {
            let code = code_for(b, "voice.amr");
            let mut c = json!({"downloadCode": code, "duration": "3000"});
            if let Some(r) = rec {
                c["recognition"] = json!(r);
            }
            ("audio", None, Some(c), Some(code))
        }
        InboundBody::Video(b) => {
            let code = code_for(b, "video.mp4");
            (
                "video",
                None,
                Some(json!({"downloadCode": code, "duration": "4", "videoType": "mp4"})),
                Some(code),
            )
        }
        InboundBody::File(b, name) => {
            let code = code_for(b, name);
            let c = json!({"downloadCode": code, "fileName": name, "spaceId": "1", "fileId": "2"});
            ("file", None, Some(c), Some(code))
        }
        InboundBody::Unsupported => (
            "unknownMsgType",
            None,
            Some(json!({"unknownMsgType": "您收到了一条新消息，请在手机端查看"})),
            None,
        ),
    }
}
