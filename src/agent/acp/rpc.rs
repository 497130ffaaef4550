//! JSON-RPC 2.0 over newline-delimited JSON, as ACP frames it: our requests with their pending
//! answers, the agent's requests and notifications routed to the chat session they name.
//!
//! A thin layer of our own rather than the `agent-client-protocol` crate: the wire is small, and
//! the crate turns on serde_json's `preserve_order` for the whole build (feature unification),
//! which would change how every other `serde_json::Value` in the daemon is ordered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::protocol::{FrameError, FrameReader};

/// JSON-RPC "method not found": our answer to fs/terminal requests and anything unknown.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// What the agent sent for one session.
#[derive(Debug)]
pub enum Inbound {
    /// A `session/update` notification's `update` object.
    Update(Value),
    /// A `session/request_permission` request: its id (echoed unchanged) and params.
    Permission {
        /// The request id, as the agent chose it (string or number).
        id: Value,
        /// The params (`toolCall`, `options`).
        params: Value,
    },
}

/// A request that did not get a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RpcError {
    /// The agent answered with a JSON-RPC error.
    Remote {
        /// The error code (-32000: auth required).
        code: i64,
        /// Its message (the agent's words, never the chat's).
        message: String,
    },
    /// The connection ended first (the agent exited or stopped reading).
    Closed,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;
type Routes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Inbound>>>>;

/// One connection to an agent: cheap to clone; all clones share it.
#[derive(Clone)]
pub struct Rpc {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    routes: Routes,
    next_id: Arc<AtomicU64>,
    closed: CancellationToken,
    /// Why the reader stopped, when it was not a plain end of output.
    why: Arc<Mutex<Option<String>>>,
}

impl Rpc {
    /// Starts the reader and writer tasks on the agent's stdout and stdin.
    pub fn start(
        read: impl AsyncRead + Send + Unpin + 'static,
        write: impl AsyncWrite + Send + Unpin + 'static,
        max_line: usize,
    ) -> Rpc {
        let (out, rx) = mpsc::unbounded_channel();
        let rpc = Rpc {
            out,
            pending: Arc::default(),
            routes: Arc::default(),
            next_id: Arc::new(AtomicU64::new(0)),
            closed: CancellationToken::new(),
            why: Arc::default(),
        };
        tokio::spawn(write_lines(write, rx, rpc.closed.clone()));
        tokio::spawn(read_lines(read, max_line, rpc.clone()));
        rpc
    }

    /// True once the agent's stdout ended or its stdin broke.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Why the connection ended when the agent's output broke it (a line too long, not UTF-8, a
    /// read error); `None` while open or after a plain end of output.
    pub fn broken(&self) -> Option<String> {
        lock(&self.why).clone()
    }

