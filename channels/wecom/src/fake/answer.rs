//! [`Answer`]: what the fake says back to one frame (code, `errmsg`, body) and what the socket
//! does after it. The command rules and the send rules both answer with it, and the socket
//! loop writes it, so it sits below all three.

use serde_json::Value;

/// The answer to one frame.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) code: i64,
    pub(crate) errmsg: &'static str,
    pub(crate) body: Option<Value>,
    /// Close this socket ~1 s after answering (a refused subscribe, §7.3).
    pub(crate) close_after: bool,
    /// Another socket this subscribe supersedes.
    pub(crate) supersede: Option<u64>,
}

impl Answer {
    pub(crate) fn ok() -> Self {
        Self {
            errmsg: "ok",
            ..Self::default()
        }
    }

    pub(crate) fn with_body(body: Value) -> Self {
        Self {
            body: Some(body),
            ..Self::ok()
        }
    }

    pub(crate) fn err(code: i64, errmsg: &'static str) -> Self {
        Self {
            code,
            errmsg,
            ..Self::default()
        }
    }
}
