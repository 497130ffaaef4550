//! Fake model APIs on loopback for driving the REAL ACP agents in tests: the OpenAI Responses API
//! (`POST /v1/responses`, for codex-acp) and the Anthropic Messages API (`POST /v1/messages`, for
//! claude-agent-acp), both streamed as server-sent events.
//!
//! Script: a conversation whose text holds `make a directory x` asks for the shell tool
//! (`exec_command {"cmd": "mkdir x"}` / `Bash {"command": "mkdir x"}`); once the tool's result
//! is in the conversation it answers `The directory x is made.`; anything else is answered
//! `hi from the fake model`.
//!
//! The owner tools (Responses API only, for codex-acp): a conversation holding
//! [`REMIND_ASK`] calls the tool among the request's `tools` whose name ends in `schedule`
//! (the bridge's MCP tool, however the agent prefixes it) with [`REMINDER_AT`] and
//! [`REMINDER`]; once its output is in the conversation it answers [`REMINDED`]; offered no
//! such tool, it answers [`CANNOT_REMIND`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// The answer after the tool ran.
pub const MADE: &str = "The directory x is made.";
/// The answer after the tool was refused.
pub const NOT_RUN: &str = "I did not run it.";
/// The answer to anything else.
pub const HI: &str = "hi from the fake model";

/// What the owner asks for in the owner tools' script.
pub const REMIND_ASK: &str = "remind me at 12:30";
/// When the script schedules the reminder (the `at` argument).
pub const REMINDER_AT: &str = "12:30";
/// The reminder's text.
pub const REMINDER: &str = "Stand up";
/// The answer once the reminder is scheduled.
pub const REMINDED: &str = "I will remind you at 12:30.";
/// The answer when no scheduling tool was offered.
pub const CANNOT_REMIND: &str = "I cannot set reminders here.";

/// A running fake model server; stops when dropped.
pub struct FakeModels {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Value>>>,
    task: JoinHandle<()>,
}

impl FakeModels {
    /// Binds 127.0.0.1 on a free port and serves both APIs.
    pub async fn start() -> std::io::Result<FakeModels> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let app = Router::new()
            .route("/v1/responses", post(responses))
            .route("/v1/messages", post(messages))
            .with_state(requests.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeModels {
            addr,
            requests,
            task,
        })
    }

    /// `http://127.0.0.1:PORT` (codex wants `/v1` appended; claude takes it as is).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request body so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for FakeModels {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn sse(events: Vec<(&str, Value)>) -> Response {
    let mut body = String::new();
    for (name, data) in events {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// What the script says for a conversation: `Some(cmd)` to call the tool, else the answer text.
fn script(body: &Value, tool_done: bool) -> Result<&'static str, &'static str> {
    if tool_done {
        return Err(MADE);
    }
    if body.to_string().contains("make a directory x") {
        Ok("mkdir x")
    } else {
        Err(HI)
    }
}

async fn responses(State(log): State<Arc<Mutex<Vec<Value>>>>, body: axum::Json<Value>) -> Response {
    let body = body.0;
    log.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(body.clone());
    let tool_done = body["input"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["type"] == "function_call_output"));
    let usage = json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15});
    let created = (
        "response.created",
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
    );
    let completed = (
        "response.completed",
        json!({"type": "response.completed", "response": {"id": "resp_1", "usage": usage}}),
    );
    let script = match reminder(&body, tool_done) {
        Some(step) => step,
        None => script(&body, tool_done).map(|cmd| Call {
            namespace: None,
            name: "exec_command".into(),
            args: json!({"cmd": cmd}),
        }),
    };
    match script {
        Ok(call) => {
            let mut item = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                "name": call.name, "arguments": call.args.to_string()});
            if let Some(ns) = call.namespace {
                item["namespace"] = json!(ns);
            }
            sse(vec![
                created,
                (
                    "response.output_item.done",
                    json!({"type": "response.output_item.done", "output_index": 0,
                    "item": item}),
                ),
                completed,
            ])
        }
        Err(text) => sse(vec![
            created,
            (
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0,
                "item": {"type": "message", "role": "assistant", "id": "msg_1", "content": []}}),
            ),
            (
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": text}),
            ),
            (
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "message", "role": "assistant", "id": "msg_1",
                    "content": [{"type": "output_text", "text": text}]}}),
            ),
            completed,
        ]),
    }
}

/// The owner tools' script for a Responses request: `None` when it is not about a reminder, else
/// the call to make or the answer.
fn reminder(body: &Value, tool_done: bool) -> Option<Result<Call, &'static str>> {
    if !body["input"].to_string().contains(REMIND_ASK) {
        return None;
    }
    if tool_done {
        return Some(Err(REMINDED));
    }
    let Some((namespace, name)) = find_schedule(&body["tools"], None) else {
        return Some(Err(CANNOT_REMIND));
    };
    let args = json!({"at": REMINDER_AT, "text": REMINDER});
    Some(Ok(Call {
        namespace,
        name,
        args,
    }))
}

/// A function call the script makes: codex lists an MCP server's tools in a `namespace` tool
/// (`mcp__<server>`), and a call of one names that namespace beside the tool.
struct Call {
    namespace: Option<String>,
    name: String,
    args: Value,
}

/// The offered tool whose name ends in `schedule`, as `namespace.name` when it sits in one.
pub fn schedule_tool(tools: &Value) -> Option<String> {
    find_schedule(tools, None).map(|(ns, name)| match ns {
        Some(ns) => format!("{ns}.{name}"),
        None => name,
    })
}

fn find_schedule(tools: &Value, namespace: Option<&str>) -> Option<(Option<String>, String)> {
    let items = tools.as_array()?;
    items.iter().find_map(|t| {
        let name = t["name"].as_str().unwrap_or_default();
        if t["type"] == "namespace" {
            return find_schedule(&t["tools"], Some(name));
        }
        name.ends_with("schedule")
            .then(|| (namespace.map(str::to_string), name.to_string()))
    })
}

async fn messages(State(log): State<Arc<Mutex<Vec<Value>>>>, body: axum::Json<Value>) -> Response {
    let body = body.0;
    log.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(body.clone());
    let last_user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .cloned()
        .unwrap_or(Value::Null);
    let results: Vec<&Value> = last_user["content"]
        .as_array()
        .map(|c| c.iter().filter(|b| b["type"] == "tool_result").collect())
        .unwrap_or_default();
    let refused = results.iter().any(|b| b["is_error"] == true);
    let model = body["model"]
        .as_str()
        .unwrap_or("claude-sonnet-4-6")
        .to_string();
    let reply = if refused {
        Err(NOT_RUN)
    } else {
        script(&last_user, !results.is_empty())
    };
    if body["stream"] != true {
        let text = reply.err().unwrap_or(HI);
        return axum::Json(json!({"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}}))
        .into_response();
    }
    let start = (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let (block, delta, stop) = match reply {
        Ok(cmd) => (
            json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}),
            json!({"type": "input_json_delta", "partial_json": json!({"command": cmd, "description": "Make the directory"}).to_string()}),
            "tool_use",
        ),
        Err(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
    };
    sse(vec![
        start,
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}
