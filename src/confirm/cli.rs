//! `scv-bridge confirm QUESTION`: ask over the control socket, poll until answered, exit 0 / 1 / 2.

use std::future::Future;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::client::{Client, ClientError};
use crate::protocol::{ConfirmInfo, ConfirmState, DaemonCommand};
use crate::supervisor::unix_now;

/// How often the command asks where its question stands (this also keeps it alive).
pub const POLL_EVERY: Duration = Duration::from_secs(2);
/// Polls in a row that may fail (a daemon restarting) before the command gives up.
const MAX_FAILED_POLLS: u32 = 30;

/// What the command asks.
#[derive(Debug, Clone)]
pub struct Options {
    /// The question.
    pub question: String,
    /// How long to wait, in seconds (None: the daemon's default).
    pub timeout_seconds: Option<u64>,
    /// `CHANNEL:ACCOUNT` (that account's owner chat) or `CHANNEL:ACCOUNT:CHAT`.
    pub chat: Option<String>,
    /// Time between polls.
    pub poll_every: Duration,
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The question reached a final state.
    Final(ConfirmInfo),
    /// The user stopped waiting (Ctrl-C); the daemon withdraws the question after a minute.
    Stopped(ConfirmInfo),
    /// The daemon refused, or could not be reached.
    Error(String),
}

impl Outcome {
    /// The exit code: 0 yes; 1 no, expired, withdrawn (or stopped waiting); 2 failed or error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Final(i) => match i.state {
                ConfirmState::Yes => 0,
                ConfirmState::No | ConfirmState::Expired | ConfirmState::Withdrawn => 1,
                _ => 2,
            },
            Outcome::Stopped(_) => 1,
            Outcome::Error(_) => 2,
        }
    }

    /// The one line printed at the end.
    pub fn message(&self) -> String {
        match self {
            Outcome::Final(i) => match i.state {
                ConfirmState::Yes => "yes".to_string(),
                ConfirmState::No => "no".to_string(),
                ConfirmState::Expired => {
                    "expired: no answer before the deadline (counts as no)".to_string()
                }
                ConfirmState::Withdrawn => {
                    "withdrawn: nobody was waiting for the answer".to_string()
                }
                ConfirmState::Failed => format!(
                    "failed: the question {} could not be asked or delivered{}: {}",
                    i.id,
                    if i.chat.is_empty() {
                        String::new()
                    } else {
                        format!(" in {}", i.chat)
                    },
                    i.reason.as_deref().unwrap_or("the daemon's log says why")
                ),
                s => format!("{}: {:?}", i.id, s),
            },
            Outcome::Stopped(i) => {
                format!("stopped waiting; {} is withdrawn within a minute", i.id)
            }
            Outcome::Error(e) => format!("error: {e}"),
        }
    }
}

/// Reads `--timeout`: seconds (`600`), or a number with `s`, `m`, `h` parts (`10m`, `1h30m`),
/// from 1 s to the daemon's longest wait. Checked here so the refusal comes from clap, which
/// names the flag; the daemon's own check speaks the protocol's `timeout_seconds`.
pub fn parse_timeout(s: &str) -> Result<u64, String> {
    match parse_duration(s)? {
        0 => Err(format!(
            "'{}' is no wait at all: give at least 1s (default 30m, at most 4h)",
            s.trim()
        )),
        t if t > crate::confirm::MAX_TIMEOUT_SECS => Err(format!(
            "'{}' is longer than the longest wait, 4h",
            s.trim()
        )),
        t => Ok(t),
    }
}

/// Seconds (`600`), or a number with `s`, `m`, `h`, `d` parts (`10m`, `1h30m`, `1d`): the one
/// reading of a duration on the command line (`confirm --timeout`, `send --in`).
pub(crate) fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let bad = || format!("expected a duration such as 600, 90s, 10m, 1h30m or 1d, found '{s}'");
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    let (mut total, mut digits) = (0u64, String::new());
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

