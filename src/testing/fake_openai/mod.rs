//! A fake OpenAI-compatible chat completions server on loopback, for tests of anything that talks
//! to the `openai` backend.
//!
//! It answers `POST /v1/chat/completions` (and `/chat/completions`) from a script of [`Reply`]s,
//! one per request; with the script empty it asks the responder set by
//! [`FakeOpenAi::respond_with`] (replies decided by what was asked), else streams
//! `echo: <last user text>` with usage. `GET /v1/models` lists one model (what `doctor` asks);
//! [`FakeOpenAi::require_key`] makes it refuse other keys with 401. Every request is recorded, so tests assert on the model,
//! the messages (system prompt, history) and `stream_options`. [`FakeOpenAi::answer_only`]
//! holds requests unanswered, so a test can stop the caller while a request is in flight.
//! [`Reply::Raw`] sends a stream byte for byte (e.g. [`Reply::truncated_event`]);
//! [`Reply::ToolCalls`] asks for function calls, and the request that answers them records
//! their results (`tool_results`) beside the `tools` it offered.
//!
//! ```no_run
//! # async fn demo() {
//! use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
//! let fake = FakeOpenAi::start().await.expect("bind");
//! fake.push(Reply::too_many_requests("2"));
//! fake.push(Reply::text("Hello there"));
//! let base_url = fake.base_url(); // "http://127.0.0.1:PORT/v1"
//! // ... run the code under test against base_url ...
//! assert_eq!(fake.requests().len(), 2);
//! # }
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::agent::{ChatMessage, Role};

mod reply;
mod stream;

pub use reply::Reply;
use reply::split3;
use stream::{sse, whole_answer};

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `model`.
    pub model: String,
    /// `messages`, in order; a message sent as content parts reads as its text parts joined.
    pub messages: Vec<ChatMessage>,
    /// The bytes of every `image_url` data-URI part, in order (what the model would see).
    pub images: Vec<Vec<u8>>,
    /// The MIME types of those parts.
    pub image_types: Vec<String>,
    /// `stream`.
    pub stream: bool,
    /// `stream_options`, as sent.
    pub stream_options: Option<Value>,
    /// The `Authorization` header, as sent.
    pub authorization: Option<String>,
    /// `tools`, as sent (`None`: the request had no such key).
    pub tools: Option<Value>,
    /// The `role: tool` messages, in order: (`tool_call_id`, `content`).
    pub tool_results: Vec<(String, String)>,
    /// When it arrived (tokio time, so paused-clock tests can measure waits).
    pub at: tokio::time::Instant,
    /// When the fake handed its answer's last piece to its HTTP server (a stream's `[DONE]`,
    /// a whole answer once built): where the model's part ends. `None` until then.
    pub answered: Option<tokio::time::Instant>,
}

/// Decides the reply to a request when the script is empty; `None` falls back to the echo.
type Responder = Arc<dyn Fn(&RecordedRequest) -> Option<Reply> + Send + Sync>;

struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: watch::Sender<Vec<RecordedRequest>>,
    responder: Mutex<Option<Responder>>,
    /// Requests at this index or later (in arrival order) wait for it to grow; `None`: none wait.
    answer_limit: watch::Sender<Option<usize>>,
    /// The key `GET /models` accepts; `None` accepts any request.
    models_key: Mutex<Option<String>>,
    /// Connections open now (see [`FakeOpenAi::settled`]).
    connections: watch::Sender<usize>,
}

