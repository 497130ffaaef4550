//! One connection to an SCV agent server: a child process's stdio or a Unix socket, with a reader
//! task that turns bounded lines into events and a watcher that reports the child's exit.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use super::wire::{ClientInfo, ClientMessage, Event, PROTOCOL_VERSION, parse_event};
use crate::agent::{AgentError, AgentErrorKind};
use crate::protocol::{FrameError, FrameReader, write_frame};

/// How to reach the agent server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Start `program args...` per chat and speak over its stdin and stdout.
    Command {
        /// The program (looked up in `PATH`).
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// Connect to a running server's Unix socket, one connection per chat.
    Socket(PathBuf),
}

/// What the reader and watcher tasks report.
pub enum Incoming {
    /// One event and its `seq`.
    Event(Event, Option<u64>),
    /// The connection is gone; why, for people.
    Closed(String),
}

/// What the session is started with.
pub struct SessionParams<'a> {
    /// `<channel>:<account>:<chat>`, given to a child as `SCV_PARENT`.
    pub parent: &'a str,
    /// The account's workspace.
    pub cwd: String,
    /// `WeChat` / `Feishu`.
    pub channel: &'a str,
    /// The session must not use tools.
    pub no_tools: bool,
    /// Approve every approval request.
    pub auto_approve: bool,
}

/// An open, initialized connection with its one session.
pub struct Connection {
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    events: mpsc::Receiver<Incoming>,
    next_id: u64,
    last_seq: Option<u64>,
    max_line: usize,
    /// From `session.started`.
    pub session_id: Value,
    /// Kills the child (or drops the socket) when the connection is dropped.
    _kill: DropGuard,
}

fn unavailable(msg: impl Into<String>) -> AgentError {
    AgentError::new(AgentErrorKind::Unavailable, msg)
}

impl Connection {
    /// Connects (starting a child if the transport says so), then `initialize` and `session.start`.
    pub async fn open(
        transport: &Transport,
        params: SessionParams<'_>,
        max_line: usize,
        handshake: Duration,
        tasks: &TaskTracker,
        kill: CancellationToken,
    ) -> Result<Connection, AgentError> {
        let (tx, rx) = mpsc::channel(256);
        let writer: Box<dyn AsyncWrite + Send + Unpin> = match transport {
            Transport::Command { program, args } => {
                let mut child = tokio::process::Command::new(program)
                    .args(args)
                    .env("SCV_PARENT", params.parent)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()
                    .map_err(|e| unavailable(format!("cannot start the agent `{program}`: {e}")))?;
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(unavailable("the agent's stdio could not be opened"));
                };
                if let Some(stderr) = child.stderr.take() {
                    tasks.spawn(forward_stderr(stderr));
                }
                tasks.spawn(read_events(stdout, max_line, tx.clone(), kill.clone()));
                tasks.spawn(watch_child(child, tx, kill.clone()));
                Box::new(stdin)
            }
            Transport::Socket(path) => {
                let stream = tokio::net::UnixStream::connect(path).await.map_err(|e| {
                    unavailable(format!(
                        "cannot connect to the agent at {}: {e}",
                        path.display()
                    ))
                })?;
                let (read, write) = stream.into_split();
                tasks.spawn(read_events(read, max_line, tx, kill.clone()));
                Box::new(write)
            }
        };
        let mut conn = Connection {
            writer,
            events: rx,
            next_id: 0,
            last_seq: None,
            max_line,
            session_id: Value::Null,
            _kill: kill.drop_guard(),
        };
        tokio::time::timeout(handshake, conn.handshake(params))
            .await
            .unwrap_or_else(|_| {
                Err(unavailable(format!(
                    "the agent did not start a session within {} s",
                    handshake.as_secs_f64()
                )))
            })?;
        Ok(conn)
    }

    async fn handshake(&mut self, params: SessionParams<'_>) -> Result<(), AgentError> {
        let rid = self.request_id();
        self.send(&ClientMessage::Initialize {
            request_id: rid.clone(),
            protocol_version: PROTOCOL_VERSION,
            client: ClientInfo {
                name: "scv-bridge".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
        })
        .await?;
        loop {
            match self.handshake_event(&rid).await? {
                Event::Initialized { protocol_version } => {
                    if protocol_version.is_some_and(|v| v != PROTOCOL_VERSION) {
                        warn!(
                            ?protocol_version,
                            "the agent speaks another protocol version"
                        );
                    }
                    break;
                }
                other => debug!(event = ?kind(&other), "ignored before initialized"),
            }
        }
        let rid = self.request_id();
        self.send(&ClientMessage::SessionStart {
            request_id: rid.clone(),
            cwd: params.cwd,
            channel: (!params.channel.is_empty()).then(|| params.channel.to_string()),
            no_tools: params.no_tools,
            auto_approve: params.auto_approve,
        })
        .await?;
        loop {
            match self.handshake_event(&rid).await? {
                Event::SessionStarted { session_id } => {
                    self.session_id = session_id;
                    return Ok(());
                }
                other => debug!(event = ?kind(&other), "ignored before session.started"),
            }
        }
    }

    /// The next handshake event; an `error` answering `rid` (or a fatal one) fails the handshake.
    async fn handshake_event(&mut self, rid: &str) -> Result<Event, AgentError> {
        match self.next().await {
            Incoming::Closed(why) => Err(unavailable(why)),
            Incoming::Event(
                Event::Error {
                    request_id,
                    message,
                    fatal,
                },
                _,
            ) if fatal || request_id.as_ref().and_then(Value::as_str) == Some(rid) => Err(
                unavailable(format!("the agent refused to start a session: {message}")),
            ),
            Incoming::Event(ev, _) => Ok(ev),
        }
    }

    /// A fresh request id.
    pub fn request_id(&mut self) -> String {
        self.next_id += 1;
        format!("r{}", self.next_id)
    }

    /// Writes one message; a failed write means the connection is gone.
    pub async fn send(&mut self, msg: &ClientMessage) -> Result<(), AgentError> {
        write_frame(&mut self.writer, msg, self.max_line)
            .await
            .map_err(|e| unavailable(format!("the agent stopped reading: {e}")))
    }

    /// The next event (logging `seq` gaps), or why the connection closed.
    pub async fn next(&mut self) -> Incoming {
        let Some(inc) = self.events.recv().await else {
            return Incoming::Closed("the agent connection closed".into());
        };
        if let Incoming::Event(_, Some(seq)) = &inc {
            if let Some(last) = self.last_seq
                && *seq != last + 1
            {
                warn!(
                    expected = last + 1,
                    got = seq,
                    "events from the agent were lost (seq gap)"
                );
            }
            self.last_seq = Some(*seq);
        }
        inc
    }
}

