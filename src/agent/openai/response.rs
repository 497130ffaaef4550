//! Reading the server's answers: the streamed chunks, error bodies, `Retry-After`, token estimates.

use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;
use tracing::debug;

use std::path::PathBuf;

use super::tool_calls::{CallDelta, Calls, ToolCall};
use crate::agent::{AgentError, AgentErrorKind, Answer, AnswerCap};

/// The most bytes of an error body we read (enough for any JSON error object).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The most bytes of a round's text shown back to the model with its tool calls (a sentence
/// before a call is the usual; more is cut there, the chat still gets it all).
const MAX_ROUND_TEXT: usize = 16 * 1024;

/// A rough token count: about four ASCII characters per token, one per other character (CJK).
pub fn estimate_tokens(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
    });
    ascii.div_ceil(4) + other
}

/// The text, tool calls and usage of a stream so far.
pub(super) struct Assembly {
    /// The answer, bounded by its cap, reporting each piece that fits as it arrives (silent for
    /// completions nobody streams, such as mail triage). In a turn with tools it runs on across
    /// the rounds, so the chat sees one answer.
    text: Answer,
    usage: Option<ServerUsage>,
    pub(super) finished: bool,
    /// The tool calls of this round.
    calls: Calls,
    /// This round's text alone (what the model is shown it wrote before its calls), bounded.
    round_text: String,
    /// An earlier round wrote text: this round's starts a new paragraph.
    separate: bool,
}

impl Default for Assembly {
    /// Silent, and bounded only in memory.
    fn default() -> Self {
        Assembly::capped(&AnswerCap::quiet(super::MAX_COMPLETION_BYTES))
    }
}

impl Assembly {
    /// An assembly of an answer under `cap`.
    pub(super) fn capped(cap: &AnswerCap) -> Self {
        Assembly {
            text: cap.start(),
            usage: None,
            finished: false,
            calls: Calls::default(),
            round_text: String::new(),
            separate: false,
        }
    }

    /// The next round's assembly: the same answer, nothing else of this round.
    pub(super) fn next_round(self) -> Assembly {
        let separate = !self.text.text().is_empty();
        Assembly {
            text: self.text,
            usage: None,
            finished: false,
            calls: Calls::default(),
            round_text: String::new(),
            separate,
        }
    }

    /// The tool calls this round asked for (none for a final answer), taken.
    pub(super) fn take_calls(&mut self) -> Vec<ToolCall> {
        self.calls.take()
    }

    /// This round's text.
    pub(super) fn round_text(&self) -> &str {
        &self.round_text
    }

    /// The usage the server reported for this round.
    pub(super) fn usage(&self) -> Option<ServerUsage> {
        self.usage
    }

    fn push(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if std::mem::take(&mut self.separate) {
            self.text.push("\n\n");
        }
        if self.round_text.len() + piece.len() <= MAX_ROUND_TEXT {
            self.round_text.push_str(piece);
        }
        self.text.push(piece);
    }

