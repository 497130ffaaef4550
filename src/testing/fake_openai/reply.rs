//! What the fake answers to one request: a script entry or a responder's choice.

use std::time::Duration;

use serde_json::{Value, json};

use super::stream::delta;

/// What the fake answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Streams `pieces` as content deltas, then a usage chunk when `usage` is set, then `[DONE]`.
    Stream {
        /// The answer, in the pieces it is streamed in.
        pieces: Vec<String>,
        /// (prompt, completion) tokens to report; `None` reports no usage.
        usage: Option<(u64, u64)>,
    },
    /// Answers with a status and a body, and a `Retry-After` header when set.
    Status {
        /// The HTTP status.
        status: u16,
        /// The `Retry-After` header value.
        retry_after: Option<String>,
        /// The body (an OpenAI-style JSON error).
        body: String,
    },
    /// Streams `first`, stalls for `wait` (tokio time), then streams `rest` and finishes.
    Slow {
        /// What is sent before the stall.
        first: String,
        /// How long the stream stalls.
        wait: Duration,
        /// What is sent after it.
        rest: String,
    },
    /// Sends `body` as the whole `text/event-stream` answer, byte for byte (malformed streams).
    Raw {
        /// The answer body.
        body: String,
    },
    /// Streams `text` (none when empty), then asks for each of `calls` (function name and
    /// arguments) as OpenAI does, finishing with `tool_calls` and usage.
    ToolCalls {
        /// What the model writes before its calls.
        text: String,
        /// (function name, arguments), in order.
        calls: Vec<(String, Value)>,
    },
}

impl Reply {
    /// Streams `text` in three pieces and reports usage (prompt 11, completion 7).
    pub fn text(text: &str) -> Reply {
        Reply::Stream {
            pieces: split3(text),
            usage: Some((11, 7)),
        }
    }

    /// Streams `text` and reports no usage (as servers that ignore `stream_options` do).
    pub fn text_without_usage(text: &str) -> Reply {
        Reply::Stream {
            pieces: split3(text),
            usage: None,
        }
    }

    /// An error status with an OpenAI-style body.
    pub fn status(status: u16) -> Reply {
        Reply::Status {
            status,
            retry_after: None,
            body: json!({"error": {"message": format!("fake status {status}"), "type": "fake"}})
                .to_string(),
        }
    }

    /// 429 with `Retry-After: <retry_after>`.
    pub fn too_many_requests(retry_after: &str) -> Reply {
        Reply::Status {
            status: 429,
            retry_after: Some(retry_after.to_string()),
            body: json!({"error": {"message": "Rate limit reached", "type": "requests"}})
                .to_string(),
        }
    }

    /// 400 with OpenAI's context-length error.
    pub fn context_length() -> Reply {
        Reply::Status {
            status: 400,
            retry_after: None,
            body: json!({"error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded"
            }})
            .to_string(),
        }
    }

    /// A 200 stream of `first` as a content delta, then an event cut off mid-JSON, then `[DONE]`:
    /// what a proxy that drops bytes produces.
    pub fn truncated_event(first: &str) -> Reply {
        let whole = delta(&format!("{first} and the rest"));
        let cut = whole.trim_end().len() - 12;
        let cut = (0..=cut)
            .rev()
            .find(|i| whole.is_char_boundary(*i))
            .unwrap_or(0);
        Reply::Raw {
            body: format!("{}{}\n\ndata: [DONE]\n\n", delta(first), &whole[..cut]),
        }
    }

    /// Asks for one call of `name` with `args`, writing no text.
    pub fn tool_call(name: &str, args: Value) -> Reply {
        Reply::ToolCalls {
            text: String::new(),
            calls: vec![(name.to_string(), args)],
        }
    }

    /// Streams `first`, then stalls for `wait` before finishing with `rest`.
    pub fn slow(first: &str, wait: Duration, rest: &str) -> Reply {
        Reply::Slow {
            first: first.to_string(),
            wait,
            rest: rest.to_string(),
        }
    }
}

pub(super) fn split3(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len().div_ceil(3).max(1);
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}
