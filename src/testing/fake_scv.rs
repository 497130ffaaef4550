//! A fake SCV agent server on a Unix socket, speaking the JSON lines of `agent-protocol.md`, for
//! tests of the `scv` backend and of anything built on it.
//!
//! Each connection gets one session. What a turn does is chosen by a marker in its prompt:
//!
//! | prompt contains | the fake |
//! | --- | --- |
//! | (nothing) | streams `echo: <prompt>` as deltas, `assistant.completed`, `turn.completed` with usage |
//! | `[steps]` | two steps with tool events and an unknown event type; the last step says `final answer` |
//! | `[approval]` | sends `approval.requested`, waits for `approval.resolve`, answers `approved` / `denied` |
//! | `[fail]` | `turn.failed` with code `model_error`, message `scripted failure` |
//! | `[hang]` | one delta, then nothing until `turn.cancel`, answered with `turn.cancelled` |
//! | `[die]` | one delta, then closes the connection |
//! | `[huge]` | sends one line of `huge_line_bytes` bytes |
//! | `[gap]` | skips 5 `seq` numbers |
//!
//! ```no_run
//! # async fn demo(dir: &std::path::Path) {
//! use scv_bridge::testing::fake_scv::FakeScv;
//! let fake = FakeScv::start(&dir.join("agent.sock")).await.expect("bind");
//! // ... point `Transport::Socket(fake.path().into())` at it and run turns ...
//! fake.wait(|r| r.sessions.len() == 1).await;
//! assert_eq!(fake.recorded().sessions[0].no_tools, Some(true));
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::net::UnixListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::agent::scv::wire::ClientMessage;
use crate::protocol::{FrameReader, write_frame};

/// A `session.start` as the fake received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedSession {
    /// The id the fake gave it.
    pub session_id: String,
    /// `cwd`.
    pub cwd: String,
    /// `channel`.
    pub channel: Option<String>,
    /// `no_tools`.
    pub no_tools: Option<bool>,
    /// `auto_approve`.
    pub auto_approve: Option<bool>,
}

/// An `approval.resolve` as the fake received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The approval answered.
    pub approval_id: String,
    /// The answer.
    pub approved: bool,
}

/// Everything the fake has seen.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// Connections accepted.
    pub connections: usize,
    /// Sessions started, in order.
    pub sessions: Vec<StartedSession>,
    /// Prompts of `turn.start`, in order.
    pub prompts: Vec<String>,
    /// The `attachments` paths of each `turn.start`, in order (empty when it had none).
    pub attachments: Vec<Vec<String>>,
    /// `approval.resolve` answers, in order.
    pub approvals: Vec<Resolved>,
    /// Turn ids named by `turn.cancel`.
    pub cancels: Vec<String>,
    /// Session ids named by `session.clear`.
    pub clears: Vec<String>,
}

struct Shared {
    recorded: watch::Sender<Recorded>,
    ids: AtomicUsize,
    huge_line_bytes: AtomicUsize,
}