    /// Takes one event's payload; true at `[DONE]`.
    pub(super) fn event(&mut self, payload: &str) -> Result<bool, AgentError> {
        if payload.trim() == "[DONE]" {
            self.finished = true;
            return Ok(true);
        }
        if payload.trim().is_empty() {
            return Ok(false);
        }
        // An event that does not parse lost part of the answer (a truncated chunk, a proxy's
        // garbage): retrying is the only way to the whole text, as after a 503. The payload may
        // hold answer text, so it is not logged.
        let chunk: StreamChunk = serde_json::from_str(payload).map_err(|e| {
            debug!(error = %e, "an unparsable stream event");
            AgentError::new(
                AgentErrorKind::Unavailable,
                "the agent's answer stream did not parse (a broken event)",
            )
        })?;
        if let Some(err) = chunk.error {
            return Err(AgentError::new(
                AgentErrorKind::Failed,
                format!(
                    "the agent failed mid-answer: {}",
                    short_message(&err.to_string())
                ),
            ));
        }
        for c in chunk.choices {
            if let Some(d) = c.delta {
                if let Some(t) = d.content {
                    self.push(&t);
                }
                for call in d.tool_calls.into_iter().flatten() {
                    self.calls.add(call)?;
                }
            }
            if c.finish_reason.is_some() {
                self.finished = true;
            }
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        Ok(false)
    }

    /// The answer (with the line saying where the rest is, when it did not fit), the file
    /// holding the rest, and the usage.
    pub(super) fn finish(self) -> Result<(String, Vec<PathBuf>, Option<ServerUsage>), AgentError> {
        if self.text.text().trim().is_empty() {
            return Err(AgentError::new(
                AgentErrorKind::Failed,
                "the agent answered with no text",
            ));
        }
        let (text, files) = self.text.finish();
        Ok((text, files, self.usage))
    }
}

#[derive(Deserialize)]
struct StreamChunk {
    #[serde(default)]
    choices: Vec<StreamChoice>,
    usage: Option<ServerUsage>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct StreamChoice {
    delta: Option<StreamDelta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct StreamDelta {
    content: Option<String>,
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub(super) struct ServerUsage {
    #[serde(default)]
    pub(super) prompt_tokens: u64,
    #[serde(default)]
    pub(super) completion_tokens: u64,
    pub(super) total_tokens: Option<u64>,
}

/// A reqwest error without its URL (it names the host, which is fine, but keep messages short).
pub(super) fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "the body broke off"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(e);
    let mut last = None;
    while let Some(s) = source {
        last = Some(s.to_string());
        source = s.source();
    }
    match last {
        Some(cause) => format!("{kind} ({cause})"),
        None => kind.to_string(),
    }
}

/// `Retry-After` as seconds or an HTTP date.
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let ms = (at.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds();
    Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of an error answer.
pub(super) async fn error_detail(resp: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = MAX_ERROR_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Whether a 400 body says the prompt exceeds the model's context (OpenAI, vLLM, DashScope wording).
pub(super) fn is_context_length(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("context_length_exceeded")
        || b.contains("maximum context length")
        || b.contains("context length")
        || b.contains("context window")
        || b.contains("too many tokens")
}

/// The `error.message` of a JSON error body, or the body itself, cut short.
pub(super) fn short_message(body: &str) -> String {
    let msg = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let m = v
                .get("error")
                .map(|e| e.get("message").unwrap_or(e).clone());
            m.or_else(|| v.get("message").cloned())
        })
        .map(|m| {
            m.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| m.to_string())
        })
        .unwrap_or_else(|| body.trim().to_string());
    let mut short: String = msg.chars().take(200).collect();
    if short.len() < msg.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, RETRY_AFTER};

    #[test]
    fn estimates_ascii_and_cjk() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("你好"), 2);
    }

    #[test]
    fn recognises_context_errors_and_short_messages() {
        let body = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#;
        assert!(is_context_length(body));
        assert!(!is_context_length(r#"{"error":{"message":"bad model"}}"#));
        assert_eq!(
            short_message(r#"{"error":{"message":"bad model"}}"#),
            "bad model"
        );
        assert_eq!(short_message("plain"), "plain");
        assert!(short_message(&"x".repeat(500)).chars().count() <= 201);
    }

    #[test]
    fn a_truncated_event_fails_the_stream_as_unavailable() {
        let mut acc = Assembly::default();
        assert_eq!(
            acc.event(r#"{"choices":[{"delta":{"content":"Hel"}}]}"#),
            Ok(false)
        );
        assert_eq!(
            acc.event(""),
            Ok(false),
            "an empty data line carries nothing"
        );
        let err = acc
            .event(r#"{"choices":[{"delta":{"content":"lo wor"#)
            .expect_err("truncated JSON");
        assert_eq!(err.kind, AgentErrorKind::Unavailable);
        assert!(!err.message.contains("lo wor"), "{}", err.message);
    }

    #[test]
    fn each_delta_is_reported_as_it_arrives_and_the_whole_text_kept() {
        let (events, mut rx) = crate::agent::TurnEvents::channel();
        let cap = AnswerCap::new(1 << 20, None, crate::words::Lang::En, events);
        let mut acc = Assembly::capped(&cap);
        for p in [
            r#"{"choices":[{"delta":{"role":"assistant"}}]}"#,
            r#"{"choices":[{"delta":{"content":"你好, "}}]}"#,
            r#"{"choices":[{"delta":{"content":"world"},"finish_reason":"stop"}]}"#,
        ] {
            assert_eq!(acc.event(p), Ok(false));
        }
        let got: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(
            got,
            [
                crate::agent::TurnEvent::Text("你好, ".into()),
                crate::agent::TurnEvent::Text("world".into())
            ]
        );
        assert_eq!(
            acc.finish().map(|(t, _, _)| t),
            Ok("你好, world".to_string())
        );
    }

    #[test]
    fn parses_retry_after() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, "2".parse().expect("header"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(RETRY_AFTER, "soon".parse().expect("header"));
        assert_eq!(retry_after(&h), None);
    }
}
