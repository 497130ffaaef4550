//! `scv-bridge send [TEXT] [--file PATH]...`: hand a text and files to the daemon for the
//! owner, now or at a time, and with
//! `--wait` follow it until it is sent or failed. The exit code says how it ended:
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | sent (the platform named the message); without `--wait`: stored, to be sent |
//! | 1 | stopped waiting (Ctrl-C) before it was sent; it stays stored and is still sent |
//! | 2 | failed, cancelled, or an error (no daemon, a refused request) |
//! | 3 | sent but unconfirmed: the platform took it without anything that proves delivery |
//!
//! Made for scripts: the one line printed at the end is stable in its first word (the state).

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use crate::client::{Client, ClientError};
use crate::protocol::{DaemonCommand, SendInfo, SendState};

/// How often `--wait` asks where the send stands.
pub const POLL_EVERY: Duration = Duration::from_secs(2);
/// Polls in a row that may fail (a daemon restarting) before the command gives up.
const MAX_FAILED_POLLS: u32 = 30;

/// What the command sends.
#[derive(Debug, Clone)]
pub struct Options {
    /// The text (may be empty when there are files).
    pub text: String,
    /// `--file`: files to send, as given (made absolute against the current directory).
    pub files: Vec<std::path::PathBuf>,
    /// `CHANNEL:ACCOUNT[:CHAT]`; none: the `notify` account's owner.
    pub to: Option<String>,
    /// When, in the daemon's time zone (`09:00`, `2026-03-08 09:00`) or RFC 3339.
    pub at: Option<String>,
    /// In how many seconds.
    pub in_seconds: Option<u64>,
    /// Follow it until it is sent or failed.
    pub wait: bool,
    /// Time between polls.
    pub poll_every: Duration,
}

/// How the command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The daemon took it; with `--wait`, it reached a final state.
    Done(SendInfo),
    /// The user stopped waiting; the send stays stored.
    Stopped(SendInfo),
    /// The daemon refused, or could not be reached.
    Error(String),
}

impl Outcome {
    /// The exit code (see the module's table).
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Done(i) => match i.state {
                SendState::Sent | SendState::Scheduled | SendState::Queued | SendState::Waiting => {
                    0
                }
                SendState::SentUnconfirmed => 3,
                // A moved copy went on to another route: the send itself is not final here.
                SendState::Moved => 0,
                SendState::Failed | SendState::Cancelled | SendState::Unknown => 2,
            },
            Outcome::Stopped(_) => 1,
            Outcome::Error(_) => 2,
        }
    }

    /// The one line printed at the end.
    pub fn message(&self) -> String {
        match self {
            Outcome::Done(i) => describe(i),
            Outcome::Stopped(i) => format!(
                "stopped waiting; {} stays stored and is still sent ({})",
                i.id,
                describe(i)
            ),
            Outcome::Error(e) => format!("error: {e}"),
        }
    }
}

/// `STATE: ID ...` for people and scripts.
fn describe(i: &SendInfo) -> String {
    let route = match i.route.is_empty() {
        true => String::new(),
        false => format!(" to {}", i.route),
    };
    match i.state {
        SendState::Sent => format!("sent: {}{route}", i.id),
        SendState::SentUnconfirmed => format!(
            "unconfirmed: {}{route} was taken by the platform, which does not confirm delivery",
            i.id
        ),
        SendState::Scheduled => format!(
            "scheduled: {} for {}; `{}` cancels it",
            i.id,
            chrono::DateTime::from_timestamp(i.due_unix_seconds as i64, 0)
                .map_or_else(String::new, |t| t
                    .format("%Y-%m-%d %H:%M:%S UTC")
                    .to_string()),
            crate::config::command(&format!("send --cancel {}", i.id))
        ),
        SendState::Queued => format!("queued: {}{route}", i.id),
        SendState::Waiting => format!(
            "waiting: {}{route}: {}",
            i.id,
            i.why.map_or("", |w| w.words())
        ),
        SendState::Moved => format!("moved: {}{route}", i.id),
        SendState::Failed => format!(
            "failed: {}{route}: {}",
            i.id,
            i.reason.as_deref().unwrap_or("the daemon's log says why")
        ),
        SendState::Cancelled => format!("cancelled: {}", i.id),
        SendState::Unknown => format!("unknown: {} (a newer daemon's state)", i.id),
    }
}

/// Reads `--in`: seconds, or a number with `s`, `m`, `h`, `d` parts (`10m`, `1d2h`), at least 1 s.
pub fn parse_in(s: &str) -> Result<u64, String> {
    match crate::confirm::cli::parse_duration(s)? {
        0 => Err(format!(
            "expected a duration of at least 1 s, found '{}'",
            s.trim()
        )),
        n => Ok(n),
    }
}

