//! What the Stream connection hands the caller: one push and the handle that ACKs it.
//!
//! Nothing is ACKed until the caller calls [`AckHandle::ack`], so the daemon journals first.
//! Robot messages are not re-pushed (spec §1.6), so ACK at once after the journal write
//! (within [`crate::limits::ACK_TARGET`]); a dropped handle sends nothing.

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::frame::{FrameKind, ack_frame};
use crate::callback::CardCallback;
use crate::message::{ParseError, RobotMessage};

/// Topic of robot messages (spec §2.1).
pub const ROBOT_TOPIC: &str = "/v1.0/im/bot/messages/get";
/// Topic of card callbacks (spec §4.7 B).
pub const CARD_CALLBACK_TOPIC: &str = "/v1.0/card/instances/callback";

/// One push (`EVENT` or `CALLBACK`) with its ACK handle. Its `Debug` leaves `data` out (it
/// carries message text).
pub struct Delivery {
    /// The frame type.
    pub kind: FrameKind,
    /// `headers.topic`.
    pub topic: String,
    /// `headers.messageId`: the id of this push (a re-push has a new one). For logs; the
    /// dedupe key is the message's own id ([`RobotMessage::dedupe_key`]).
    pub message_id: String,
    /// Which socket delivered it (counts up from 1 per [`super::StreamConnection`]).
    pub connection: u64,
    /// `data`: the JSON text of the payload.
    pub data: String,
    /// Sends the ACK on the socket that delivered the push.
    pub ack: AckHandle,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("kind", &self.kind)
            .field("topic", &self.topic)
            .field("message_id", &self.message_id)
            .field("connection", &self.connection)
            .field("data_bytes", &self.data.len())
            .finish_non_exhaustive()
    }
}

/// A parsed push.
#[derive(Debug)]
pub enum Inbound {
    /// A robot message (topic [`ROBOT_TOPIC`]).
    Message(Box<RobotMessage>),
    /// A card button press (topic [`CARD_CALLBACK_TOPIC`]).
    CardCallback(CardCallback),
    /// An `EVENT` push (not subscribed by default): its `eventType` header.
    Event {
        /// `headers.eventType`.
        event_type: String,
    },
    /// A `CALLBACK` on a topic this crate does not know.
    Other,
}

impl Delivery {
    /// Parses the payload. An unreadable payload is still ACKed by the caller (it will not
    /// read better later), after counting it as dropped.
    pub fn parse(&self) -> Result<Inbound, ParseError> {
        match (&self.kind, self.topic.as_str()) {
            (FrameKind::Callback, ROBOT_TOPIC) => {
                RobotMessage::parse(&self.data).map(|m| Inbound::Message(Box::new(m)))
            }
            (FrameKind::Callback, CARD_CALLBACK_TOPIC) => {
                CardCallback::parse(&self.data).map(Inbound::CardCallback)
            }
            (FrameKind::Event, _) => Ok(Inbound::Event {
                event_type: self.ack.event_type.clone().unwrap_or_default(),
            }),
            _ => Ok(Inbound::Other),
        }
    }
}

/// What the ACK says.
#[derive(Debug, Clone, PartialEq)]
pub enum AckReply {
    /// Handled: code 200 with the kind's `data` (robot message `{"response":null}`, card
    /// callback `{"response":{}}`, event `{"status":"SUCCESS"}`).
    Done,
    /// A card callback's answer: `{"response": <this>}` (see [`crate::callback::card_update`]).
    Card(Value),
    /// An event to redeliver later (`{"status":"LATER"}`); for other kinds the same as `Done`.
    Later,
    /// Code 404: topic not handled.
    NotHandled,
    /// Code 500: the client failed. The platform does not re-push robot messages for it.
    Failed,
}

/// Sends the one ACK of a push. Made by the connection; consumed by [`AckHandle::ack`].
#[derive(Debug)]
pub struct AckHandle {
    message_id: String,
    kind: FrameKind,
    topic: String,
    pub(crate) event_type: Option<String>,
    tx: mpsc::UnboundedSender<String>,
    received_at: Instant,
}

