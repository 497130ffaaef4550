//! The SCV agent protocol's messages (`agent-protocol.md`): what the bridge sends, and the events
//! it reads, parsed leniently so a newer server's extra fields and event types do no harm.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::Usage;

/// The protocol version this client speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Who the client is, in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// The client's name.
    pub name: String,
    /// The client's version.
    pub version: String,
}

/// A message from the bridge to the agent server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ClientMessage {
    /// Opens the conversation.
    #[serde(rename = "initialize")]
    Initialize {
        /// Echoed by the answer.
        request_id: String,
        /// [`PROTOCOL_VERSION`].
        protocol_version: u32,
        /// Who we are.
        client: ClientInfo,
    },
    /// Starts the connection's one session.
    #[serde(rename = "session.start")]
    SessionStart {
        /// Echoed by the answer.
        request_id: String,
        /// The account's workspace.
        cwd: String,
        /// `WeChat` / `Feishu`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel: Option<String>,
        /// The session must not use tools.
        #[serde(default)]
        no_tools: bool,
        /// Approve every approval request of the session.
        #[serde(default)]
        auto_approve: bool,
    },
    /// Asks for an answer to `prompt`.
    #[serde(rename = "turn.start")]
    TurnStart {
        /// Echoed by `turn.started`.
        request_id: String,
        /// From `session.started`.
        session_id: Value,
        /// The user's text.
        prompt: String,
        /// Files the owner sent, saved in the workspace (omitted when there are none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<WireAttachment>,
    },
    /// Stops a running turn.
    #[serde(rename = "turn.cancel")]
    TurnCancel {
        /// A fresh id.
        request_id: String,
        /// The session.
        session_id: Value,
        /// The turn to stop.
        turn_id: Value,
    },
    /// Answers an `approval.requested`.
    #[serde(rename = "approval.resolve")]
    ApprovalResolve {
        /// A fresh id.
        request_id: String,
        /// The session.
        session_id: Value,
        /// The approval answered.
        approval_id: Value,
        /// Whether the call may run.
        approved: bool,
    },
    /// Forgets the session's history and queue.
    #[serde(rename = "session.clear")]
    SessionClear {
        /// A fresh id.
        request_id: String,
        /// The session.
        session_id: Value,
    },
}

/// An event from the server, reduced to what the bridge acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The answer to `initialize`.
    Initialized {
        /// The server's protocol version.
        protocol_version: Option<u32>,
    },
    /// The answer to `session.start`.
    SessionStarted {
        /// The session's id, used in every later message.
        session_id: Value,
    },
    /// A turn began.
    TurnStarted {
        /// The `turn.start` it answers.
        request_id: Option<Value>,
        /// The turn's id.
        turn_id: Value,
    },
    /// Streamed answer text.
    Delta {
        /// The turn.
        turn_id: Option<Value>,
        /// The text.
        content: String,
    },
    /// The complete text of one step.
    Completed {
        /// The turn.
        turn_id: Option<Value>,
        /// The text.
        content: String,
    },
    /// A tool call waits for a decision.
    ApprovalRequested {
        /// What to answer.
        approval_id: Value,
        /// The tool's name (for logs; the summary is not logged).
        name: String,
        /// What the call will do, for the person deciding.
        summary: String,
        /// The server's risk label, when it sent one.
        risk: Option<String>,
    },
    /// The turn finished.
    TurnCompleted {
        /// The turn.
        turn_id: Option<Value>,
        /// Token usage, when the server reports it.
        usage: Option<Usage>,
    },
    /// The turn was cancelled.
    TurnCancelled {
        /// The turn.
        turn_id: Option<Value>,
    },
    /// The turn failed.
    TurnFailed {
        /// The turn.
        turn_id: Option<Value>,
        /// For people.
        message: String,
    },
    /// A request failed, or the server is going away (`fatal`).
    Error {
        /// The request it answers, if any.
        request_id: Option<Value>,
        /// For people.
        message: String,
        /// The connection is unusable.
        fatal: bool,
    },
    /// Anything else (queue, tool display, event types from newer servers).
    Other(String),
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: String,
    request_id: Option<Value>,
    seq: Option<u64>,
    session_id: Option<Value>,
    turn_id: Option<Value>,
    content: Option<String>,
    approval_id: Option<Value>,
    name: Option<String>,
    summary: Option<String>,
    risk: Option<Value>,
    code: Option<Value>,
    message: Option<String>,
    fatal: Option<bool>,
    protocol_version: Option<u32>,
    usage: Option<Value>,
}

