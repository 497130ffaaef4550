//! Echo's client side of the wire: one request line, one answer line, within a bound.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// The longest a request waits for its answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// What went wrong on the wire, classified once here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WireError {
    /// The server is not there or broke off: try again later.
    Unreachable(String),
    /// The server refused the token: log in again.
    Refused(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Unreachable(why) => write!(f, "the Echo server cannot be reached ({why})"),
            WireError::Refused(why) => write!(f, "the Echo server refused the token ({why})"),
        }
    }
}

/// An open connection after a successful hello.
pub(super) struct Conn {
    pub lines: Lines<BufReader<OwnedReadHalf>>,
    pub write: OwnedWriteHalf,
    /// The bot the token belongs to.
    pub bot: String,
}

/// Connects to `address`, says `request` (with the hello), and reads the hello's answer.
pub(super) async fn open(
    address: &str,
    token: &str,
    mut request: Value,
) -> Result<Conn, WireError> {
    let unreachable = |e: std::io::Error| WireError::Unreachable(e.kind().to_string());
    let stream = tokio::time::timeout(ANSWER_WITHIN, TcpStream::connect(address))
        .await
        .map_err(|_| WireError::Unreachable("timed out".into()))?
        .map_err(unreachable)?;
    let (read, mut write) = stream.into_split();
    request["hello"] = json!(token);
    write
        .write_all(format!("{request}\n").as_bytes())
        .await
        .map_err(unreachable)?;
    let mut lines = BufReader::new(read).lines();
    let answer = next(&mut lines).await?;
    if let Some(why) = answer.get("refused").and_then(Value::as_str) {
        return Err(WireError::Refused(why.to_string()));
    }
    let bot = answer
        .get("bot")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(Conn { lines, write, bot })
}

/// The next line as JSON, within the bound.
pub(super) async fn next(lines: &mut Lines<BufReader<OwnedReadHalf>>) -> Result<Value, WireError> {
    let line = tokio::time::timeout(ANSWER_WITHIN, lines.next_line())
        .await
        .map_err(|_| WireError::Unreachable("no answer".into()))?
        .map_err(|e| WireError::Unreachable(e.kind().to_string()))?
        .ok_or_else(|| WireError::Unreachable("closed".into()))?;
    serde_json::from_str(&line).map_err(|_| WireError::Unreachable("an unreadable answer".into()))
}

/// Which bot `token` belongs to, asked once (login and doctor).
pub(super) async fn whoami(address: &str, token: &str) -> Result<String, WireError> {
    Ok(open(address, token, json!({})).await?.bot)
}
