//! The proto2 `pbbp2.Frame` of the long connection, written by hand with prost.
//!
//! Fields 1-4 are proto2 `required`: prost's `required` label always emits them, even when 0,
//! because the Go decoder on the server rejects a frame missing any of them.

use prost::Message;

/// Frame `method` of control frames (ping, pong).
pub const METHOD_CONTROL: i32 = 0;
/// Frame `method` of data frames (events, card callbacks).
pub const METHOD_DATA: i32 = 1;

/// One `key: value` header of a frame.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct Header {
    /// Header name (`type`, `message_id`, `sum`, `seq`, `trace_id`, `biz_rt`, ...).
    #[prost(string, required, tag = "1")]
    pub key: String,
    /// Header value; always a string on the wire.
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// A `pbbp2.Frame`.
#[derive(Clone, PartialEq, Eq, Message)]
pub struct Frame {
    /// `SeqID`: echoed unchanged in an ACK.
    #[prost(uint64, required, tag = "1")]
    pub seq_id: u64,
    /// `LogID`: echoed unchanged in an ACK.
    #[prost(uint64, required, tag = "2")]
    pub log_id: u64,
    /// The `service_id` from the socket URL.
    #[prost(int32, required, tag = "3")]
    pub service: i32,
    /// [`METHOD_CONTROL`] or [`METHOD_DATA`].
    #[prost(int32, required, tag = "4")]
    pub method: i32,
    /// Headers, in the order received.
    #[prost(message, repeated, tag = "5")]
    pub headers: Vec<Header>,
    /// Ignored by the SDKs.
    #[prost(string, optional, tag = "6")]
    pub payload_encoding: Option<String>,
    /// Ignored by the SDKs.
    #[prost(string, optional, tag = "7")]
    pub payload_type: Option<String>,
    /// UTF-8 JSON.
    #[prost(bytes = "vec", optional, tag = "8")]
    pub payload: Option<Vec<u8>>,
    /// Ignored by the SDKs.
    #[prost(string, optional, tag = "9")]
    pub log_id_new: Option<String>,
}

/// The `type` header of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameType {
    /// Client keepalive.
    Ping,
    /// Server keepalive answer, maybe carrying ClientConfig.
    Pong,
    /// An event (including card clicks, as measured).
    Event,
    /// A card callback (reported by some users; handled like `Event`).
    Card,
}

impl FrameType {
    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameType::Ping => "ping",
            FrameType::Pong => "pong",
            FrameType::Event => "event",
            FrameType::Card => "card",
        }
    }

    /// Parses a header value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ping" => Some(FrameType::Ping),
            "pong" => Some(FrameType::Pong),
            "event" => Some(FrameType::Event),
            "card" => Some(FrameType::Card),
            _ => None,
        }
    }
}

/// A frame that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Not valid protobuf.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// A proto2 required field (1-4) is absent.
    #[error("frame lacks required field {0}")]
    MissingRequired(u32),
}

impl Header {
    /// Builds a header.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
        }
    }
}

impl Frame {
    /// The client ping: `method=0, SeqID=0, LogID=0, headers=[type=ping]`, no payload.
    pub fn ping(service: i32) -> Self {
        Frame {
            service,
            method: METHOD_CONTROL,
            headers: vec![Header::new("type", "ping")],
            ..Default::default()
        }
    }

    /// The first value of header `key`.
    pub fn header(&self, key: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.key == key)
            .map(|h| h.value.as_str())
    }

    /// The parsed `type` header.
    pub fn frame_type(&self) -> Option<FrameType> {
        self.header("type").and_then(FrameType::parse)
    }

    /// Encodes to protobuf bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode_to_vec()
    }

    /// Decodes protobuf bytes; unknown fields are skipped, a missing field 1-4 is an error.
    pub fn from_bytes(buf: &[u8]) -> Result<Self, FrameError> {
        check_required_fields(buf)?;
        Frame::decode(buf).map_err(|e| FrameError::Malformed(e.to_string()))
    }
}