/// Parses one line into its event and `seq`; `None` when it is not a JSON object with a `type`.
pub fn parse_event(line: &str) -> Option<(Event, Option<u64>)> {
    let raw: RawEvent = serde_json::from_str(line).ok()?;
    let text = |s: Option<String>| s.unwrap_or_default();
    let message = |r: &RawEvent| {
        let code = r.code.as_ref().map(|c| match c.as_str() {
            Some(s) => s.to_string(),
            None => c.to_string(),
        });
        match (code, r.message.clone()) {
            (Some(c), Some(m)) => format!("{m} ({c})"),
            (None, Some(m)) => m,
            (Some(c), None) => c,
            (None, None) => "no reason given".into(),
        }
    };
    let seq = raw.seq;
    let ev = match raw.kind.as_str() {
        "initialized" => Event::Initialized {
            protocol_version: raw.protocol_version,
        },
        "session.started" => Event::SessionStarted {
            session_id: raw.session_id.unwrap_or(Value::Null),
        },
        "turn.started" => Event::TurnStarted {
            request_id: raw.request_id,
            turn_id: raw.turn_id.unwrap_or(Value::Null),
        },
        "assistant.delta" => Event::Delta {
            turn_id: raw.turn_id,
            content: text(raw.content),
        },
        "assistant.completed" => Event::Completed {
            turn_id: raw.turn_id,
            content: text(raw.content),
        },
        "approval.requested" => Event::ApprovalRequested {
            approval_id: raw.approval_id.unwrap_or(Value::Null),
            name: text(raw.name),
            summary: text(raw.summary),
            risk: raw.risk.map(|r| match r {
                Value::String(s) => s,
                other => other.to_string(),
            }),
        },
        "turn.completed" => Event::TurnCompleted {
            turn_id: raw.turn_id,
            usage: raw.usage.as_ref().and_then(usage),
        },
        "turn.cancelled" => Event::TurnCancelled {
            turn_id: raw.turn_id,
        },
        "turn.failed" => Event::TurnFailed {
            message: message(&raw),
            turn_id: raw.turn_id,
        },
        "error" => Event::Error {
            message: message(&raw),
            request_id: raw.request_id,
            fatal: raw.fatal.unwrap_or(false),
        },
        other => Event::Other(other.to_string()),
    };
    Some((ev, seq))
}

/// Reads a usage object named either way (`prompt_tokens`/`input_tokens`, ...).
fn usage(v: &Value) -> Option<Usage> {
    let get = |a: &str, b: &str| v.get(a).or_else(|| v.get(b)).and_then(Value::as_u64);
    let prompt = get("prompt_tokens", "input_tokens");
    let completion = get("completion_tokens", "output_tokens");
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    let (p, c) = (prompt.unwrap_or(0), completion.unwrap_or(0));
    Some(Usage {
        prompt_tokens: p,
        completion_tokens: c,
        total_tokens: v
            .get("total_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(p + c),
        estimated: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_serialize_as_the_spec_says() {
        let m = ClientMessage::SessionStart {
            request_id: "r2".into(),
            cwd: "/w".into(),
            channel: Some("WeChat".into()),
            no_tools: true,
            auto_approve: false,
        };
        assert_eq!(
            serde_json::to_value(&m).ok(),
            Some(
                serde_json::json!({"type": "session.start", "request_id": "r2", "cwd": "/w",
                "channel": "WeChat", "no_tools": true, "auto_approve": false})
            )
        );
    }

    #[test]
    fn parses_events_leniently() {
        let (ev, seq) = parse_event(
            r#"{"type":"assistant.delta","turn_id":"t1","content":"hi","seq":4,"extra":1}"#,
        )
        .expect("event");
        assert_eq!(seq, Some(4));
        assert_eq!(
            ev,
            Event::Delta {
                turn_id: Some("t1".into()),
                content: "hi".into()
            }
        );
        assert_eq!(
            parse_event(r#"{"type":"future.thing","seq":5}"#).map(|e| e.0),
            Some(Event::Other("future.thing".into()))
        );
        assert_eq!(parse_event("not json"), None);
        let (ev, _) = parse_event(
            r#"{"type":"turn.completed","turn_id":"t1","usage":{"input_tokens":3,"output_tokens":4}}"#,
        )
        .expect("event");
        let Event::TurnCompleted { usage: Some(u), .. } = ev else {
            panic!("usage missing: {ev:?}");
        };
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (3, 4, 7)
        );
        let (ev, _) = parse_event(
            r#"{"type":"approval.requested","approval_id":"a1","call_id":"c1","name":"shell","risk":"high","cwd":"/","summary":"rm -rf build"}"#,
        )
        .expect("event");
        assert_eq!(
            ev,
            Event::ApprovalRequested {
                approval_id: "a1".into(),
                name: "shell".into(),
                summary: "rm -rf build".into(),
                risk: Some("high".into()),
            }
        );
        let (ev, _) =
            parse_event(r#"{"type":"turn.failed","turn_id":"t1","code":"model","message":"boom"}"#)
                .expect("event");
        assert_eq!(
            ev,
            Event::TurnFailed {
                turn_id: Some("t1".into()),
                message: "boom (model)".into()
            }
        );
    }
}

/// One file of `turn.start`'s `attachments`: where it was saved and what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireAttachment {
    /// The absolute path inside the session's `cwd`.
    pub path: String,
    /// `image`, `file`, `audio` or `video`.
    pub kind: crate::agent::MediaKind,
    /// The MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
}

impl From<&crate::agent::Attachment> for WireAttachment {
    fn from(a: &crate::agent::Attachment) -> Self {
        WireAttachment {
            path: a.path.to_string_lossy().into_owned(),
            kind: a.kind,
            mime: a.mime.clone(),
        }
    }
}
