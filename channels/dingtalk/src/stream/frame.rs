//! The Stream wire format (spec §1.5, §1.6): downstream frames parsed leniently (unknown headers
//! kept, `time` as string or number, `data` a JSON string) and ACK frames built exactly.

use serde_json::{Map, Value, json};

/// `type` of a downstream frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameKind {
    /// `SYSTEM`: ping, disconnect, and perhaps others.
    System,
    /// `EVENT`: org events (redelivered until `SUCCESS`).
    Event,
    /// `CALLBACK`: robot messages and card callbacks.
    Callback,
    /// Anything else (kept, logged, not delivered).
    Other(String),
}

/// One downstream frame. Its `Debug` leaves `data` out (it carries message text).
#[derive(Clone)]
pub struct Downstream {
    /// The frame type.
    pub kind: FrameKind,
    /// Every header, unknown ones included, as strings.
    pub headers: Map<String, Value>,
    /// `data`: JSON text, parsed a second time by the reader.
    pub data: String,
}

impl std::fmt::Debug for Downstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downstream")
            .field("kind", &self.kind)
            .field("topic", &self.topic())
            .field("message_id", &self.message_id())
            .field("data_bytes", &self.data.len())
            .finish_non_exhaustive()
    }
}

impl Downstream {
    /// Parses a text frame; `None` when it is not a frame (logged by the caller as a protocol
    /// error, never a panic).
    pub fn parse(text: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(text).ok()?;
        let kind = match v.get("type")?.as_str()? {
            "SYSTEM" => FrameKind::System,
            "EVENT" => FrameKind::Event,
            "CALLBACK" => FrameKind::Callback,
            other => FrameKind::Other(other.chars().take(40).collect()),
        };
        let headers = v
            .get("headers")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let data = match v.get("data") {
            Some(Value::String(s)) => s.clone(),
            // Not the documented string: keep it as text so the reader sees what came.
            Some(other) => other.to_string(),
            None => String::new(),
        };
        Some(Self {
            kind,
            headers,
            data,
        })
    }

    /// A header as a string (numbers accepted: `time` is sometimes one).
    pub fn header(&self, key: &str) -> Option<String> {
        match self.headers.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// `headers.topic`, or empty.
    pub fn topic(&self) -> String {
        self.header("topic").unwrap_or_default()
    }

    /// `headers.messageId`, or empty (a push without one gets no ACK).
    pub fn message_id(&self) -> String {
        self.header("messageId").unwrap_or_default()
    }
}

/// The ACK frame for `message_id` (spec §1.6): `code`, the echoed id, `data` a JSON *string*.
pub fn ack_frame(message_id: &str, code: u16, data: &str) -> String {
    let message = match code {
        200 => "OK",
        404 => "topic not handled",
        _ => "client error",
    };
    json!({
        "code": code,
        "headers": {"messageId": message_id, "contentType": "application/json"},
        "message": message,
        "data": data,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_parse_of_headers_and_data() {
        let f = Downstream::parse(
            r#"{"specVersion":"1.0","type":"CALLBACK","headers":{"topic":"/t","messageId":"m1","time":1700000000000,"x-new":"k"},"data":"{\"a\":1}","extra":true}"#,
        )
        .unwrap();
        assert_eq!(f.kind, FrameKind::Callback);
        assert_eq!(f.header("time").as_deref(), Some("1700000000000"));
        assert_eq!(f.header("x-new").as_deref(), Some("k"));
        assert_eq!((f.topic().as_str(), f.message_id().as_str()), ("/t", "m1"));
        assert_eq!(f.data, r#"{"a":1}"#);
        for bad in [
            "",
            "null",
            "[]",
            "{}",
            r#"{"type":7}"#,
            "\u{0}",
            &"{".repeat(10_000),
        ] {
            assert!(Downstream::parse(bad).is_none(), "{bad:.20}");
        }
        let odd = Downstream::parse(r#"{"type":"NEW","headers":[],"data":{"x":1}}"#).unwrap();
        assert_eq!(odd.kind, FrameKind::Other("NEW".into()));
        assert_eq!(odd.data, r#"{"x":1}"#);
    }

    #[test]
    fn ack_data_is_a_string() {
        let a: Value = serde_json::from_str(&ack_frame("m1", 200, r#"{"response":null}"#)).unwrap();
        assert_eq!(a["code"], 200);
        assert_eq!(a["headers"]["messageId"], "m1");
        assert_eq!(a["headers"]["contentType"], "application/json");
        assert_eq!(a["data"], r#"{"response":null}"#);
    }
}
