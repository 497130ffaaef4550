//! What the fake records and the faults a test can set. Made by the fake; read by tests
//! through [`super::FakeDingTalk`].

use std::time::Duration;

use serde_json::{Map, Value};

use crate::call::Call;

/// One `connections/open` request.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenRecord {
    /// `ua`.
    pub ua: String,
    /// `localIp`, if sent.
    pub local_ip: Option<String>,
    /// `(type, topic)` pairs.
    pub subscriptions: Vec<(String, String)>,
    /// Whether `Accept: application/json` was sent.
    pub accept_json: bool,
}

/// One accepted WebSocket connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// The fake's id of the connection (`connectionId` header).
    pub id: u64,
    /// The topics its ticket subscribed.
    pub topics: Vec<String>,
}

/// One push (a re-push is a new record with a new `message_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushRecord {
    /// `headers.messageId` of the push.
    pub message_id: String,
    /// `headers.topic`.
    pub topic: String,
    /// The robot message's `msgId` or the card's `outTrackId`.
    pub key: String,
    /// The connection it went to; `None` = lost (no live connection took the topic).
    pub connection: Option<u64>,
    /// A re-push of an earlier push.
    pub repush: bool,
}

/// One ACK frame received.
#[derive(Debug, Clone, PartialEq)]
pub struct AckRecord {
    /// `headers.messageId` echoed.
    pub message_id: String,
    /// It names a push this fake sent (and not yet ACKed).
    pub known: bool,
    /// `code`.
    pub code: Option<i64>,
    /// `data` was a JSON string, as the protocol requires.
    pub data_is_string: bool,
    /// `data` parsed (Null if unreadable).
    pub data: Value,
    /// Which connection it came on.
    pub connection: u64,
    /// How long after the push it came (for a known push).
    pub after: Option<Duration>,
}

/// One robot send or webhook reply the fake accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct SentRecord {
    /// Which API.
    pub call: Call,
    /// Staff ids (batch), `openConversationId` (group) or `session` (webhook).
    pub target: Vec<String>,
    /// `msgKey`, or the webhook's `msgtype`.
    pub msg_key: String,
    /// `msgParam` parsed, or the webhook body.
    pub param: Value,
    /// `processQueryKey` returned (empty for webhooks).
    pub process_query_key: String,
}

/// An AI card as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct CardRecord {
    /// `outTrackId`.
    pub out_track_id: String,
    /// `cardTemplateId`.
    pub template_id: String,
    /// `openSpaceId`.
    pub open_space_id: String,
    /// `cardParamMap` as updated.
    pub params: Map<String, Value>,
    /// The streamed content by key (last full text).
    pub streamed: Map<String, Value>,
    /// Accepted streaming calls (a replayed guid does not count).
    pub stream_calls: usize,
    /// Finalized by a streaming call.
    pub finalized: bool,
    /// Streamed into after it was finalized (the platform reopens it: a client bug).
    pub reopened: bool,
}

/// One reaction put or recalled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmotionRecord {
    /// A recall (else a reply).
    pub recall: bool,
    /// `openMsgId`.
    pub msg_id: String,
    /// `openConversationId`.
    pub conversation_id: String,
    /// `emotionName`.
    pub name: String,
}

/// One accepted upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRecord {
    /// `type`.
    pub media_type: String,
    /// The part's file name.
    pub file_name: String,
    /// Bytes.
    pub size: usize,
    /// `media_id` returned.
    pub media_id: String,
}

/// A fault for the next call of one API (`FakeDingTalk::fail_next`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// A bare HTTP status with a non-JSON body (a gateway's page).
    Status(u16),
    /// A new-API error `{code, message}` with this status (and `requiredScopes` if any).
    Api {
        /// HTTP status.
        status: u16,
        /// The string code.
        code: String,
        /// `accessdenieddetail.requiredScopes`.
        scopes: Vec<String>,
    },
    /// HTTP 200 with this `errcode` (old API, webhooks).
    Errcode(i64),
    /// The request is read and never answered (the client's timeout fires).
    Hang,
    /// batchSend: 200 with the recipients in `flowControlledStaffIdList`.
    FlowControlled,
    /// Cards: 200 with `success:false` / `deliverResults[].success:false`.
    NotDelivered,
}

impl Fault {
    /// The platform's QPS refusal (spec §4.9).
    pub fn qps() -> Self {
        Fault::Api {
            status: 403,
            code: "Forbidden.AccessDenied.QpsLimitForApi".into(),
            scopes: vec![],
        }
    }

    /// A missing permission naming `scope`.
    pub fn missing_scope(scope: &str) -> Self {
        Fault::Api {
            status: 403,
            code: "Forbidden.AccessDenied.AccessTokenPermissionDenied".into(),
            scopes: vec![scope.to_string()],
        }
    }
}
