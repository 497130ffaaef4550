//! The JSON frames of the long connection (spec §1.2): what the client writes, how a server
//! frame is cleaned and told apart (response or callback), and request ids.

use serde_json::{Map, Value, json};

/// Command names (§1.2, §4.1).
pub mod cmd {
    /// Authenticates the socket.
    pub const SUBSCRIBE: &str = "aibot_subscribe";
    /// Heartbeat.
    pub const PING: &str = "ping";
    /// Passive reply on a message callback's `req_id`.
    pub const RESPOND_MSG: &str = "aibot_respond_msg";
    /// Welcome reply on an `enter_chat` event's `req_id`.
    pub const RESPOND_WELCOME: &str = "aibot_respond_welcome_msg";
    /// Card update on a `template_card_event`'s `req_id`.
    pub const RESPOND_UPDATE: &str = "aibot_respond_update_msg";
    /// Proactive send.
    pub const SEND_MSG: &str = "aibot_send_msg";
    /// Upload: start.
    pub const UPLOAD_INIT: &str = "aibot_upload_media_init";
    /// Upload: one chunk.
    pub const UPLOAD_CHUNK: &str = "aibot_upload_media_chunk";
    /// Upload: finish.
    pub const UPLOAD_FINISH: &str = "aibot_upload_media_finish";
    /// Server push: a user's message.
    pub const MSG_CALLBACK: &str = "aibot_msg_callback";
    /// Server push: an event.
    pub const EVENT_CALLBACK: &str = "aibot_event_callback";
}

/// A frame the client writes. `body: None` leaves the key out (pings must carry none, §1.4).
pub fn request(cmd: &str, req_id: &str, body: Option<Value>) -> String {
    let mut frame = Map::new();
    frame.insert("cmd".into(), Value::from(cmd));
    frame.insert("headers".into(), json!({ "req_id": req_id }));
    if let Some(body) = body {
        frame.insert("body".into(), body);
    }
    Value::Object(frame).to_string()
}

/// A fresh request id, `<cmd>_<epoch ms>_<8 hex>` like the SDK's (§1.2): unique, and the
/// prefix says in a log what it was for.
pub fn new_req_id(cmd: &str) -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("{cmd}_{ms}_{:08x}", rand::random::<u32>())
}

/// Deletes the raw control bytes the SDK deletes before parsing (0x00–0x08, 0x0B–0x0D,
/// 0x0E–0x1F), since a strict JSON parser refuses them inside strings (§1.2). Tab and LF are
/// kept as the SDK keeps them, but escaped when they stand inside a string, where they would
/// fail the parse too (more lenient than the SDK, which would drop such a frame).
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(|c: char| c < ' ') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        match c {
            '\u{00}'..='\u{08}' | '\u{0B}'..='\u{1F}' => continue,
            '\t' if in_string => out.push_str("\\t"),
            '\n' if in_string => out.push_str("\\n"),
            _ => out.push(c),
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A server frame, told apart by the presence of `cmd` (§1.2).
#[derive(Debug, Clone, PartialEq)]
pub enum ServerFrame {
    /// The answer to one of our commands.
    Response {
        /// Our request id, echoed.
        req_id: String,
        /// `0` = success.
        errcode: i64,
        /// The server's words (never shown to a chat; logs only).
        errmsg: String,
        /// `body`, when the command returns one (uploads).
        body: Option<Value>,
    },
    /// A pushed callback.
    Callback {
        /// `aibot_msg_callback` or `aibot_event_callback` (or a command we do not know).
        cmd: String,
        /// The opaque handle replies must carry; kept verbatim.
        req_id: String,
        /// The callback body.
        body: Value,
        /// The cleaned JSON text of the whole frame, for the journal.
        raw: String,
    },
}

/// Why a server frame was not usable; never carries the frame's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Not JSON, or not an object.
    #[error("server frame is not a JSON object")]
    NotJson,
    /// No `headers.req_id`.
    #[error("server frame has no headers.req_id")]
    NoReqId,
}

