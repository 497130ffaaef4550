//! What the long connection hands the caller: a complete event and the handle that ACKs it.
//!
//! The ACK is sent only when the caller calls [`AckHandle::ack`], so a daemon can journal the
//! event first. Dropping the handle sends nothing; the platform re-pushes after 3 s.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::card::CardResponse;
use crate::event::{Event, EventError, parse_event};
use crate::frame::{Frame, FrameType, Header};

/// One complete event from the long connection.
#[derive(Debug)]
pub struct Delivery {
    /// The frame `type`: `Event` or `Card` (handle both the same way).
    pub kind: FrameType,
    /// Frame-level `message_id` (not the IM `om_…` id).
    pub frame_message_id: String,
    /// `trace_id` header, for logs.
    pub trace_id: Option<String>,
    /// `header.event_type` of the payload, if readable.
    pub event_type: Option<String>,
    /// The reassembled payload: the v2 event envelope JSON.
    pub payload: Vec<u8>,
    /// Sends the ACK for this event.
    pub ack: AckHandle,
}

impl Delivery {
    /// Parses the payload.
    pub fn parse(&self) -> Result<Event, EventError> {
        parse_event(&self.payload)
    }
}

/// The result the ACK reports.
#[derive(Debug, Clone, PartialEq)]
pub enum AckResponse {
    /// `{"code":200}` (a callback gets `data` = `{}`, since a bare ACK may fail the click).
    Ok,
    /// `{"code":500}`: the platform re-pushes.
    Failed,
    /// `{"code":200,"data":base64(json)}`: a callback's response (toast, replacement card).
    Callback(Value),
}

impl AckResponse {
    /// A card-click response.
    pub fn card(response: &CardResponse) -> Self {
        AckResponse::Callback(response.to_json())
    }
}

/// The ACK could not be queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the connection that delivered this event is gone; the platform will re-push it")]
pub struct AckError;

/// Sends the one ACK of a delivered event on the socket that delivered it.
#[derive(Debug)]
pub struct AckHandle {
    frame: Frame,
    tx: mpsc::UnboundedSender<Frame>,
    completed_at: Instant,
    callback: bool,
}

impl AckHandle {
    pub(crate) fn new(frame: Frame, tx: mpsc::UnboundedSender<Frame>, callback: bool) -> Self {
        Self {
            frame,
            tx,
            completed_at: Instant::now(),
            callback,
        }
    }

    /// The headers of the frame being acknowledged, in order.
    pub fn headers(&self) -> &[Header] {
        &self.frame.headers
    }

    /// The ACK frame: the same frame plus `biz_rt`, its payload replaced by the response.
    pub fn build(&self, response: &AckResponse) -> Frame {
        let mut frame = self.frame.clone();
        let biz_rt = self.completed_at.elapsed().as_millis();
        frame
            .headers
            .push(Header::new("biz_rt", biz_rt.to_string()));
        let body = match response {
            AckResponse::Ok if self.callback => json!({"code": 200, "data": B64.encode("{}")}),
            AckResponse::Ok => json!({"code": 200}),
            AckResponse::Failed => json!({"code": 500}),
            AckResponse::Callback(v) => json!({"code": 200, "data": B64.encode(v.to_string())}),
        };
        frame.payload = Some(body.to_string().into_bytes());
        frame
    }

    /// Queues the ACK on the delivering socket; fails if that socket has closed.
    pub fn ack(self, response: AckResponse) -> Result<(), AckError> {
        let frame = self.build(&response);
        self.tx.send(frame).map_err(|_| AckError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_echoes_frame_and_adds_biz_rt() {
        let frame = Frame {
            seq_id: 9,
            log_id: 11,
            service: 3,
            method: 1,
            headers: vec![
                Header::new("type", "event"),
                Header::new("instance_id", "i-1"),
            ],
            ..Default::default()
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let h = AckHandle::new(frame.clone(), tx, false);
        h.ack(AckResponse::Ok).unwrap();
        let ack = rx.try_recv().unwrap();
        assert_eq!(
            (ack.seq_id, ack.log_id, ack.service, ack.method),
            (9, 11, 3, 1)
        );
        assert_eq!(&ack.headers[..2], &frame.headers[..]);
        assert_eq!(ack.headers[2].key, "biz_rt");
        assert_eq!(ack.payload.as_deref(), Some(&br#"{"code":200}"#[..]));
    }

    #[test]
    fn callback_ack_carries_data() {
        let (tx, rx) = mpsc::unbounded_channel();
        let h = AckHandle::new(Frame::default(), tx, true);
        let f = h.build(&AckResponse::Ok);
        let v: Value = serde_json::from_slice(f.payload.as_deref().unwrap()).unwrap();
        assert_eq!(B64.decode(v["data"].as_str().unwrap()).unwrap(), b"{}");
        let f = h.build(&AckResponse::Callback(json!({"toast": {"type": "info"}})));
        let v: Value = serde_json::from_slice(f.payload.as_deref().unwrap()).unwrap();
        let data: Value =
            serde_json::from_slice(&B64.decode(v["data"].as_str().unwrap()).unwrap()).unwrap();
        assert_eq!(data["toast"]["type"], "info");
        drop(rx);
        assert_eq!(h.ack(AckResponse::Failed), Err(AckError));
    }
}
