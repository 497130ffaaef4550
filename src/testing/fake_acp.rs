//! A fake ACP agent in process, started through the backend's [`Launcher`] seam, and a scripted
//! [`Approver`] the test answers by hand.
//!
//! Hand-written on the same wire as the real agents rather than on the `agent-client-protocol`
//! crate's agent side: that crate turns on serde_json's `preserve_order` for the whole build.
//!
//! What the prompt's last text block says decides the turn:
//! - `RUN:<cmd>`: a `tool_call` (pending), then `session/request_permission` with Claude's option
//!   order (`allow_always`, `allow_once`, `reject_once`); allowed: the call completes, the answer
//!   is `ran <cmd>`; rejected: codex's way, the turn ends `cancelled`; cancelled: it waits for the
//!   `session/cancel`.
//! - `SLOW`: one chunk `partial`, then nothing until `session/cancel` (ends `cancelled`).
//! - `FS`: asks the client `fs/read_text_file` and `x/unknown` and answers with the error codes.
//! - `CRASH`: writes `panic: boom` to stderr and closes its stdout mid-turn.
//! - `GARBAGE`: writes a line that is not UTF-8 mid-turn (and then nothing).
//! - `LONGLINE:<n>`: writes one line of `n` bytes mid-turn (past a small `max_line`).
//! - `HANG`: sends nothing and never answers, but ends the turn `cancelled` on `session/cancel`.
//! - `DEAF`: sends nothing and never answers, `session/cancel` included.
//! - `BIG:<n>`: answers `n` bytes of text (`0123456789` repeated, a newline every 100) in
//!   chunks of 4 KiB.
//! - anything else: a thought (never shown), then `hello ` + `world`, `end_turn`.
//!
//! `session/load` replays the session's earlier answers before its result; `session/resume` is
//! offered only when [`FakeAcp::with_resume`] says so.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::acp::{Launched, Launcher, StderrTail};
use crate::agent::approval::{ApprovalRequest, Approver, Decision};

/// What the fake saw, for assertions.
#[derive(Debug, Default, Clone)]
pub struct FakeAcpLog {
    /// Processes started.
    pub launches: usize,
    /// The name each process was started for, in order (`wechat-phone`, `wechat-phone-guest`).
    pub launched: Vec<String>,
    /// Every method the client called or notified, in order.
    pub methods: Vec<String>,
    /// The outcome of every permission request, as the client answered it.
    pub outcomes: Vec<Value>,
    /// The error codes the client answered our own requests with (`FS`).
    pub errors: Vec<i64>,
    /// Modes the client set.
    pub modes: Vec<String>,
    /// The prompts' content blocks.
    pub prompts: Vec<Value>,
    /// The `mcpServers` of every `session/new`, `session/load` and `session/resume`, in order.
    pub mcp_servers: Vec<Value>,
}

#[derive(Default)]
struct Shared {
    log: FakeAcpLog,
    /// Session id -> its answers so far (what `session/load` replays).
    sessions: HashMap<String, Vec<String>>,
    next: u64,
}

/// The fake agent; clone it into the backend as its launcher.
#[derive(Clone, Default)]
pub struct FakeAcp {
    shared: Arc<Mutex<Shared>>,
    resume: bool,
    changed: Arc<tokio::sync::Notify>,
}

impl FakeAcp {
    /// A fake offering `session/load` but not `session/resume`.
    pub fn new() -> Self {
        FakeAcp::default()
    }

    /// Offers `session/resume` too.
    pub fn with_resume(mut self) -> Self {
        self.resume = true;
        self
    }

    /// What it saw so far.
    pub fn log(&self) -> FakeAcpLog {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .log
            .clone()
    }

    /// Waits until `f` holds for the log (checked on every message the fake handles).
    pub async fn until(&self, f: impl Fn(&FakeAcpLog) -> bool) -> FakeAcpLog {
        loop {
            let notified = self.changed.notified();
            let log = self.log();
            if f(&log) {
                return log;
            }
            notified.await;
        }
    }