/// Cleans and parses a server text frame.
pub fn parse(text: &str) -> Result<ServerFrame, FrameError> {
    let clean = sanitize(text);
    let value: Value = serde_json::from_str(&clean).map_err(|_| FrameError::NotJson)?;
    let Value::Object(mut obj) = value else {
        return Err(FrameError::NotJson);
    };
    let req_id = obj
        .get("headers")
        .and_then(|h| h.get("req_id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(FrameError::NoReqId)?;
    match obj.get("cmd").and_then(Value::as_str).map(str::to_owned) {
        Some(cmd) => Ok(ServerFrame::Callback {
            cmd,
            req_id,
            body: obj.remove("body").unwrap_or(Value::Null),
            raw: clean.into_owned(),
        }),
        None => Ok(ServerFrame::Response {
            req_id,
            // A response without a code is not a success we can count on; -1 is "busy".
            errcode: obj.get("errcode").and_then(Value::as_i64).unwrap_or(-1),
            errmsg: obj
                .get("errmsg")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            body: obj.remove("body"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_has_no_body_key() {
        let p: Value = serde_json::from_str(&request(cmd::PING, "r1", None)).unwrap();
        assert_eq!(p, json!({"cmd": "ping", "headers": {"req_id": "r1"}}));
    }

    #[test]
    fn control_bytes_are_stripped_but_tab_and_newline_stay() {
        let raw = "{\"cmd\":\"aibot_msg_callback\",\n\t\"headers\":{\"req_id\":\"R\"},\"body\":{\"t\":\"a\u{0B}b\u{1F}c\td\ne\u{0}\\\"q\\\\\"}}";
        assert!(
            serde_json::from_str::<Value>(raw).is_err(),
            "strict parser refuses"
        );
        let ServerFrame::Callback { body, req_id, .. } = parse(raw).unwrap() else {
            panic!("callback expected")
        };
        assert_eq!(req_id, "R");
        assert_eq!(body["t"], "abc\td\ne\"q\\");
    }

    #[test]
    fn responses_and_junk() {
        let r = parse(r#"{"headers":{"req_id":"x"},"errcode":846605,"errmsg":"invalid req_id"}"#);
        assert!(matches!(
            r,
            Ok(ServerFrame::Response {
                errcode: 846605,
                ..
            })
        ));
        assert_eq!(parse("[1,2]"), Err(FrameError::NotJson));
        assert_eq!(parse("nope"), Err(FrameError::NotJson));
        assert_eq!(parse(r#"{"cmd":"x"}"#), Err(FrameError::NoReqId));
        assert!(matches!(
            parse(r#"{"headers":{"req_id":"x"}}"#),
            Ok(ServerFrame::Response { errcode: -1, .. })
        ));
        let id = new_req_id("ping");
        assert!(id.starts_with("ping_") && id != new_req_id("ping"));
    }

    #[test]
    fn random_frames_never_panic() {
        use rand::Rng;
        let alphabet: Vec<char> = "{}[]\":,\\ \t\nabc0\u{0}\u{1}\u{1F}\u{7F}é字\u{FFFD}"
            .chars()
            .collect();
        let mut rng = rand::rng();
        let good = r#"{"cmd":"aibot_msg_callback","headers":{"req_id":"R"},"body":{"msgid":"m","from":{"userid":"u"},"msgtype":"text","text":{"content":"x"}}}"#;
        for _ in 0..5_000 {
            let n = rng.random_range(0..64);
            let noise: String = (0..n)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            let _ = parse(&noise);
            // A real frame with noise spliced in somewhere.
            let mut cut = rng.random_range(0..good.len());
            while !good.is_char_boundary(cut) {
                cut -= 1;
            }
            let spliced = format!("{}{noise}{}", &good[..cut], &good[cut..]);
            if let Ok(ServerFrame::Callback { cmd, body, .. }) = parse(&spliced) {
                let _ = crate::message::parse_callback(&cmd, &body);
            }
        }
    }
}