/// Sends, then with `wait` polls until the send is final or `stop` resolves.
pub async fn run(socket: &Path, opts: &Options, stop: impl Future<Output = ()>) -> Outcome {
    let mut client = match Client::connect(socket).await {
        Ok(c) => Some(c),
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let mut files = Vec::with_capacity(opts.files.len());
    for f in &opts.files {
        // The daemon's working directory is not this one: it gets full paths.
        match std::path::absolute(f) {
            Ok(p) => files.push(p.to_string_lossy().into_owned()),
            Err(e) => {
                return Outcome::Error(format!(
                    "cannot read the path {}: {e}; give it as a full path",
                    crate::config::shell_quote(f)
                ));
            }
        }
    }
    let send = DaemonCommand::Send {
        text: opts.text.clone(),
        to: opts.to.clone(),
        at: opts.at.clone(),
        in_seconds: opts.in_seconds,
        files,
    };
    let mut info = match request(&mut client, socket, send).await {
        Ok(i) => i,
        Err(e) => return Outcome::Error(e),
    };
    tokio::pin!(stop);
    let mut failed_polls = 0;
    while opts.wait && !info.state.is_final() {
        tokio::select! {
            _ = tokio::time::sleep(opts.poll_every) => {}
            _ = &mut stop => return Outcome::Stopped(info),
        }
        let poll = DaemonCommand::SendStatus {
            id: info.id.clone(),
        };
        match request(&mut client, socket, poll).await {
            Ok(i) => {
                info = i;
                failed_polls = 0;
            }
            Err(e) if client.is_some() => return Outcome::Error(e),
            Err(e) => {
                // The daemon may be restarting; the send is stored, so keep asking a while.
                failed_polls += 1;
                if failed_polls > MAX_FAILED_POLLS {
                    return Outcome::Error(format!("lost the daemon: {e}"));
                }
            }
        }
    }
    Outcome::Done(info)
}

/// Cancels a scheduled send (`send --cancel ID`).
pub async fn cancel(socket: &Path, id: &str) -> Outcome {
    let mut client = None;
    let command = DaemonCommand::SendCancel { id: id.to_string() };
    match request(&mut client, socket, command).await {
        Ok(i) => Outcome::Done(i),
        Err(e) => Outcome::Error(e),
    }
}

/// One request, reconnecting first when the last one broke; a daemon's refusal keeps the
/// connection (`client` stays), anything else drops it.
async fn request(
    client: &mut Option<Client>,
    socket: &Path,
    command: DaemonCommand,
) -> Result<SendInfo, String> {
    if client.is_none() {
        *client = Some(Client::connect(socket).await.map_err(|e| e.to_string())?);
    }
    let Some(c) = client.as_mut() else {
        return Err(ClientError::NotRunning(socket.to_path_buf()).to_string());
    };
    match c.request(command).await {
        Ok(status) => status.send.map(|s| *s).ok_or_else(|| {
            "the daemon answered without the send; is it an older release? restart it".into()
        }),
        Err(e) => {
            if !matches!(e, ClientError::Daemon { .. }) {
                *client = None;
            }
            Err(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WaitWhy;

    fn info(state: SendState) -> SendInfo {
        SendInfo {
            id: "s-1".into(),
            state,
            route: "chat:phone".into(),
            due_unix_seconds: 0,
            why: Some(WaitWhy::SendWindow),
            reason: None,
        }
    }

    #[test]
    fn durations_for_in() {
        assert_eq!(parse_in("90"), Ok(90));
        assert_eq!(parse_in("10m"), Ok(600));
        assert_eq!(parse_in("1d2h"), Ok(93_600));
        for bad in ["", "0", "0s", "5x", "10m5", "-1"] {
            assert!(parse_in(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn exit_codes_follow_the_final_state() {
        assert_eq!(Outcome::Done(info(SendState::Sent)).exit_code(), 0);
        assert_eq!(Outcome::Done(info(SendState::Scheduled)).exit_code(), 0);
        assert_eq!(
            Outcome::Done(info(SendState::SentUnconfirmed)).exit_code(),
            3
        );
        assert_eq!(Outcome::Done(info(SendState::Failed)).exit_code(), 2);
        assert_eq!(Outcome::Done(info(SendState::Cancelled)).exit_code(), 2);
        assert_eq!(Outcome::Stopped(info(SendState::Waiting)).exit_code(), 1);
        assert_eq!(Outcome::Error("x".into()).exit_code(), 2);
        let w = Outcome::Done(info(SendState::Waiting)).message();
        assert!(w.starts_with("waiting: s-1 to chat:phone: "), "{w}");
        let mut later = info(SendState::Scheduled);
        later.due_unix_seconds = 1_772_974_800;
        let m = Outcome::Done(later).message();
        assert!(
            m.starts_with("scheduled: s-1 for 2026-03-08 13:00:00 UTC; `"),
            "{m}"
        );
        assert!(m.contains("send --cancel s-1` cancels it"), "{m}");
    }
}