/// Checks that top-level fields 1-4 are present, as the Go generated decoder does.
pub fn check_required_fields(buf: &[u8]) -> Result<(), FrameError> {
    let mut seen = [false; 4];
    let mut rest = buf;
    while !rest.is_empty() {
        let key = read_varint(&mut rest)?;
        let tag = key >> 3;
        if (1..=4).contains(&tag) {
            seen[(tag - 1) as usize] = true;
        }
        match key & 7 {
            0 => {
                read_varint(&mut rest)?;
            }
            1 => rest = skip(rest, 8)?,
            2 => {
                let len = read_varint(&mut rest)?;
                let len = usize::try_from(len).map_err(|_| malformed("length overflow"))?;
                rest = skip(rest, len)?;
            }
            5 => rest = skip(rest, 4)?,
            w => return Err(malformed(&format!("unsupported wire type {w}"))),
        }
    }
    match seen.iter().position(|s| !s) {
        Some(i) => Err(FrameError::MissingRequired(i as u32 + 1)),
        None => Ok(()),
    }
}

fn malformed(what: &str) -> FrameError {
    FrameError::Malformed(what.to_string())
}

fn skip(buf: &[u8], n: usize) -> Result<&[u8], FrameError> {
    buf.get(n..).ok_or_else(|| malformed("truncated field"))
}

fn read_varint(buf: &mut &[u8]) -> Result<u64, FrameError> {
    let mut value = 0u64;
    for i in 0..10 {
        let (&b, rest) = buf
            .split_first()
            .ok_or_else(|| malformed("truncated varint"))?;
        *buf = rest;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(malformed("varint too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_ping_still_writes_fields_1_to_4() {
        let bytes = Frame::ping(0).to_bytes();
        assert_eq!(&bytes[..8], &[0x08, 0, 0x10, 0, 0x18, 0, 0x20, 0]);
        let back = Frame::from_bytes(&bytes).unwrap();
        assert_eq!(back.frame_type(), Some(FrameType::Ping));
        assert_eq!(back.payload, None);
    }

    #[test]
    fn round_trip_with_headers_and_payload() {
        let f = Frame {
            seq_id: 7,
            log_id: u64::MAX,
            service: 33554678,
            method: METHOD_DATA,
            headers: vec![Header::new("type", "event"), Header::new("sum", "1")],
            payload: Some(b"{}".to_vec()),
            ..Default::default()
        };
        assert_eq!(Frame::from_bytes(&f.to_bytes()).unwrap(), f);
    }

    #[test]
    fn missing_required_field_is_refused() {
        // Only field 1 (SeqID = 1) and field 3.
        let bytes = [0x08, 0x01, 0x18, 0x01];
        assert_eq!(
            check_required_fields(&bytes),
            Err(FrameError::MissingRequired(2))
        );
        assert!(Frame::from_bytes(&[]).is_err());
    }

    #[test]
    fn unknown_fields_are_skipped() {
        let mut bytes = Frame::ping(5).to_bytes();
        // field 15, length-delimited, 3 bytes; field 16 varint; field 17 fixed32.
        bytes.extend_from_slice(&[
            0x7a, 3, b'a', b'b', b'c', 0x80, 0x01, 0x05, 0x8d, 0x01, 1, 2, 3, 4,
        ]);
        let f = Frame::from_bytes(&bytes).unwrap();
        assert_eq!(f.service, 5);
    }

    #[test]
    fn hostile_bytes_do_not_panic() {
        for bytes in [
            &[0xff; 12][..],
            &[0x0a, 0xff, 0xff, 0xff, 0x0f][..],
            &[0x0f][..],
            &[0x2a, 5, 1][..],
        ] {
            assert!(Frame::from_bytes(bytes).is_err());
        }
    }
}
