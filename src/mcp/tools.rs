//! The owner tools themselves, one path for both ways an agent reaches them: the MCP server
//! (`mcp/server.rs`, ACP agents) and the OpenAI backend's function tools. Each tool goes through
//! the daemon's [`OwnerService`] or [`ConfirmService`]; nothing here stores or sends on its own.
//!
//! The names, argument names and result shapes are what models are told and call: keep them
//! stable (a rename breaks a prompt or a script that learned them).

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::confirm::ConfirmService;
use crate::owner::OwnerService;
use crate::protocol::{ConfirmState, SendInfo};

/// The longest an `ask_owner` may wait (seconds): the confirm service's own bound.
const MAX_ASK_SECONDS: u64 = crate::confirm::MAX_TIMEOUT_SECS;

pub use crate::agent::tool_access::ToolSpec;

/// The five tools, in the order they are listed.
pub fn specs() -> Vec<ToolSpec> {
    let text = json!({"type": "string", "description": "The message, plain text."});
    vec![
        ToolSpec {
            name: "send_to_owner",
            description: "Send a message to the owner now, on the route that can deliver.",
            parameters: object(json!({"text": text}), &["text"]),
        },
        ToolSpec {
            name: "ask_owner",
            description: "Ask the owner a yes/no question and wait for the answer. \
                          Returns yes, no or expired (no answer in time counts as no).",
            parameters: object(
                json!({
                    "question": {"type": "string"},
                    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": MAX_ASK_SECONDS}
                }),
                &["question", "timeout_seconds"],
            ),
        },
        ToolSpec {
            name: "schedule",
            description: "Send a message to the owner at a time: HH:MM (the next such time), \
                          YYYY-MM-DD HH:MM[:SS] in the bridge's timezone, or RFC 3339.",
            parameters: object(
                json!({"at": {"type": "string"}, "text": text}),
                &["at", "text"],
            ),
        },
        ToolSpec {
            name: "list_scheduled",
            description: "List the messages scheduled for the owner and not yet sent.",
            parameters: object(json!({}), &[]),
        },
        ToolSpec {
            name: "cancel_scheduled",
            description: "Cancel a scheduled message by its id (s-N) before it is due.",
            parameters: object(json!({"id": {"type": "string"}}), &["id"]),
        },
    ]
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}

/// The tools bound to the daemon's services. Made by the daemon (or a test) once; cloned into
/// each MCP session and each OpenAI turn that was granted them.
#[derive(Clone)]
pub struct OwnerTools {
    owner: Arc<OwnerService>,
    confirm: Option<Arc<ConfirmService>>,
    /// Fires when the daemon stops: an `ask_owner` waiting then withdraws its question.
    stop: CancellationToken,
}

impl OwnerTools {
    /// The tools over the daemon's services; `confirm` is none when questions are off
    /// (`ask_owner` then answers so).
    pub fn new(
        owner: Arc<OwnerService>,
        confirm: Option<Arc<ConfirmService>>,
        stop: CancellationToken,
    ) -> Self {
        OwnerTools {
            owner,
            confirm,
            stop,
        }
    }

    /// Runs tool `name` with `args` (a JSON object). `Ok` is the result for the model (JSON
    /// text); `Err` says what failed, also for the model, which may correct and retry.
    pub async fn call(&self, name: &str, args: &Value) -> Result<String, String> {
        let result = match name {
            "send_to_owner" => self.send(string(args, "text")?, None).await,
            "schedule" => {
                let at = string(args, "at")?;
                self.send(string(args, "text")?, Some(at)).await
            }
            "list_scheduled" => {
                let all = self
                    .owner
                    .scheduled()
                    .await
                    .map_err(|e| e.message().to_string())?;
                Ok(json!({"scheduled": all.iter().map(send_json).collect::<Vec<_>>()}))
            }
            "cancel_scheduled" => {
                let id = string(args, "id")?;
                let info = self
                    .owner
                    .cancel(id)
                    .await
                    .map_err(|e| e.message().to_string())?;
                Ok(send_json(&info))
            }
            "ask_owner" => self.ask(args).await,
            other => Err(format!(
                "there is no tool {other}; the tools are: {}",
                names()
            )),
        }?;
        Ok(result.to_string())
    }

    async fn send(&self, text: &str, at: Option<&str>) -> Result<Value, String> {
        let info = self
            .owner
            .send(text, None, at, None)
            .await
            .map_err(|e| e.message().to_string())?;
        Ok(send_json(&info))
    }

    async fn ask(&self, args: &Value) -> Result<Value, String> {
        let question = string(args, "question")?;
        let timeout = args
            .get("timeout_seconds")
            .and_then(Value::as_u64)
            .filter(|t| (1..=MAX_ASK_SECONDS).contains(t))
            .ok_or_else(|| {
                format!("timeout_seconds must be a whole number from 1 to {MAX_ASK_SECONDS}")
            })?;
        let Some(confirm) = &self.confirm else {
            return Err("questions are off on this bridge ([confirm] is not set up)".into());
        };
        let info = confirm
            .ask_and_wait(question, None, Some(timeout), &self.stop)
            .await
            .map_err(|e| e.to_string())?;
        let answer = match info.state {
            ConfirmState::Yes => "yes",
            ConfirmState::No => "no",
            ConfirmState::Expired => "expired",
            ConfirmState::Withdrawn => "withdrawn",
            ConfirmState::Failed => "failed",
            ConfirmState::Pending | ConfirmState::Unknown => "unknown",
        };
        Ok(json!({"id": info.id, "answer": answer}))
    }
}

fn names() -> String {
    specs()
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn string<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the argument {key} (a string) is missing"))
}

fn send_json(info: &SendInfo) -> Value {
    serde_json::to_value(info).unwrap_or_else(|_| json!({"id": info.id}))
}