/// The socket that delivered the push is gone; the ACK cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the Stream connection that delivered this push is gone; its ACK was not sent")]
pub struct AckError;

impl AckHandle {
    pub(crate) fn new(
        message_id: String,
        kind: FrameKind,
        topic: String,
        event_type: Option<String>,
        tx: mpsc::UnboundedSender<String>,
    ) -> Self {
        Self {
            message_id,
            kind,
            topic,
            event_type,
            tx,
            received_at: Instant::now(),
        }
    }

    /// How long since the push arrived (the ACK is due within [`crate::limits::ACK_TARGET`]).
    pub fn age(&self) -> std::time::Duration {
        self.received_at.elapsed()
    }

    /// The ACK frame's JSON text.
    pub fn build(&self, reply: &AckReply) -> String {
        let event = self.kind == FrameKind::Event;
        let card = self.topic == CARD_CALLBACK_TOPIC;
        let (code, data) = match reply {
            AckReply::Done | AckReply::Later if event => {
                let status = if *reply == AckReply::Later {
                    "LATER"
                } else {
                    "SUCCESS"
                };
                (200, json!({"status": status, "message": "ok"}))
            }
            AckReply::Done | AckReply::Later if card => (200, json!({"response": {}})),
            AckReply::Done | AckReply::Later => (200, json!({"response": null})),
            AckReply::Card(v) => (200, json!({"response": v})),
            AckReply::NotHandled => (404, json!({"response": null})),
            AckReply::Failed => (500, json!({"response": null})),
        };
        ack_frame(&self.message_id, code, &data.to_string())
    }

    /// Queues the ACK on the delivering socket.
    pub fn ack(self, reply: AckReply) -> Result<(), AckError> {
        // A push without a messageId cannot be acknowledged (spec §1.6: one ACK per push
        // that has one).
        if self.message_id.is_empty() {
            return Ok(());
        }
        let frame = self.build(&reply);
        self.tx.send(frame).map_err(|_| AckError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(kind: FrameKind, topic: &str) -> (AckHandle, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let h = AckHandle::new("m-1".into(), kind, topic.into(), None, tx);
        (h, rx)
    }

    fn data(frame: &str) -> Value {
        let v: Value = serde_json::from_str(frame).unwrap();
        serde_json::from_str(v["data"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn each_kind_gets_its_data() {
        let (h, _rx) = handle(FrameKind::Callback, ROBOT_TOPIC);
        assert_eq!(data(&h.build(&AckReply::Done)), json!({"response": null}));
        let (h, _rx) = handle(FrameKind::Callback, CARD_CALLBACK_TOPIC);
        assert_eq!(data(&h.build(&AckReply::Done)), json!({"response": {}}));
        let (h, _rx) = handle(FrameKind::Event, "*");
        assert_eq!(data(&h.build(&AckReply::Later))["status"], "LATER");
        assert_eq!(data(&h.build(&AckReply::Done))["status"], "SUCCESS");
        let (h, mut rx) = handle(FrameKind::Callback, ROBOT_TOPIC);
        h.ack(AckReply::Failed).unwrap();
        let v: Value = serde_json::from_str(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(v["code"], 500);
        let (h, _rx) = handle(FrameKind::Callback, ROBOT_TOPIC);
        let d = Delivery {
            kind: FrameKind::Callback,
            topic: ROBOT_TOPIC.into(),
            message_id: "m-1".into(),
            connection: 1,
            data: r#"{"text":{"content":"secret words"}}"#.into(),
            ack: h,
        };
        assert!(!format!("{d:?}").contains("secret words"));
        let (h, rx) = handle(FrameKind::Callback, ROBOT_TOPIC);
        drop(rx);
        assert_eq!(h.ack(AckReply::Done), Err(AckError));
    }
}
