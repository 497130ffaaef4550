//! The control socket server: JSON lines over a private Unix socket, one task per client.
//!
//! Clients are bounded: at most [`Limits::max_connections`] at once (a newcomer replaces the
//! longest-silent one), and a client that sends no complete request within [`Limits::idle`] is
//! closed, so held or half-written connections never lock `status` out.

mod descriptors;
mod slots;

pub use descriptors::raise_descriptor_limit;

use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::protocol::{
    ClientMessage, DaemonCommand, DaemonStatus, ErrorCode, FrameError, FrameReader,
    MAX_CLIENT_FRAME_BYTES, MAX_SERVER_FRAME_BYTES, PROTOCOL_VERSION, PeerInfo, ServerEvent,
    write_frame,
};

/// A failed command: a stable code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    /// The protocol's error code.
    pub code: ErrorCode,
    /// What failed and what to do.
    pub message: String,
}

impl CommandError {
    /// An error with `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        CommandError {
            code,
            message: message.into(),
        }
    }
}

/// What answers `daemon.control` commands; the daemon implements it.
pub trait Handler: Send + Sync + 'static {
    /// Carries out `command`. May take a while (a reload stops and starts accounts).
    fn handle(
        &self,
        command: DaemonCommand,
    ) -> impl Future<Output = Result<DaemonStatus, CommandError>> + Send;

    /// The whole `daemon.status` line answering a plain `status`, when the handler can build it cheaper.
    fn status_line(&self, _request_id: &str) -> Option<String> {
        None
    }
}

/// One answer: an event to serialize, or a line already serialized.
enum Reply {
    Event(Box<ServerEvent>),
    Line(String),
}

/// Why the control socket could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// A live daemon already answers on this socket.
    #[error(
        "another scv-bridge daemon is already running on {0}; stop it first (one daemon per state directory)"
    )]
    InUse(PathBuf),
    /// The socket's directory can be entered by other users.
    #[error(
        "the socket directory {0} is accessible by other users; use a private (0700) directory for `socket`"
    )]
    NotPrivate(PathBuf),
    /// Creating or binding failed.
    #[error("cannot create the control socket {path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// How many clients the socket serves at once, and how long one may stay silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; past it, the longest-idle one is closed for the newcomer.
    pub max_connections: usize,
    /// How long a client may take to send a complete request (or to read an answer).
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 256,
            // Far above `confirm`'s 2-second poll; a person typing JSON by hand gets a minute.
            idle: Duration::from_secs(60),
        }
    }
}

/// Binds the socket 0600 in a 0700 directory, replacing a stale socket from a crashed daemon.
///
/// Binding is where the daemon starts serving descriptors, so it also raises the soft
/// open-file limit to the hard one.
pub async fn bind(path: &Path) -> Result<UnixListener, BindError> {
    let io = |source| BindError::Io {
        path: path.to_path_buf(),
        source,
    };
    match raise_descriptor_limit() {
        Ok(n) => tracing::debug!(open_files = n, "open-file limit"),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit; keeping it"),
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(io)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    let mode = std::fs::metadata(dir).map_err(io)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(BindError::NotPrivate(dir.to_path_buf()));
    }
    if path.exists() {
        if UnixStream::connect(path).await.is_ok() {
            return Err(BindError::InUse(path.to_path_buf()));
        }
        tracing::info!(socket = %path.display(), "replacing a stale control socket");
        std::fs::remove_file(path).map_err(io)?;
    }
    let listener = UnixListener::bind(path).map_err(io)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    shorten_backlog(&listener).map_err(io)?;
    Ok(listener)
}

/// Clients waiting to be accepted, at most: a usual queue (tokio's own default), so clients
/// that connect without waiting (scripts with non-blocking sockets, a burst of `status`
/// calls while the accept loop is busy) are not refused with `EAGAIN`. A queue of 16 did
/// that under ordinary churn. A flood is bounded by the connection cap (`Limits`), which
/// closes the longest-silent client for each newcomer, so `status` still gets its turn; the
/// bundled client still waits in line if the queue is ever full (see `client`).
const BACKLOG: libc::c_int = 1024;

/// Sets the listening socket's accept queue to [`BACKLOG`] (listening again only resizes it).
fn shorten_backlog(listener: &UnixListener) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: listen(2) on a socket we own and that already listens; no memory is passed.
    if unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Accepts clients until `shutdown` fires, then waits for their tasks to end.
pub async fn serve<H: Handler>(
    listener: UnixListener,
    handler: Arc<H>,
    shutdown: CancellationToken,
) {
    serve_with(listener, handler, shutdown, Limits::default()).await;
}

/// [`serve`] with other limits.
pub async fn serve_with<H: Handler>(
    listener: UnixListener,
    handler: Arc<H>,
    shutdown: CancellationToken,
    limits: Limits,
) {
    let tracker = TaskTracker::new();
    let slots = slots::Slots::new(limits.max_connections);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let s = shutdown.clone();
                    let Some(slot) = slots.admit() else {
                        tracker.spawn(refuse(stream, limits));
                        continue;
                    };
                    let h = handler.clone();
                    tracker.spawn(async move {
                        let evicted = slot.evicted();
                        tokio::select! {
                            _ = s.cancelled() => {}
                            _ = evicted => {}
                            _ = connection(stream, h, &slot, limits.idle) => {}
                        }
                    });
                    if slots.full() {
                        // Under a flood, let the clients just accepted read their request (and
                        // so become busy) before more newcomers push them out.
                        tokio::task::yield_now().await;
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment instead of spinning.
                    tracing::warn!(error = %e, "control socket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
        }
    }
    tracker.close();
    tracker.wait().await;
}

