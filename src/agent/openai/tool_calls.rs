//! The model's tool calls as chat completions streams them, and the messages that carry a round
//! (the calls, then each tool's result) back to the model.
//!
//! A call arrives in pieces: the first delta of an `index` names its `id` and function, later
//! ones add to `arguments`. Servers that send each call whole (no `index`) are read too: a delta
//! with an `id` starts a call, one without continues the last.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::tool_access::ToolSpec;
use crate::agent::{AgentError, AgentErrorKind};

/// The most calls one answer may ask for: the five tools a few times over. More is a model gone
/// wrong, and each call may reach the owner's phone.
const MAX_CALLS: usize = 16;
/// The most bytes of one call's arguments (a text for the owner is well under this).
const MAX_ARGUMENT_BYTES: usize = 64 * 1024;

/// One function call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ToolCall {
    /// The model's id for it; the result names it.
    pub(super) id: String,
    /// The tool.
    pub(super) name: String,
    /// Its arguments as the model wrote them (JSON text, checked when it runs).
    pub(super) arguments: String,
}

/// One streamed piece of a call (`choices[].delta.tool_calls[]`).
#[derive(Debug, Deserialize)]
pub(super) struct CallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

/// The calls of one answer so far, in the order the model numbered them.
#[derive(Debug, Default)]
pub(super) struct Calls {
    calls: Vec<ToolCall>,
}

impl Calls {
    /// Adds one streamed piece.
    pub(super) fn add(&mut self, d: CallDelta) -> Result<(), AgentError> {
        let at = match d.index {
            Some(i) => i,
            None if d.id.is_some() || self.calls.is_empty() => self.calls.len(),
            None => self.calls.len() - 1,
        };
        if at >= MAX_CALLS {
            return Err(too_much(format!(
                "the model asked for more than {MAX_CALLS} tool calls in one answer"
            )));
        }
        while self.calls.len() <= at {
            let n = self.calls.len();
            self.calls.push(ToolCall {
                id: format!("call_{n}"),
                name: String::new(),
                arguments: String::new(),
            });
        }
        let call = &mut self.calls[at];
        if let Some(id) = d.id.filter(|i| !i.is_empty()) {
            call.id = id;
        }
        if let Some(f) = d.function {
            if let Some(name) = f.name {
                call.name.push_str(&name);
            }
            if let Some(args) = f.arguments {
                if call.arguments.len() + args.len() > MAX_ARGUMENT_BYTES {
                    return Err(too_much(format!(
                        "the model's tool call arguments passed {} KiB",
                        MAX_ARGUMENT_BYTES / 1024
                    )));
                }
                call.arguments.push_str(&args);
            }
        }
        Ok(())
    }

    /// Every call asked for, leaving none.
    pub(super) fn take(&mut self) -> Vec<ToolCall> {
        std::mem::take(&mut self.calls)
    }
}

fn too_much(what: String) -> AgentError {
    AgentError::new(
        AgentErrorKind::Failed,
        format!("{what}; nothing more was run, and the next message is tried again"),
    )
}

/// The `tools` array of a request: each spec as a function tool.
pub(super) fn function_tools(specs: &[ToolSpec]) -> Value {
    specs
        .iter()
        .map(|s| {
            json!({"type": "function", "function": {
                "name": s.name, "description": s.description, "parameters": s.parameters}})
        })
        .collect()
}

/// The model's turn that asked for `calls` (with the text it wrote first, if any).
pub(super) fn assistant_message(text: &str, calls: &[ToolCall]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect();
    let content = (!text.is_empty()).then_some(text);
    json!({"role": "assistant", "content": content, "tool_calls": calls})
}

/// One tool's result for the model: what the tool returned, or `{"error": why}`.
pub(super) fn tool_message(call: &ToolCall, result: &Result<String, String>) -> Value {
    let content = match result {
        Ok(text) => text.clone(),
        Err(why) => json!({ "error": why }).to_string(),
    };
    json!({"role": "tool", "tool_call_id": call.id, "content": content})
}

/// The call's arguments as a JSON object (an empty text counts as `{}`), or why not.
pub(super) fn arguments(call: &ToolCall) -> Result<Value, String> {
    if call.arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) | Err(_) => Err("the arguments are not a JSON object; send them as one".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(v: Value) -> CallDelta {
        serde_json::from_value(v).expect("a delta")
    }

    #[test]
    fn pieces_by_index_make_whole_calls() {
        let mut c = Calls::default();
        for d in [
            json!({"index": 0, "id": "a", "type": "function", "function": {"name": "schedule", "arguments": ""}}),
            json!({"index": 1, "id": "b", "function": {"name": "list_scheduled", "arguments": "{}"}}),
            json!({"index": 0, "function": {"arguments": "{\"at\":\"12:30\","}}),
            json!({"index": 0, "function": {"arguments": "\"text\":\"x\"}"}}),
        ] {
            c.add(delta(d)).expect("added");
        }
        let calls = c.take();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("a", "schedule")
        );
        assert_eq!(
            arguments(&calls[0]),
            Ok(json!({"at": "12:30", "text": "x"}))
        );
        assert_eq!(arguments(&calls[1]), Ok(json!({})));
        assert!(c.take().is_empty());
    }

    #[test]
    fn whole_calls_without_an_index_and_without_an_id() {
        let mut c = Calls::default();
        c.add(delta(json!({"function": {"name": "list_scheduled"}})))
            .expect("added");
        c.add(delta(json!({"function": {"arguments": "{}"}})))
            .expect("continues the last");
        c.add(delta(json!({"id": "z", "function": {"name": "send_to_owner", "arguments": "{\"text\":\"hi\"}"}})))
            .expect("a new call");
        let calls = c.take();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id, "call_0", "an id is made up when none came");
        assert_eq!(calls[0].arguments, "{}");
        assert_eq!(calls[1].id, "z");
    }

    #[test]
    fn too_many_calls_or_too_long_arguments_fail_the_turn() {
        let mut c = Calls::default();
        let e = c
            .add(delta(json!({"index": MAX_CALLS, "id": "x"})))
            .expect_err("too many");
        assert_eq!(e.kind, AgentErrorKind::Failed);
        let long = "x".repeat(MAX_ARGUMENT_BYTES + 1);
        let e = c
            .add(delta(json!({"index": 0, "function": {"arguments": long}})))
            .expect_err("too long");
        assert_eq!(e.kind, AgentErrorKind::Failed);
    }

    #[test]
    fn bad_arguments_are_the_models_to_correct() {
        let call = |a: &str| ToolCall {
            id: "c".into(),
            name: "schedule".into(),
            arguments: a.into(),
        };
        assert!(arguments(&call("[1]")).is_err());
        assert!(arguments(&call("{\"at\":")).is_err());
        let m = tool_message(&call("{}"), &Err("no such id".into()));
        assert_eq!(m["tool_call_id"], "c");
        assert_eq!(m["content"], json!({"error": "no such id"}).to_string());
        let a = assistant_message("", &[call("{}")]);
        assert_eq!(a["content"], Value::Null);
        assert_eq!(a["tool_calls"][0]["function"]["name"], "schedule");
    }
}
