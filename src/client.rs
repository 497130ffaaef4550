//! The control socket client the command line uses.

mod watch;

use std::path::{Path, PathBuf};

use tokio::io::BufReader;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::protocol::{
    ClientMessage, DaemonCommand, DaemonStatus, ErrorCode, FrameReader, MAX_CLIENT_FRAME_BYTES,
    MAX_SERVER_FRAME_BYTES, write_frame,
};

pub use watch::StatusWatch;

/// The client's read buffer, in bytes.
const READ_BUFFER: usize = 64 * 1024;

/// Why a request got no status back.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket.
    #[error(
        "no scv-bridge daemon answers on {}; start it with `{run}`",
        .0.display(),
        run = crate::config::command("run")
    )]
    NotRunning(PathBuf),
    /// The daemon answered with an error.
    #[error("{message}")]
    Daemon {
        /// The error code.
        code: ErrorCode,
        /// The daemon's message.
        message: String,
    },
    /// The connection broke or the answer made no sense.
    #[error("control socket: {0}")]
    Protocol(String),
}

/// A server event as the client reads it: every field of every answer, optional.
#[derive(serde::Deserialize)]
struct Answer {
    #[serde(rename = "type")]
    kind: String,
    status: Option<DaemonStatus>,
    code: Option<ErrorCode>,
    message: Option<String>,
}

/// One connection to the daemon.
pub struct Client {
    reader: FrameReader<BufReader<OwnedReadHalf>>,
    writer: OwnedWriteHalf,
    next_id: u64,
}

impl Client {
    /// Connects to the socket at `path`.
    pub async fn connect(path: &Path) -> Result<Client, ClientError> {
        let stream = match UnixStream::connect(path).await {
            Ok(s) => s,
            // The daemon's accept queue is full (a flood of clients): wait in line to enter it.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => connect_in_line(path).await?,
            Err(_) => return Err(ClientError::NotRunning(path.to_path_buf())),
        };
        let (r, w) = stream.into_split();
        Ok(Client {
            // A status of a thousand accounts is hundreds of KiB: read it in large pieces.
            reader: FrameReader::new(
                BufReader::with_capacity(READ_BUFFER, r),
                MAX_SERVER_FRAME_BYTES,
            ),
            writer: w,
            next_id: 1,
        })
    }

    /// Sends one `daemon.control` command and returns the status it answers with.
    pub async fn request(&mut self, command: DaemonCommand) -> Result<DaemonStatus, ClientError> {
        let line = self.ask(command).await?;
        // One pass into a flat envelope: an internally tagged enum would buffer the whole
        // (possibly large) status before deserializing it a second time.
        let answer: Answer = serde_json::from_str(line).map_err(unreadable)?;
        match (answer.kind.as_str(), answer.status) {
            ("daemon.status", Some(status)) => Ok(status),
            (kind, _) => Err(not_a_status(kind, answer.code, answer.message)),
        }
    }

    /// Sends one `daemon.control` command and returns its answer's line as it came, unparsed.
    pub async fn request_line(&mut self, command: DaemonCommand) -> Result<String, ClientError> {
        Ok(self.ask(command).await?.to_owned())
    }

    /// Asks for the status and reads it into `watch`, which parses only the accounts that
    /// changed since its last read (`status --watch`).
    pub async fn watch_status<'w>(
        &mut self,
        watch: &'w mut StatusWatch,
    ) -> Result<&'w DaemonStatus, ClientError> {
        let line = self.ask(DaemonCommand::Status).await?;
        watch.read(line)
    }

    /// Sends `command` and lends the answer's line where the reader holds it: a status of a
    /// thousand accounts (hundreds of KiB) is parsed in place, never copied.
    async fn ask(&mut self, command: DaemonCommand) -> Result<&str, ClientError> {
        self.send(command).await?;
        self.reader
            .next_frame_str()
            .await
            .map_err(|e| ClientError::Protocol(e.to_string()))?
            .ok_or_else(closed)
    }

    /// Writes one `daemon.control` command.
    async fn send(&mut self, command: DaemonCommand) -> Result<(), ClientError> {
        let request_id = format!("c{}", self.next_id);
        self.next_id += 1;
        let msg = ClientMessage::DaemonControl {
            request_id,
            command,
        };
        write_frame(&mut self.writer, &msg, MAX_CLIENT_FRAME_BYTES)
            .await
            .map_err(|e| ClientError::Protocol(e.to_string()))
    }
}

/// The error for a daemon that closed the connection instead of answering.
fn closed() -> ClientError {
    ClientError::Protocol("the daemon closed the connection".into())
}

fn unreadable(e: serde_json::Error) -> ClientError {
    ClientError::Protocol(format!("unreadable answer: {e}"))
}

/// The error an answer of type `kind` other than a status stands for.
fn not_a_status(kind: &str, code: Option<ErrorCode>, message: Option<String>) -> ClientError {
    if kind == "error" {
        ClientError::Daemon {
            code: code.unwrap_or(ErrorCode::Unknown),
            message: message.unwrap_or_default(),
        }
    } else {
        ClientError::Protocol(format!("unexpected answer type '{kind}'"))
    }
}

/// A blocking connect, which the kernel queues in arrival order until the daemon accepts.
async fn connect_in_line(path: &Path) -> Result<UnixStream, ClientError> {
    let busy = || {
        ClientError::Protocol(format!(
            "the daemon on {} is not accepting connections; try again, or restart it",
            path.display()
        ))
    };
    let owned = path.to_path_buf();
    let waited = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tokio::task::spawn_blocking(move || std::os::unix::net::UnixStream::connect(owned)),
    )
    .await;
    let stream = match waited {
        Ok(Ok(Ok(s))) => s,
        Ok(Ok(Err(_))) => return Err(ClientError::NotRunning(path.to_path_buf())),
        _ => return Err(busy()),
    };
    stream.set_nonblocking(true).map_err(|_| busy())?;
    UnixStream::from_std(stream).map_err(|_| busy())
}

/// Connects and sends one command.
pub async fn request(path: &Path, command: DaemonCommand) -> Result<DaemonStatus, ClientError> {
    Client::connect(path).await?.request(command).await
}
