//! The chat-completions request's body, serialized once per turn straight from the messages.
//!
//! It was built as a `serde_json::Value` (every message copied into a tree, then the tree
//! written out by reqwest at each attempt); writing the borrowed messages directly skips the
//! tree, and the bytes are shared by the attempts of a retry.

use bytes::Bytes;
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::Value;

use super::{ChatMessage, Role};

/// What `POST /chat/completions` carries: the model, the messages, and a stream with usage;
/// `tools` only in a turn granted the owner tools (a stranger's request has no such key).
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a Value>,
    stream: bool,
    stream_options: StreamOptions,
}

/// What a turn with tools adds to a request: the function tools, and the rounds so far (each
/// the model's tool calls and the tools' results) after the new user message.
#[derive(Clone, Copy, Default)]
pub(super) struct Rounds<'a> {
    /// The `tools` array.
    pub(super) tools: Option<&'a Value>,
    /// The messages after the user's.
    pub(super) after: &'a [Value],
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The messages, the last one's content replaced by `parts` (text and images) when there are,
/// then `after`.
struct Messages<'a> {
    messages: &'a [ChatMessage],
    parts: Option<&'a Value>,
    after: &'a [Value],
}

/// The last message with its content parts in place of its text.
#[derive(Serialize)]
struct WithParts<'a> {
    role: Role,
    content: &'a Value,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.messages.len() + self.after.len()))?;
        let last = self.messages.len().saturating_sub(1);
        for (i, m) in self.messages.iter().enumerate() {
            match self.parts {
                Some(content) if i == last => seq.serialize_element(&WithParts {
                    role: m.role,
                    content,
                })?,
                _ => seq.serialize_element(m)?,
            }
        }
        for m in self.after {
            seq.serialize_element(m)?;
        }
        seq.end()
    }
}

/// The body for `model` and `messages` (the last one's content replaced by `parts`) and the
/// turn's tool `rounds`, as JSON.
pub(super) fn request_body(
    model: &str,
    messages: &[ChatMessage],
    parts: Option<&Value>,
    rounds: Rounds<'_>,
) -> Bytes {
    let body = Body {
        model,
        messages: Messages {
            messages,
            parts,
            after: rounds.after,
        },
        tools: rounds.tools,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    };
    // serde_json fails only on a map with non-string keys or a failing writer: neither here.
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages() -> Vec<ChatMessage> {
        vec![
            ChatMessage::new(Role::System, "be brief"),
            ChatMessage::new(Role::User, "你好 \"quoted\"\n"),
            ChatMessage::new(Role::Assistant, "hi"),
            ChatMessage::new(Role::User, "look"),
        ]
    }

    #[test]
    fn the_body_is_the_model_the_messages_and_a_stream_with_usage() {
        let m = messages();
        let got: Value = serde_json::from_slice(&request_body("gpt", &m, None, Rounds::default()))
            .expect("json");
        assert_eq!(
            got,
            json!({
                "model": "gpt",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "你好 \"quoted\"\n"},
                    {"role": "assistant", "content": "hi"},
                    {"role": "user", "content": "look"},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn parts_replace_only_the_last_messages_content() {
        let m = messages();
        let parts = json!([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]);
        let got: Value =
            serde_json::from_slice(&request_body("gpt", &m, Some(&parts), Rounds::default()))
                .expect("json");
        assert_eq!(
            got["messages"][3],
            json!({"role": "user", "content": parts})
        );
        assert_eq!(
            got["messages"][2],
            json!({"role": "assistant", "content": "hi"})
        );
        assert_eq!(got["messages"].as_array().map(Vec::len), Some(4));
    }

    #[test]
    fn tools_and_the_rounds_after_the_user_message_only_when_given() {
        let m = messages();
        let tools = json!([{"type": "function", "function": {"name": "schedule"}}]);
        let after = [
            json!({"role": "assistant", "content": null, "tool_calls": []}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "{}"}),
        ];
        let rounds = Rounds {
            tools: Some(&tools),
            after: &after,
        };
        let got: Value =
            serde_json::from_slice(&request_body("gpt", &m, None, rounds)).expect("json");
        assert_eq!(got["tools"], tools);
        assert_eq!(got["messages"][3]["content"], "look");
        assert_eq!(got["messages"][4], after[0]);
        assert_eq!(got["messages"][5], after[1]);
        let plain: Value =
            serde_json::from_slice(&request_body("gpt", &m, None, Rounds::default()))
                .expect("json");
        assert!(plain.get("tools").is_none(), "no tools key at all: {plain}");
    }
}