/// A running fake server; stops when dropped.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FakeOpenAi {
    /// Binds `127.0.0.1:0` and serves until dropped.
    pub async fn start() -> std::io::Result<FakeOpenAi> {
        let shared = Arc::new(Shared {
            script: Mutex::new(VecDeque::new()),
            requests: watch::channel(Vec::new()).0,
            responder: Mutex::new(None),
            answer_limit: watch::channel(None).0,
            models_key: Mutex::new(None),
            connections: watch::channel(0).0,
        });
        let app = Router::new()
            .route("/v1/models", get(models))
            .route("/models", get(models))
            .route("/v1/chat/completions", post(completions))
            .route("/chat/completions", post(completions))
            // A request with a photo is megabytes of base64; axum's 2 MB default would refuse it.
            .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let listener = super::connections::Counted::new(listener, shared.connections.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeOpenAi { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues replies for the next requests, in order.
    pub fn push(&self, reply: Reply) {
        if let Ok(mut s) = self.shared.script.lock() {
            s.push_back(reply);
        }
    }

    /// Decides replies from the request itself once the script is empty (e.g. from markers in
    /// the last user message); `f` returning `None` falls back to the echo.
    pub fn respond_with(
        &self,
        f: impl Fn(&RecordedRequest) -> Option<Reply> + Send + Sync + 'static,
    ) {
        if let Ok(mut r) = self.shared.responder.lock() {
            *r = Some(Arc::new(f));
        }
    }

    /// Answers only the first `n` requests (counted from the start, in arrival order); later
    /// ones are recorded and then held without an answer until the limit grows. `None` answers
    /// everything, including what is held.
    pub fn answer_only(&self, n: Option<usize>) {
        self.shared.answer_limit.send_replace(n);
    }

    /// Makes `GET /models` answer 401 unless the request carries `Authorization: Bearer <key>`.
    pub fn require_key(&self, key: &str) {
        if let Ok(mut k) = self.shared.models_key.lock() {
            *k = Some(key.to_string());
        }
    }

    /// Every chat completions request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.borrow().clone()
    }

    /// Resolves when the next request arrives after this call, so a test checks its condition
    /// again then rather than on a clock. Armed when it returns: get it before checking, and a
    /// request in between still wakes it.
    pub fn changed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut requests = self.shared.requests.subscribe();
        async move {
            // The sender lives as long as the fake; gone, no request arrives any more.
            if requests.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Returns when every connection made to the fake before the call has ended, so every
    /// request a killed client wrote before it died is recorded (call `answer_only(None)`
    /// first, or a held request keeps its connection). It asks `GET /v1/models` on a
    /// connection of its own: the kernel hands connections to the fake in the order they were
    /// made, so once that one is answered every earlier one was taken; and a request is
    /// recorded inside its connection's task, so once that connection has ended its request
    /// was recorded or never will be (dropped unrecorded when the client hung up mid-request).
    pub async fn settled(&self) -> std::io::Result<()> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = tokio::net::TcpStream::connect(self.addr).await?;
        tcp.write_all(b"GET /v1/models HTTP/1.1\r\nhost: fake\r\nconnection: close\r\n\r\n")
            .await?;
        tcp.read_to_end(&mut Vec::new()).await?;
        drop(tcp);
        let mut open = self.shared.connections.subscribe();
        let _ = open.wait_for(|n| *n == 0).await;
        Ok(())
    }

    /// Waits until at least `n` requests have arrived.
    pub async fn wait_requests(&self, n: usize) {
        let mut rx = self.shared.requests.subscribe();
        let _ = rx.wait_for(|r| r.len() >= n).await;
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `GET /models`: one model, or 401 for a key other than the required one.
async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let required = shared.models_key.lock().ok().and_then(|k| k.clone());
    let sent = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    if let Some(key) = required
        && sent != Some(format!("Bearer {key}").as_str())
    {
        let body = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}});
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    axum::Json(json!({"object": "list", "data": [{"id": "m", "object": "model"}]})).into_response()
}