    fn record(&self, f: impl FnOnce(&mut Shared)) {
        f(&mut self.shared.lock().unwrap_or_else(|p| p.into_inner()));
        self.changed.notify_waiters();
    }
}

impl Launcher for FakeAcp {
    fn launch(&self, account: &str) -> std::io::Result<Launched> {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(ours);
        let tail = StderrTail::default();
        let stop = CancellationToken::new();
        self.record(|s| {
            s.log.launches += 1;
            s.log.launched.push(account.to_string());
        });
        tokio::spawn(serve(self.clone(), theirs, tail.clone(), stop.clone()));
        Ok(Launched {
            read: Box::new(read),
            write: Box::new(write),
            tail,
            guard: Box::new(stop.drop_guard()),
        })
    }

    fn describe(&self) -> String {
        "fake-acp".into()
    }
}

/// What the fake writes next: a message, raw bytes (a broken line), or its stdout closing.
enum Write {
    Json(Value),
    Raw(Vec<u8>),
    Crash,
}

type Out = mpsc::UnboundedSender<Write>;

struct Conn {
    fake: FakeAcp,
    out: Out,
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    cancels: Mutex<HashMap<String, CancellationToken>>,
    next_id: Mutex<u64>,
    tail: StderrTail,
}

impl Conn {
    fn send(&self, v: Value) {
        let _ = self.out.send(Write::Json(v));
    }

    fn update(&self, sid: &str, update: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}));
    }

    /// Calls the client and waits for the whole answer message.
    async fn call(&self, method: &str, params: Value) -> Value {
        let id = {
            let mut n = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
            *n += 1;
            format!("agent-{n}")
        };
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await.unwrap_or(Value::Null)
    }
}

async fn serve(
    fake: FakeAcp,
    stream: tokio::io::DuplexStream,
    tail: StderrTail,
    stop: CancellationToken,
) {
    let (read, mut write) = tokio::io::split(stream);
    let (out, mut rx) = mpsc::unbounded_channel::<Write>();
    let conn = Arc::new(Conn {
        fake,
        out,
        pending: Mutex::default(),
        cancels: Mutex::default(),
        next_id: Mutex::new(0),
        tail,
    });
    let writer = tokio::spawn(async move {
        // A crash closes stdout at once.
        while let Some(w) = rx.recv().await {
            let bytes = match w {
                Write::Json(v) => format!("{v}\n").into_bytes(),
                Write::Raw(b) => b,
                Write::Crash => return,
            };
            if write.write_all(&bytes).await.is_err() {
                return;
            }
        }
    });
    let mut lines = BufReader::new(read).lines();
    loop {
        let line = tokio::select! {
            _ = stop.cancelled() => break,
            _ = conn.out.closed() => break,
            l = lines.next_line() => l,
        };
        let Ok(Some(line)) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(method) = msg["method"].as_str() {
            let method = method.to_string();
            conn.fake.record(|s| s.log.methods.push(method.clone()));
            let c = conn.clone();
            tokio::spawn(async move { handle(&c, &method, msg).await });
        } else if let Some(id) = msg["id"].as_str() {
            let tx = conn
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id);
            if let Some(tx) = tx {
                let _ = tx.send(msg);
            }
        }
    }
    writer.abort();
    // The "process" is gone: so is its stderr.
    conn.tail.end();
}

