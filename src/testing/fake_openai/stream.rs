//! How the fake writes an answer: whole JSON, or server-sent events from a task.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Answered, Reply, split3};

/// The whole answer (a request without `stream`): `text`, and the `calls` when there are.
pub(super) fn whole_answer(
    text: &str,
    calls: &[(String, Value)],
    usage: Option<(u64, u64)>,
) -> Response {
    let mut message = json!({"role": "assistant", "content": text});
    let finish = if calls.is_empty() {
        "stop"
    } else {
        let whole: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": call_id(i), "type": "function",
                       "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        message["tool_calls"] = Value::Array(whole);
        "tool_calls"
    };
    let mut v = json!({
        "id": "fake-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    });
    if let Some(u) = usage {
        v["usage"] = usage_json(u);
    }
    axum::Json(v).into_response()
}

fn usage_json((p, c): (u64, u64)) -> Value {
    json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})
}

pub(super) fn delta(content: &str) -> String {
    let v = json!({"id": "fake-1", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]});
    format!("data: {v}\n\n")
}

/// Streams a reply as server-sent events from a task, so stalls do not block the handler.
pub(super) fn sse(reply: Reply, done: Answered) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let send = |s: String| {
            let tx = tx.clone();
            async move { tx.send(Bytes::from(s)).await.is_ok() }
        };
        let role = json!({"id": "fake-1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]});
        // A comment and CRLF line ends, as some servers send, ahead of the first event.
        if !send(format!(": fake keep-alive\r\n\r\ndata: {role}\r\n\r\n")).await {
            return;
        }
        let (pieces, usage, stall, calls) = match reply {
            Reply::Stream { pieces, usage } => (pieces, usage, None, Vec::new()),
            Reply::Slow { first, wait, rest } => (vec![first, rest], None, Some(wait), Vec::new()),
            Reply::ToolCalls { text, calls } => {
                let pieces = if text.is_empty() {
                    Vec::new()
                } else {
                    split3(&text)
                };
                (pieces, Some((12, 6)), None, calls)
            }
            Reply::Status { .. } | Reply::Raw { .. } => return,
        };
        for (i, p) in pieces.iter().enumerate() {
            let line = delta(p);
            // Split each event mid-line so clients must join partial lines.
            let mid = line.len() / 2;
            let mid = (mid..line.len())
                .find(|i| line.is_char_boundary(*i))
                .unwrap_or(line.len());
            if !send(line[..mid].to_string()).await || !send(line[mid..].to_string()).await {
                return;
            }
            if i == 0
                && let Some(wait) = stall
            {
                tokio::time::sleep(wait).await;
            }
        }
        for (i, (name, args)) in calls.iter().enumerate() {
            if !send(call_deltas(i, name, args)).await {
                return;
            }
        }
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        let stop = json!({"id": "fake-1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
        let mut tail = format!("data: {stop}\n\n");
        if let Some(u) = usage {
            let v = json!({"id": "fake-1", "object": "chat.completion.chunk", "choices": [], "usage": usage_json(u)});
            tail.push_str(&format!("data: {v}\n\n"));
        }
        tail.push_str("data: [DONE]\n\n");
        if send(tail).await {
            done.stamp();
        }
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn call_id(i: usize) -> String {
    format!("call_fake_{i}")
}

/// Call `i` as OpenAI streams it: the first delta names the id and function with empty
/// arguments, two more carry the arguments' halves.
fn call_deltas(i: usize, name: &str, args: &Value) -> String {
    let args = args.to_string();
    let mid = (args.len() / 2..args.len())
        .find(|m| args.is_char_boundary(*m))
        .unwrap_or(args.len());
    let chunk = |d: Value| {
        let v = json!({"id": "fake-1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [d]}, "finish_reason": null}]});
        format!("data: {v}\n\n")
    };
    let first = json!({"index": i, "id": call_id(i), "type": "function",
        "function": {"name": name, "arguments": ""}});
    [
        chunk(first),
        chunk(json!({"index": i, "function": {"arguments": &args[..mid]}})),
        chunk(json!({"index": i, "function": {"arguments": &args[mid..]}})),
    ]
    .concat()
}
