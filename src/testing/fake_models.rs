//! Fake model APIs on loopback for driving the REAL ACP agents in tests: the OpenAI Responses API
//! (`POST /v1/responses`, for codex-acp) and the Anthropic Messages API (`POST /v1/messages`, for
//! claude-agent-acp), both streamed as server-sent events.
//!
//! Script: a conversation whose text holds `make a directory x` asks for the shell tool
//! (`exec_command {"cmd": "mkdir x"}` / `Bash {"command": "mkdir x"}`); once the tool's result
//! is in the conversation it answers `The directory x is made.`; anything else is answered
//! `hi from the fake model`.

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
    match script(&body, tool_done) {
        Ok(cmd) => {
            let args = json!({"cmd": cmd}).to_string();
            sse(vec![
                created,
                (
                    "response.output_item.done",
                    json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command", "arguments": args}}),
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