/// Tells a client that arrived while every connection was mid-request to come back.
async fn refuse(mut stream: UnixStream, limits: Limits) {
    let msg = format!(
        "the daemon is answering {} clients at once; try again in a moment",
        limits.max_connections
    );
    let e = ServerEvent::error(None, ErrorCode::Unavailable, msg, true);
    let _ = tokio::time::timeout(
        limits.idle,
        write_frame(&mut stream, &e, MAX_SERVER_FRAME_BYTES),
    )
    .await;
}

/// Serves one client until it hangs up, stays silent past `idle`, or sends something fatal.
async fn connection<H: Handler>(
    stream: UnixStream,
    handler: Arc<H>,
    slot: &slots::Slot,
    idle: Duration,
) {
    let (read, mut write) = stream.into_split();
    let peer_ok = write
        .as_ref()
        .peer_cred()
        .map(|c| c.uid() == current_uid())
        .unwrap_or(false);
    if !peer_ok {
        let e = ServerEvent::error(
            None,
            ErrorCode::InvalidRequest,
            "permission denied: the control socket serves only its own user",
            true,
        );
        let _ =
            tokio::time::timeout(idle, write_frame(&mut write, &e, MAX_SERVER_FRAME_BYTES)).await;
        return;
    }
    let mut frames = FrameReader::new(BufReader::new(read), MAX_CLIENT_FRAME_BYTES);
    loop {
        slot.idle();
        // The whole frame must arrive in time: trickling bytes does not keep a client open.
        let Ok(frame) = tokio::time::timeout(idle, frames.next_frame()).await else {
            let msg = format!(
                "no complete request within {} s; closing the connection",
                idle.as_secs()
            );
            let e = ServerEvent::error(None, ErrorCode::InvalidRequest, msg, true);
            let _ = tokio::time::timeout(idle, write_frame(&mut write, &e, MAX_SERVER_FRAME_BYTES))
                .await;
            return;
        };
        slot.busy();
        let (answer, fatal) = match frame {
            Ok(None) | Err(FrameError::Io(_)) => return,
            Ok(Some(line)) => match answer(&line, handler.as_ref()).await {
                Reply::Event(e) => (*e, false),
                Reply::Line(mut l) => {
                    l.push('\n');
                    // A client that does not read its answers is as stuck as a silent one.
                    match tokio::time::timeout(idle, write.write_all(l.as_bytes())).await {
                        Ok(Ok(())) => continue,
                        _ => return,
                    }
                }
            },
            Err(FrameError::TooLarge { limit }) => {
                let msg = format!("frame larger than {limit} bytes; closing the connection");
                (
                    ServerEvent::error(None, ErrorCode::InvalidRequest, msg, true),
                    true,
                )
            }
            Err(FrameError::NotUtf8) => {
                let msg = "frame is not valid UTF-8";
                (
                    ServerEvent::error(None, ErrorCode::InvalidRequest, msg, false),
                    false,
                )
            }
        };
        let written = tokio::time::timeout(
            idle,
            write_frame(&mut write, &answer, MAX_SERVER_FRAME_BYTES),
        )
        .await;
        if !matches!(written, Ok(Ok(_))) || fatal {
            return;
        }
    }
}

/// The answer to one frame.
async fn answer<H: Handler>(line: &str, handler: &H) -> Reply {
    let message = match parse(line) {
        Ok(m) => m,
        Err(e) => return Reply::Event(e),
    };
    if let ClientMessage::DaemonControl {
        request_id,
        command: DaemonCommand::Status,
    } = &message
        && let Some(l) = handler.status_line(request_id)
    {
        return Reply::Line(l);
    }
    Reply::Event(Box::new(respond(message, handler).await))
}

/// Parses one frame, or says why it is not a request.
fn parse(line: &str) -> Result<ClientMessage, Box<ServerEvent>> {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("malformed JSON: {e}");
            let e = ServerEvent::error(None, ErrorCode::InvalidRequest, msg, false);
            return Err(Box::new(e));
        }
    };
    let request_id = value
        .get("request_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    let message: ClientMessage = match serde_json::from_value(value.clone()) {
        Ok(m) => m,
        Err(e) => {
            let known = matches!(
                value.get("type").and_then(Value::as_str),
                Some("initialize" | "daemon.control")
            );
            let (code, msg) = if known {
                (ErrorCode::InvalidRequest, format!("invalid request: {e}"))
            } else {
                let t = value
                    .get("type")
                    .map(Value::to_string)
                    .unwrap_or_else(|| "none".into());
                (ErrorCode::Unsupported, format!("unknown message type {t}"))
            };
            return Err(Box::new(ServerEvent::error(request_id, code, msg, false)));
        }
    };
    Ok(message)
}

/// Answers a parsed request.
async fn respond<H: Handler>(message: ClientMessage, handler: &H) -> ServerEvent {
    match message {
        ClientMessage::Initialize { request_id, .. } => ServerEvent::Initialized {
            request_id,
            protocol_version: PROTOCOL_VERSION,
            server: PeerInfo {
                name: "scv-bridge".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
        },
        ClientMessage::DaemonControl {
            request_id,
            command,
        } => match handler.handle(command).await {
            Ok(status) => ServerEvent::DaemonStatus {
                request_id,
                status: Box::new(status),
            },
            Err(e) => ServerEvent::error(Some(request_id), e.code, e.message, false),
        },
    }
}

/// The effective uid of this process.
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