/// The messages, each content-parts array read as its text, and every data-URI image part as
/// (MIME type, bytes). A part that is not a data URI of valid base64 is recorded as no bytes, so
/// a test comparing bytes fails.
fn read_messages(v: Option<&Value>) -> (Vec<ChatMessage>, Vec<(String, Vec<u8>)>) {
    use base64::Engine;
    let mut messages = Vec::new();
    let mut images = Vec::new();
    for m in v.and_then(Value::as_array).into_iter().flatten() {
        let role: Option<Role> = m
            .get("role")
            .cloned()
            .and_then(|r| serde_json::from_value(r).ok());
        let Some(role) = role else { continue };
        let content = match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                let mut text = Vec::new();
                for p in parts {
                    match p["type"].as_str() {
                        Some("text") => {
                            text.push(p["text"].as_str().unwrap_or_default().to_string())
                        }
                        Some("image_url") => {
                            let url = p["image_url"]["url"].as_str().unwrap_or_default();
                            let (mime, data) = url
                                .strip_prefix("data:")
                                .and_then(|u| u.split_once(";base64,"))
                                .unwrap_or(("", ""));
                            let bytes = base64::engine::general_purpose::STANDARD
                                .decode(data)
                                .unwrap_or_default();
                            images.push((mime.to_string(), bytes));
                        }
                        _ => {}
                    }
                }
                text.join("\n")
            }
            _ => String::new(),
        };
        messages.push(ChatMessage::new(role, content));
    }
    (messages, images)
}

/// The `role: tool` messages' (`tool_call_id`, `content`).
fn tool_results(v: Option<&Value>) -> Vec<(String, String)> {
    let text = |m: &Value, k: &str| m[k].as_str().unwrap_or_default().to_string();
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| (text(m, "tool_call_id"), text(m, "content")))
        .collect()
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let (messages, images) = read_messages(v.get("messages"));
    let (image_types, images): (Vec<String>, Vec<Vec<u8>>) = images.into_iter().unzip();
    let stream = v.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default();
    let mut index = 0;
    shared.requests.send_modify(|r| {
        index = r.len();
        r.push(RecordedRequest {
            model: v["model"].as_str().unwrap_or_default().to_string(),
            messages,
            images,
            image_types,
            stream,
            stream_options: v.get("stream_options").cloned(),
            authorization: headers
                .get(header::AUTHORIZATION)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string),
            tools: v.get("tools").cloned(),
            tool_results: tool_results(v.get("messages")),
            at: tokio::time::Instant::now(),
            answered: None,
        })
    });
    let mut limit = shared.answer_limit.subscribe();
    let _ = limit.wait_for(|l| l.is_none_or(|n| index < n)).await;
    let responder = shared.responder.lock().ok().and_then(|r| r.clone());
    let recorded = shared.requests.borrow().get(index).cloned();
    let reply = shared
        .script
        .lock()
        .ok()
        .and_then(|mut s| s.pop_front())
        .or_else(|| responder.zip(recorded).and_then(|(f, r)| f(&r)))
        .unwrap_or_else(|| Reply::Stream {
            pieces: split3(&format!("echo: {last_user}")),
            usage: Some((10, 5)),
        });
    let done = Answered {
        shared: shared.clone(),
        index,
    };
    let response = match reply {
        Reply::Status {
            status,
            retry_after,
            body,
        } => {
            let mut resp = (
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response();
            if let Some(ra) = retry_after.and_then(|r| r.parse().ok()) {
                resp.headers_mut().insert(header::RETRY_AFTER, ra);
            }
            resp
        }
        Reply::Raw { body } => Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from(body))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        Reply::Stream { pieces, usage } if !stream => whole_answer(&pieces.concat(), &[], usage),
        Reply::Slow { first, rest, .. } if !stream => whole_answer(&(first + &rest), &[], None),
        Reply::ToolCalls { text, calls } if !stream => whole_answer(&text, &calls, Some((12, 6))),
        reply => return sse(reply, done),
    };
    done.stamp();
    response
}

/// Stamps a recorded request's `answered` once its answer is handed over.
struct Answered {
    shared: Arc<Shared>,
    index: usize,
}

impl Answered {
    fn stamp(self) {
        let at = tokio::time::Instant::now();
        // Not a new request: nobody waiting for requests is woken.
        self.shared.requests.send_if_modified(|r| {
            if let Some(q) = r.get_mut(self.index) {
                q.answered = Some(at);
            }
            false
        });
    }
}