    /// Resolves when the connection ends.
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// Sends a request and waits for its result. No timeout: a prompt lasts as long as the turn.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        if self.is_closed() {
            lock(&self.pending).remove(&id);
            return Err(RpcError::Closed);
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&msg);
        rx.await.unwrap_or(Err(RpcError::Closed))
    }

    /// Sends a notification (`session/cancel`).
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answers one of the agent's requests with a result.
    pub fn respond(&self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Answers one of the agent's requests with an error.
    pub fn respond_error(&self, id: &Value, code: i64, message: &str) {
        let msg = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        self.send(&msg);
    }

    /// Routes the session's updates and permission requests to `tx` from now on. Whatever the
    /// agent sent for it before (a `session/load` replay) was dropped.
    pub fn route(&self, session_id: &str, tx: mpsc::UnboundedSender<Inbound>) {
        lock(&self.routes).insert(session_id.to_string(), tx);
    }

    /// Stops routing the session: its updates are dropped again.
    pub fn unroute(&self, session_id: &str) {
        lock(&self.routes).remove(session_id);
    }

    fn send(&self, msg: &Value) {
        // A message holds no newline once serialized (JSON escapes them in strings).
        let _ = self.out.send(msg.to_string());
    }

    fn close(&self) {
        self.closed.cancel();
        lock(&self.pending).clear();
        lock(&self.routes).clear();
    }

    fn dispatch(&self, line: &str) {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            warn!(
                bytes = line.len(),
                "skipping a line from the agent that is not JSON"
            );
            return;
        };
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").filter(|id| !id.is_null());
        match (method, id) {
            (Some(method), Some(id)) => self.on_request(method, id.clone(), &msg),
            (Some(method), None) => self.on_notification(method, &msg),
            (None, Some(id)) => self.on_response(id, &msg),
            (None, None) => warn!("skipping a message from the agent with neither method nor id"),
        }
    }

    fn on_request(&self, method: &str, id: Value, msg: &Value) {
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        if method == "session/request_permission" {
            let sid = params
                .get("sessionId")
                .and_then(Value::as_str)
                .unwrap_or("");
            let route = lock(&self.routes).get(sid).cloned();
            let inbound = Inbound::Permission {
                id: id.clone(),
                params,
            };
            if route.is_some_and(|tx| tx.send(inbound).is_ok()) {
                return;
            }
            // Nobody waits on that session (a replay, or a turn that already ended): a definite
            // "no turn is running" rather than a request left hanging.
            self.respond(&id, json!({"outcome": {"outcome": "cancelled"}}));
            return;
        }
        // We declared no fs and no terminal capability: those and every unknown request get
        // method-not-found at once, because an unanswered request hangs the agent's turn.
        debug!(method, "answering an agent request with method-not-found");
        self.respond_error(&id, METHOD_NOT_FOUND, &format!("{method} is not supported"));
    }

    fn on_notification(&self, method: &str, msg: &Value) {
        if method != "session/update" {
            return;
        }
        let Some(params) = msg.get("params") else {
            return;
        };
        let sid = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or("");
        let route = lock(&self.routes).get(sid).cloned();
        if let (Some(tx), Some(update)) = (route, params.get("update")) {
            let _ = tx.send(Inbound::Update(update.clone()));
        }
    }

    fn on_response(&self, id: &Value, msg: &Value) {
        // Our ids are numbers; an answer to anything else is not ours.
        let Some(n) = id.as_u64() else {
            return;
        };
        let Some(tx) = lock(&self.pending).remove(&n) else {
            return;
        };
        let result = match msg.get("error") {
            Some(e) => Err(RpcError::Remote {
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            }),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(result);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn write_lines(
    mut write: impl AsyncWrite + Unpin,
    mut rx: mpsc::UnboundedReceiver<String>,
    closed: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            l = rx.recv() => l,
            _ = closed.cancelled() => return,
        };
        let Some(mut line) = line else {
            return;
        };
        line.push('\n');
        if write.write_all(line.as_bytes()).await.is_err() || write.flush().await.is_err() {
            debug!("the agent stopped reading its stdin");
            return;
        }
    }
}

async fn read_lines(read: impl AsyncRead + Unpin, max_line: usize, rpc: Rpc) {
    let mut frames = FrameReader::new(BufReader::new(read), max_line);
    let why = loop {
        match frames.next_frame().await {
            Ok(Some(line)) => rpc.dispatch(&line),
            Ok(None) => break None,
            Err(FrameError::TooLarge { limit }) => {
                break Some(format!("it wrote a line longer than {limit} bytes"));
            }
            Err(FrameError::NotUtf8) => break Some("it wrote a line that is not UTF-8".into()),
            Err(FrameError::Io(e)) => break Some(format!("reading its output failed: {e}")),
        }
    };
    if let Some(w) = &why {
        warn!(reason = %w, "the agent's output cannot be read; closing");
    }
    *lock(&rpc.why) = why;
    // Stdout EOF ends every pending request: dropping their senders answers them `Closed`.
    rpc.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncBufReadExt;

    #[tokio::test]
    async fn unknown_requests_get_method_not_found_and_answers_find_their_request() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (r, w) = tokio::io::split(ours);
        let rpc = Rpc::start(r, w, 1 << 20);
        let (tr, mut tw) = tokio::io::split(theirs);
        let mut lines = BufReader::new(tr).lines();
        let call = tokio::spawn({
            let rpc = rpc.clone();
            async move { rpc.request("initialize", json!({})).await }
        });
        let sent: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(sent["method"], "initialize");
        tw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"u-1\",\"method\":\"fs/read_text_file\",\"params\":{}}\n")
            .await
            .unwrap();
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], "u-1");
        assert_eq!(answer["error"]["code"], METHOD_NOT_FOUND);
        let reply = json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"ok": 1}});
        tw.write_all(format!("{reply}\n").as_bytes()).await.unwrap();
        assert_eq!(call.await.unwrap(), Ok(json!({"ok": 1})));
        drop(tw);
        drop(lines);
        rpc.closed().await;
        assert_eq!(rpc.request("x", json!({})).await, Err(RpcError::Closed));
    }
}