/// A running fake server; stops accepting when dropped.
pub struct FakeScv {
    path: PathBuf,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FakeScv {
    /// Listens on `path` (which must not exist).
    pub async fn start(path: &Path) -> std::io::Result<FakeScv> {
        let listener = UnixListener::bind(path)?;
        let shared = Arc::new(Shared {
            recorded: watch::channel(Recorded::default()).0,
            ids: AtomicUsize::new(0),
            huge_line_bytes: AtomicUsize::new(16 << 20),
        });
        let s = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                s.recorded.send_modify(|r| r.connections += 1);
                let (read, write) = stream.into_split();
                tokio::spawn(serve(read, write, s.clone()));
            }
        });
        Ok(FakeScv {
            path: path.to_path_buf(),
            shared,
            task,
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets the size of the line a `[huge]` prompt sends (default 16 MiB).
    pub fn set_huge_line_bytes(&self, n: usize) {
        self.shared.huge_line_bytes.store(n, Ordering::Relaxed);
    }

    /// A snapshot of what the fake has seen.
    pub fn recorded(&self) -> Recorded {
        self.shared.recorded.borrow().clone()
    }

    /// Waits until `pred` holds for what the fake has seen.
    pub async fn wait(&self, pred: impl Fn(&Recorded) -> bool) {
        let mut rx = self.shared.recorded.subscribe();
        let _ = rx.wait_for(|r| pred(r)).await;
    }
}

impl Drop for FakeScv {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection's state.
struct Conn<W> {
    out: W,
    shared: Arc<Shared>,
    session: String,
    seq: u64,
    /// A `[hang]` turn waiting for `turn.cancel`.
    hanging: Option<String>,
    /// An `[approval]` turn waiting for its answer: (approval id, turn id).
    awaiting: Option<(String, String)>,
}

impl<W: AsyncWrite + Unpin> Conn<W> {
    async fn send(&mut self, mut v: Value) -> std::io::Result<()> {
        self.seq += 1;
        v["seq"] = json!(self.seq);
        write_frame(&mut self.out, &v, usize::MAX).await
    }

    fn id(&self, prefix: &str) -> String {
        format!(
            "{prefix}{}",
            self.shared.ids.fetch_add(1, Ordering::Relaxed) + 1
        )
    }

    async fn finish(&mut self, turn: &str, text: &str) -> std::io::Result<()> {
        let (a, b) = text.split_at(text.len() / 2);
        for piece in [a, b] {
            let piece = piece.to_string();
            self.send(json!({"type": "assistant.delta", "turn_id": turn, "content": piece}))
                .await?;
        }
        self.send(json!({"type": "assistant.completed", "turn_id": turn, "content": text}))
            .await?;
        self.send(
            json!({"type": "turn.completed", "turn_id": turn, "steps": 1,
            "usage": {"input_tokens": 12, "output_tokens": 3}}),
        )
        .await
    }

    /// Handles one client message; `Ok(false)` closes the connection.
    async fn handle(&mut self, msg: ClientMessage) -> std::io::Result<bool> {
        match msg {
            ClientMessage::Initialize { request_id, .. } => {
                self.send(
                    json!({"type": "initialized", "request_id": request_id, "protocol_version": 1,
                    "server": {"name": "fake-scv", "version": "0"}}),
                )
                .await?;
            }
            ClientMessage::SessionStart {
                request_id,
                cwd,
                channel,
                no_tools,
                auto_approve,
            } => {
                self.session = self.id("s");
                let started = StartedSession {
                    session_id: self.session.clone(),
                    cwd: cwd.clone(),
                    channel,
                    no_tools: Some(no_tools),
                    auto_approve: Some(auto_approve),
                };
                self.shared
                    .recorded
                    .send_modify(|r| r.sessions.push(started));
                self.send(json!({"type": "session.started", "request_id": request_id,
                    "session_id": self.session, "cwd": cwd, "model": "fake",
                    "context_max_tokens": 8192, "max_server_frame_bytes": 8388608}))
                    .await?;
            }
            ClientMessage::TurnStart {
                request_id,
                prompt,
                attachments,
                ..
            } => {
                let paths = attachments.into_iter().map(|a| a.path).collect();
                self.shared
                    .recorded
                    .send_modify(|r| r.attachments.push(paths));
                return self.turn(request_id, prompt).await;
            }
            ClientMessage::TurnCancel { turn_id, .. } => {
                let t = id_text(&turn_id);
                self.shared
                    .recorded
                    .send_modify(|r| r.cancels.push(t.clone()));
                if self.hanging.as_deref() == Some(t.as_str()) {
                    self.hanging = None;
                    self.send(json!({"type": "turn.cancelled", "turn_id": t}))
                        .await?;
                }
            }
            ClientMessage::ApprovalResolve {
                approval_id,
                approved,
                ..
            } => {
                let a = id_text(&approval_id);
                self.shared.recorded.send_modify(|r| {
                    r.approvals.push(Resolved {
                        approval_id: a.clone(),
                        approved,
                    })
                });
                if let Some((wanted, turn)) = self.awaiting.take() {
                    if wanted == a {
                        let text = if approved { "approved" } else { "denied" };
                        self.finish(&turn, text).await?;
                    } else {
                        self.awaiting = Some((wanted, turn));
                    }
                }
            }
            ClientMessage::SessionClear { session_id, .. } => {
                let s = id_text(&session_id);
                self.shared.recorded.send_modify(|r| r.clears.push(s));
            }
        }
        Ok(true)
    }

    async fn turn(&mut self, request_id: String, prompt: String) -> std::io::Result<bool> {
        self.shared
            .recorded
            .send_modify(|r| r.prompts.push(prompt.clone()));
        let turn = self.id("t");
        self.send(json!({"type": "turn.started", "request_id": request_id, "turn_id": turn}))
            .await?;
        if prompt.contains("[gap]") {
            self.seq += 5;
        }
        if prompt.contains("[steps]") {
            self.send(
                json!({"type": "assistant.delta", "turn_id": turn, "content": "Let me check."}),
            )
            .await?;
            self.send(
                json!({"type": "assistant.completed", "turn_id": turn, "content": "Let me check."}),
            )
            .await?;
            for t in [
                "tool.proposed",
                "tool.started",
                "tool.progress",
                "tool.completed",
                "x.future.event",
            ] {
                self.send(
                    json!({"type": t, "turn_id": turn, "call_id": "c1", "name": "read_file"}),
                )
                .await?;
            }
            self.send(json!({"type": "assistant.delta", "turn_id": turn, "content": "final "}))
                .await?;
            self.send(json!({"type": "assistant.delta", "turn_id": turn, "content": "answer"}))
                .await?;
            self.send(
                json!({"type": "assistant.completed", "turn_id": turn, "content": "final answer"}),
            )
            .await?;
            self.send(json!({"type": "turn.completed", "turn_id": turn, "steps": 2}))
                .await?;
        } else if prompt.contains("[approval]") {
            let approval = self.id("a");
            self.send(
                json!({"type": "approval.requested", "approval_id": approval, "call_id": "c1",
                "name": "shell", "risk": "high", "cwd": "/", "summary": "rm -rf build"}),
            )
            .await?;
            self.awaiting = Some((approval, turn));
        } else if prompt.contains("[fail]") {
            self.send(
                json!({"type": "turn.failed", "turn_id": turn, "code": "model_error",
                "message": "scripted failure"}),
            )
            .await?;
        } else if prompt.contains("[hang]") {
            self.send(json!({"type": "assistant.delta", "turn_id": turn, "content": "thinking"}))
                .await?;
            self.hanging = Some(turn);
        } else if prompt.contains("[die]") {
            self.send(json!({"type": "assistant.delta", "turn_id": turn, "content": "about to"}))
                .await?;
            return Ok(false);
        } else if prompt.contains("[huge]") {
            let n = self.shared.huge_line_bytes.load(Ordering::Relaxed);
            let v = json!({"type": "assistant.delta", "turn_id": turn, "content": "x".repeat(n)});
            self.send(v).await?;
        } else {
            self.finish(&turn, &format!("echo: {prompt}")).await?;
        }
        Ok(true)
    }
}

fn id_text(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

/// Serves one connection until the client goes away or a `[die]` turn closes it.
async fn serve<R, W>(read: R, write: W, shared: Arc<Shared>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut frames = FrameReader::new(BufReader::new(read), 16 << 20);
    let mut conn = Conn {
        out: write,
        shared,
        session: String::new(),
        seq: 0,
        hanging: None,
        awaiting: None,
    };
    while let Ok(Some(line)) = frames.next_frame().await {
        // Unknown client messages are ignored, as the protocol asks of both sides.
        let Ok(msg) = serde_json::from_str::<ClientMessage>(&line) else {
            continue;
        };
        match conn.handle(msg).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
    }
}