async fn handle(c: &Conn, method: &str, msg: Value) {
    let id = msg["id"].clone();
    let p = &msg["params"];
    let sid = p["sessionId"].as_str().unwrap_or("").to_string();
    if matches!(method, "session/new" | "session/load" | "session/resume") {
        let servers = p["mcpServers"].clone();
        c.fake.record(|s| s.log.mcp_servers.push(servers));
    }
    let result = match method {
        "initialize" => json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true},
                "mcpCapabilities": {"http": true, "sse": false},
                "sessionCapabilities": if c.fake.resume { json!({"resume": {}, "close": {}}) } else { json!({"close": {}}) },
            },
            "authMethods": [],
            "agentInfo": {"name": "fake-acp", "title": "Fake", "version": "9.9.9"},
        }),
        "session/new" => {
            let sid = {
                let mut s = c.fake.shared.lock().unwrap_or_else(|p| p.into_inner());
                s.next += 1;
                let sid = format!("sess-{}", s.next);
                s.sessions.insert(sid.clone(), Vec::new());
                sid
            };
            json!({"sessionId": sid, "modes": {"currentModeId": "auto", "availableModes": [
                {"id": "read-only", "name": "Read only"}, {"id": "auto", "name": "Auto"}]}})
        }
        "session/load" | "session/resume" => {
            let known = c
                .fake
                .shared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .sessions
                .get(&sid)
                .cloned();
            let Some(answers) = known else {
                c.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": "no such session"}}));
                return;
            };
            if method == "session/load" {
                for a in answers {
                    c.update(&sid, json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "old question"}}));
                    c.update(&sid, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": a}}));
                }
            }
            json!({})
        }
        "session/set_mode" => {
            let mode = p["modeId"].as_str().unwrap_or("").to_string();
            c.fake.record(|s| s.log.modes.push(mode));
            json!({})
        }
        "session/close" => json!({}),
        "session/cancel" => {
            if let Some(t) = c
                .cancels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&sid)
            {
                t.cancel();
            }
            return;
        }
        "session/prompt" => {
            let prompt = p["prompt"].clone();
            c.fake.record(|s| s.log.prompts.push(prompt.clone()));
            let text = prompt
                .as_array()
                .and_then(|b| b.iter().rev().find(|b| b["type"] == "text"))
                .and_then(|b| b["text"].as_str())
                .unwrap_or("")
                .to_string();
            let cancel = CancellationToken::new();
            c.cancels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(sid.clone(), cancel.clone());
            let (answer, stop) = turn(c, &sid, &text, &cancel).await;
            if answer.is_none() && stop.is_none() {
                return; // crashed
            }
            if let Some(a) = answer
                && let Some(list) = c
                    .fake
                    .shared
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .sessions
                    .get_mut(&sid)
            {
                list.push(a);
            }
            json!({"stopReason": stop.unwrap_or("end_turn"), "usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}})
        }
        _ => {
            c.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unknown"}}));
            return;
        }
    };
    if !id.is_null() {
        c.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
    c.fake.record(|_| {});
}

/// Plays one turn: the answer to remember and the stop reason (both `None`: crashed).
async fn turn(
    c: &Conn,
    sid: &str,
    text: &str,
    cancel: &CancellationToken,
) -> (Option<String>, Option<&'static str>) {
    let chunk = |t: &str| {
        c.update(
            sid,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}}),
        )
    };
    if let Some(cmd) = text.strip_prefix("RUN:") {
        c.update(sid, json!({"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": cmd, "kind": "execute", "status": "pending"}));
        let params = json!({"sessionId": sid, "toolCall": {"toolCallId": "call-1", "title": cmd, "kind": "execute", "rawInput": {"command": ["bash", "-lc", cmd], "cwd": "/work"}},
            "options": [
                {"optionId": "allow_always", "name": "Always Allow", "kind": "allow_always"},
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]});
        let answer = c.call("session/request_permission", params).await;
        let outcome = answer["result"]["outcome"].clone();
        c.fake.record(|s| s.log.outcomes.push(outcome.clone()));
        match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
            (Some("selected"), Some("allow" | "allow_always")) => {
                c.update(sid, json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed"}));
                let a = format!("ran {cmd}");
                chunk(&a);
                (Some(a), Some("end_turn"))
            }
            (Some("selected"), _) => (None, Some("cancelled")),
            _ => {
                cancel.cancelled().await;
                (None, Some("cancelled"))
            }
        }
    } else if text == "SLOW" {
        chunk("partial");
        cancel.cancelled().await;
        (None, Some("cancelled"))
    } else if text == "FS" {
        let a = c
            .call(
                "fs/read_text_file",
                json!({"sessionId": sid, "path": "/etc/passwd"}),
            )
            .await;
        let b = c.call("x/unknown", json!({})).await;
        for r in [a, b] {
            let code = r["error"]["code"].as_i64().unwrap_or(0);
            c.fake.record(|s| s.log.errors.push(code));
        }
        chunk("fs answered");
        (Some("fs answered".into()), Some("end_turn"))
    } else if text == "CRASH" {
        chunk("about to ");
        c.tail.push(b"thread 'main' panicked\npanic: boom\n");
        c.tail.end();
        let _ = c.out.send(Write::Crash);
        (None, None)
    } else if text == "GARBAGE" {
        chunk("about to ");
        let _ = c.out.send(Write::Raw(
            b"{\"jsonrpc\":\"2.0\",\"x\":\"\xff\xfe\"}\n".to_vec(),
        ));
        std::future::pending::<()>().await;
        (None, None)
    } else if let Some(n) = text.strip_prefix("LONGLINE:") {
        let n: usize = n.parse().unwrap_or(1 << 20);
        let mut line = vec![b'x'; n];
        line.push(b'\n');
        let _ = c.out.send(Write::Raw(line));
        std::future::pending::<()>().await;
        (None, None)
    } else if text == "HANG" {
        cancel.cancelled().await;
        (None, Some("cancelled"))
    } else if text == "DEAF" {
        std::future::pending::<()>().await;
        (None, None)
    } else if let Some(n) = text.strip_prefix("BIG:") {
        let n: usize = n.parse().unwrap_or(0);
        let line: String = "0123456789".repeat(10);
        let mut left = n;
        let mut piece = String::new();
        while left > 0 {
            let take = left.min(100);
            piece.push_str(&line[..take]);
            left -= take;
            if left > 0 && take == 100 {
                piece.push('\n');
                left -= 1;
            }
            if piece.len() >= 4096 || left == 0 {
                chunk(&piece);
                piece.clear();
                // Lets the client read as the fake writes, as a real agent's pipe would.
                tokio::task::yield_now().await;
            }
        }
        (Some(format!("{n} bytes")), Some("end_turn"))
    } else {
        c.update(sid, json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "SECRET THOUGHT"}}));
        chunk("hello ");
        chunk("world");
        (Some("hello world".into()), Some("end_turn"))
    }
}