/// The event's type for logs (never its text).
pub fn kind(ev: &Event) -> &str {
    match ev {
        Event::Initialized { .. } => "initialized",
        Event::SessionStarted { .. } => "session.started",
        Event::TurnStarted { .. } => "turn.started",
        Event::Delta { .. } => "assistant.delta",
        Event::Completed { .. } => "assistant.completed",
        Event::ApprovalRequested { .. } => "approval.requested",
        Event::TurnCompleted { .. } => "turn.completed",
        Event::TurnCancelled { .. } => "turn.cancelled",
        Event::TurnFailed { .. } => "turn.failed",
        Event::Error { .. } => "error",
        Event::Other(k) => k,
    }
}

/// Reads bounded lines into events until the stream ends, a line is too long, or `kill` fires.
async fn read_events(
    read: impl AsyncRead + Unpin,
    max_line: usize,
    tx: mpsc::Sender<Incoming>,
    kill: CancellationToken,
) {
    let mut frames = FrameReader::new(BufReader::new(read), max_line);
    loop {
        let frame = tokio::select! {
            _ = kill.cancelled() => return,
            f = frames.next_frame() => f,
        };
        let inc = match frame {
            Ok(Some(line)) => match parse_event(&line) {
                Some((ev, seq)) => Incoming::Event(ev, seq),
                None => {
                    warn!(
                        bytes = line.len(),
                        "skipping a line from the agent that is not an event"
                    );
                    continue;
                }
            },
            Ok(None) => Incoming::Closed("the agent closed the connection".into()),
            Err(FrameError::TooLarge { limit }) => {
                Incoming::Closed(format!("the agent sent a line longer than {limit} bytes"))
            }
            Err(e) => Incoming::Closed(format!("reading from the agent failed: {e}")),
        };
        let closed = matches!(inc, Incoming::Closed(_));
        if tx.send(inc).await.is_err() || closed {
            return;
        }
    }
}

/// Owns the child: reports its exit, or kills it when the connection is dropped or the agent closes.
async fn watch_child(
    mut child: tokio::process::Child,
    tx: mpsc::Sender<Incoming>,
    kill: CancellationToken,
) {
    tokio::select! {
        status = child.wait() => {
            let why = match status {
                Ok(s) => format!("the agent process exited ({s})"),
                Err(e) => format!("the agent process was lost: {e}"),
            };
            debug!(%why, "agent child ended");
            let _ = tx.send(Incoming::Closed(why)).await;
        }
        _ = kill.cancelled() => {
            let _ = child.kill().await;
        }
    }
}

/// Logs the child's stderr at debug (it may quote conversation text), chunk by chunk, so a chatty
/// child never blocks on a full pipe and no line is buffered without bound.
async fn forward_stderr(mut stderr: tokio::process::ChildStderr) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&buf[..n]);
        debug!(text = %text.trim_end(), "agent stderr");
    }
}