/// Asks, then polls until the question is final or `stop` resolves. `live` gets a one-line
/// status, redrawn in place (pass a terminal's stderr, or `None`).
pub async fn run(
    socket: &Path,
    opts: &Options,
    stop: impl Future<Output = ()>,
    mut live: Option<&mut (dyn Write + Send)>,
) -> Outcome {
    let mut client = match Client::connect(socket).await {
        Ok(c) => Some(c),
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let ask = DaemonCommand::ConfirmAsk {
        question: opts.question.clone(),
        parent: opts.chat.clone(),
        timeout_seconds: opts.timeout_seconds,
    };
    let mut info = match request(&mut client, socket, ask).await {
        Ok(Some(i)) => i,
        Ok(None) => return Outcome::Error("the daemon answered without a question".into()),
        Err(e) => return Outcome::Error(e.to_string()),
    };
    tokio::pin!(stop);
    let mut failed_polls = 0;
    loop {
        if let Some(w) = live.as_deref_mut() {
            draw(w, &info);
        }
        if info.state != ConfirmState::Pending {
            clear(&mut live);
            return Outcome::Final(info);
        }
        tokio::select! {
            _ = tokio::time::sleep(opts.poll_every) => {}
            _ = &mut stop => {
                clear(&mut live);
                return Outcome::Stopped(info);
            }
        }
        let poll = DaemonCommand::ConfirmStatus {
            id: info.id.clone(),
        };
        match request(&mut client, socket, poll).await {
            Ok(Some(i)) => {
                info = i;
                failed_polls = 0;
            }
            Ok(None) => return Outcome::Error("the daemon answered without the question".into()),
            Err(e @ ClientError::Daemon { .. }) => {
                clear(&mut live);
                return Outcome::Error(e.to_string());
            }
            Err(e) => {
                // The daemon may be restarting; the question survives it, so keep trying a while.
                failed_polls += 1;
                client = None;
                if failed_polls > MAX_FAILED_POLLS {
                    clear(&mut live);
                    return Outcome::Error(format!("lost the daemon: {e}"));
                }
            }
        }
    }
}

/// One request on the connection, reconnecting first when the last one broke.
async fn request(
    client: &mut Option<Client>,
    socket: &Path,
    command: DaemonCommand,
) -> Result<Option<ConfirmInfo>, ClientError> {
    if client.is_none() {
        *client = Some(Client::connect(socket).await?);
    }
    let Some(c) = client.as_mut() else {
        return Err(ClientError::NotRunning(socket.to_path_buf()));
    };
    match c.request(command).await {
        Ok(status) => Ok(status.confirm),
        Err(e) => {
            if !matches!(e, ClientError::Daemon { .. }) {
                *client = None;
            }
            Err(e)
        }
    }
}

fn draw(w: &mut (dyn Write + Send), info: &ConfirmInfo) {
    let left = info.deadline_unix_seconds.saturating_sub(unix_now());
    let line = format!(
        "\r\x1b[2K{} waiting for an answer in {}: {}m {:02}s left",
        info.id,
        info.chat,
        left / 60,
        left % 60
    );
    let _ = w.write_all(line.as_bytes());
    let _ = w.flush();
}

fn clear(live: &mut Option<&mut (dyn Write + Send)>) {
    if let Some(w) = live.as_deref_mut() {
        let _ = w.write_all(b"\r\x1b[2K");
        let _ = w.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_seconds() {
        assert_eq!(parse_timeout("600"), Ok(600));
        assert_eq!(parse_timeout("90s"), Ok(90));
        assert_eq!(parse_timeout("10m"), Ok(600));
        assert_eq!(parse_timeout("1h30m"), Ok(5400));
        assert_eq!(parse_timeout("4h"), Ok(14_400));
        for bad in [
            "", "m", "10x", "10m5", "-5", "1.5h", "0", "0s", "4h1s", "5h",
        ] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    fn info(state: ConfirmState) -> ConfirmInfo {
        ConfirmInfo {
            id: "q-1".into(),
            state,
            chat: "wechat:phone".into(),
            deadline_unix_seconds: 0,
            reason: None,
        }
    }

    #[test]
    fn exit_codes_follow_the_outcome() {
        assert_eq!(Outcome::Final(info(ConfirmState::Yes)).exit_code(), 0);
        for s in [
            ConfirmState::No,
            ConfirmState::Expired,
            ConfirmState::Withdrawn,
        ] {
            assert_eq!(Outcome::Final(info(s)).exit_code(), 1);
        }
        assert_eq!(Outcome::Final(info(ConfirmState::Failed)).exit_code(), 2);
        assert_eq!(Outcome::Final(info(ConfirmState::Unknown)).exit_code(), 2);
        assert_eq!(Outcome::Stopped(info(ConfirmState::Pending)).exit_code(), 1);
        assert_eq!(Outcome::Error("x".into()).exit_code(), 2);
    }
}