/// One question the backend asked, and how the test answers it.
pub struct Asked {
    /// The question.
    pub request: ApprovalRequest,
    /// Whether "always" was offered.
    pub offer_always: bool,
    /// Fires when the backend withdrew the question (the turn ended or was stopped).
    pub withdrawn: CancellationToken,
    /// Send the decision here; dropping it is a no (keep it to leave the question open).
    pub answer: oneshot::Sender<Decision>,
}

/// An [`Approver`] whose questions arrive on a channel for the test to answer.
pub struct ScriptedApprover {
    tx: mpsc::UnboundedSender<Asked>,
}

impl ScriptedApprover {
    /// The approver and where its questions arrive.
    pub fn new() -> (Arc<Self>, mpsc::UnboundedReceiver<Asked>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Arc::new(ScriptedApprover { tx }), rx)
    }
}

impl Approver for ScriptedApprover {
    fn approve(
        &self,
        request: ApprovalRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, bool> {
        let d = self.decide(request, false, cancel);
        Box::pin(async move { d.await != Decision::Reject })
    }

    fn decide(
        &self,
        request: ApprovalRequest,
        offer_always: bool,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Decision> {
        let (answer, rx) = oneshot::channel();
        let _ = self.tx.send(Asked {
            request,
            offer_always,
            withdrawn: cancel.clone(),
            answer,
        });
        Box::pin(async move {
            tokio::select! {
                d = rx => d.unwrap_or(Decision::Reject),
                _ = cancel.cancelled() => Decision::Reject,
            }
        })
    }
}
