//! Starting an ACP agent: a child in its own process group with its stderr drained into a bounded
//! tail, the group killed when the bridge lets go of it, and the group id recorded so the next
//! start kills a group a killed bridge (`kill -9`) left behind.
//!
//! The whole group, not the child: the npm wrappers (`codex-acp.js`) start a native child that
//! outlives a signal to the wrapper, and codex-acp ignores stdin EOF.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tracing::{debug, info, warn};

/// How much of the agent's stderr is kept for the message of a failed turn.
pub const TAIL_BYTES: usize = 2048;

/// The last bytes the agent wrote to stderr, for the message when it dies.
#[derive(Clone, Default)]
pub struct StderrTail(
    Arc<Mutex<VecDeque<u8>>>,
    Arc<tokio::sync::Notify>,
    Arc<AtomicBool>,
);

impl StderrTail {
    /// Marks the stream ended (everything it wrote is in the tail).
    pub fn end(&self) {
        self.2.store(true, Ordering::SeqCst);
        self.1.notify_waiters();
    }

    /// Waits (briefly) for the stream to end, so a dead agent's last words are in the tail.
    pub async fn settled(&self) {
        let wait = async {
            loop {
                let n = self.1.notified();
                if self.2.load(Ordering::SeqCst) {
                    return;
                }
                n.await;
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_millis(500), wait).await;
    }

    /// Appends bytes, keeping the last [`TAIL_BYTES`].
    pub fn push(&self, bytes: &[u8]) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.extend(bytes);
        let over = t.len().saturating_sub(TAIL_BYTES);
        t.drain(..over);
    }

    /// The tail's last few lines as one line (ANSI colours removed), empty when nothing came.
    pub fn text(&self) -> String {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: Vec<u8> = t.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let last = &lines[lines.len().saturating_sub(3)..];
        strip_ansi(&last.join(" | "))
    }
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ ... final byte in @..~
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// A started agent: its stdio, its stderr tail, and the guard that kills its process group.
pub struct Launched {
    /// The agent's stdout (ACP messages from it).
    pub read: Box<dyn AsyncRead + Send + Unpin>,
    /// The agent's stdin (ACP messages to it).
    pub write: Box<dyn AsyncWrite + Send + Unpin>,
    /// What it wrote to stderr lately.
    pub tail: StderrTail,
    /// Dropping it ends the agent (kills its process group).
    pub guard: Box<dyn Send + Sync>,
}

/// Starts agent processes; the real one runs a command, tests run a fake in process.
pub trait Launcher: Send + Sync + 'static {
    /// Starts one agent for `account` (a file-name-safe name, for the group record).
    fn launch(&self, account: &str) -> std::io::Result<Launched>;
    /// The command line, for people (status, errors).
    fn describe(&self) -> String;
}

/// The configured agent command (no Debug: `env` may hold a stored API key).
#[derive(Clone)]
pub struct CommandLauncher {
    /// The program (looked up in `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (API keys come from the daemon's own environment).
    pub env: Vec<(String, String)>,
    /// Where the group ids of running agents are recorded (`None`: not recorded).
    pub record_dir: Option<PathBuf>,
}

impl Launcher for CommandLauncher {
    fn launch(&self, account: &str) -> std::io::Result<Launched> {
        let record = self
            .record_dir
            .as_ref()
            .map(|d| d.join(format!("acp-{account}.pgid")));
        if let Some(path) = &record {
            kill_stale(path);
        }
        let mut child = tokio::process::Command::new(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so the whole tree can be killed at once.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let pgid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other(
                "the agent's stdio could not be opened",
            ));
        };
        if let Some(path) = &record
            && pgid > 0
            && let Err(e) =
                std::fs::write(path, format!("{pgid} {}", start_time(pgid).unwrap_or(0)))
        {
            warn!(error = %e, "cannot record the agent's process group; a kill -9 of the bridge may leave it running");
        }
        let tail = StderrTail::default();
        tokio::spawn(drain(stderr, tail.clone()));
        let stop = tokio_util::sync::CancellationToken::new();
        tokio::spawn(watch(child, pgid, stop.clone()));
        let guard = GroupGuard {
            pgid,
            record,
            _stop: stop.drop_guard(),
        };
        Ok(Launched {
            read: Box::new(stdout),
            write: Box::new(stdin),
            tail,
            guard: Box::new(guard),
        })
    }

    fn describe(&self) -> String {
        let mut cmd = vec![self.program.clone()];
        cmd.extend(self.args.iter().cloned());
        cmd.join(" ")
    }
}

/// Kills the process group when dropped and removes its record.
struct GroupGuard {
    pgid: i32,
    record: Option<PathBuf>,
    _stop: tokio_util::sync::DropGuard,
}

/// Owns the child: when it exits (or the guard goes), the rest of its group is killed, because
/// a grandchild still holding the stdout pipe would keep the bridge from ever seeing EOF.
async fn watch(
    mut child: tokio::process::Child,
    pgid: i32,
    stop: tokio_util::sync::CancellationToken,
) {
    tokio::select! {
        status = child.wait() => debug!(?status, "agent process exited"),
        _ = stop.cancelled() => {}
    }
    kill_group(pgid);
    // Reaped here, so it never lingers as our zombie.
    let _ = child.wait().await;
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.pgid);
        if let Some(path) = &self.record {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// SIGKILL to every process of the group `pgid` (never to pid 0 or our own group).
pub fn kill_group(pgid: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
    let rc = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    if rc == 0 {
        debug!(pgid, "agent process group killed");
    }
}

/// Kills the group a previous bridge recorded, if that group's leader is still the same process
/// (its start time matches), so a recycled pid is never hit.
fn kill_stale(path: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let mut parts = text.split_whitespace();
    let pgid: i32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let started: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    if pgid > 1 && started != 0 && start_time(pgid) == Some(started) {
        info!(
            pgid,
            "killing an agent process group left by an earlier run"
        );
        kill_group(pgid);
    }
    let _ = std::fs::remove_file(path);
}

/// The process's start time (clock ticks since boot, /proc/<pid>/stat field 22), if it runs.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest starts at field 3 (state); field 22 is the 20th from there.
    rest.split_whitespace().nth(19)?.parse().ok()
}

async fn drain(mut stderr: impl AsyncRead + Unpin, tail: StderrTail) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        // Only kept in memory: stderr may quote conversation text, so it never reaches logs.
        tail.push(&buf[..n]);
    }
    tail.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_without_colours() {
        let t = StderrTail::default();
        t.push(&vec![b'x'; 5000]);
        t.push(b"\n\x1b[31merror\x1b[0m: one\ntwo\nthree\n");
        assert_eq!(t.text(), "error: one | two | three");
        assert!(t.0.lock().unwrap_or_else(|p| p.into_inner()).len() <= TAIL_BYTES);
    }

    #[test]
    fn our_own_start_time_is_read() {
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(i32::MAX), None);
    }
}
