//! Starting an ACP agent: a child in its own process group with its stderr drained into a bounded
//! tail, the group killed when the bridge lets go of it, and the group id recorded so the next
//! start kills a group a killed bridge (`kill -9`) left behind.
//!
//! The whole group, not the child: the npm wrappers (`codex-acp.js`) start a native child that
//! outlives a signal to the wrapper, and codex-acp ignores stdin EOF.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tracing::{debug, info, warn};

/// How much of the agent's stderr is kept for the message of a failed turn.
pub const TAIL_BYTES: usize = 2048;

/// The last bytes the agent wrote to stderr and how its process ended, for the message and the
/// log line when it dies.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<(Mutex<TailState>, tokio::sync::Notify)>);

#[derive(Default)]
struct TailState {
    bytes: VecDeque<u8>,
    /// Stderr ended: everything it wrote is in `bytes`.
    ended: bool,
    /// How the process exited (`exit status 3`), once its launcher saw it.
    exit: Option<String>,
    /// The launcher reports the exit (a real process): [`StderrTail::settled`] waits for it.
    exit_expected: bool,
}

impl StderrTail {
    fn state(&self) -> std::sync::MutexGuard<'_, TailState> {
        self.0.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the stream ended (everything it wrote is in the tail).
    pub fn end(&self) {
        self.state().ended = true;
        self.0.1.notify_waiters();
    }

    /// Records how the process exited; [`StderrTail::settled`] then waits for it too.
    pub fn exited(&self, how: String) {
        self.state().exit = Some(how);
        self.0.1.notify_waiters();
    }

    /// How the process exited, when known.
    pub fn exit(&self) -> Option<String> {
        self.state().exit.clone()
    }

    /// Waits (briefly) for the stream to end and the exit to be known, so a dead agent's last
    /// words and its exit status are in the message.
    pub async fn settled(&self) {
        let wait = async {
            loop {
                let n = self.0.1.notified();
                {
                    let s = self.state();
                    if s.ended && (s.exit.is_some() || !s.exit_expected) {
                        return;
                    }
                }
                n.await;
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_millis(500), wait).await;
    }

    /// Appends bytes, keeping the last [`TAIL_BYTES`].
    pub fn push(&self, bytes: &[u8]) {
        let mut s = self.state();
        s.bytes.extend(bytes);
        let over = s.bytes.len().saturating_sub(TAIL_BYTES);
        s.bytes.drain(..over);
    }

    /// The tail's last few lines as one line (ANSI colours removed), empty when nothing came.
    pub fn text(&self) -> String {
        let bytes: Vec<u8> = self.state().bytes.iter().copied().collect();
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
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so the whole tree can be killed at once.
            .process_group(0)
            .kill_on_drop(true);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn()?;
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
        tail.state().exit_expected = true;
        tokio::spawn(drain(stderr, tail.clone()));
        let stop = tokio_util::sync::CancellationToken::new();
        tokio::spawn(watch(child, pgid, tail.clone(), stop.clone()));
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
    tail: StderrTail,
    stop: tokio_util::sync::CancellationToken,
) {
    tokio::select! {
        status = child.wait() => {
            debug!(?status, "agent process exited");
            if let Ok(status) = status {
                tail.exited(status.to_string());
            }
        }
        _ = stop.cancelled() => {}
    }
    kill_group(pgid);
    // Reaped here, so it never lingers as our zombie.
    if let Ok(status) = child.wait().await
        && tail.exit().is_none()
    {
        tail.exited(status.to_string());
    }
}

/// Linux: the agent gets SIGKILL when the bridge dies, however it dies (`kill -9`, a crash, any
/// supervisor or none). Only the direct child is reached; its own children (codex-acp's native
/// process) stay in its group, which the next start kills from the record ([`reap_records`]).
/// The signal follows the THREAD that forked: launches run on the runtime's worker threads,
/// which live as long as the daemon, never on a blocking-pool thread that may retire (so no
/// `spawn_blocking` or `block_in_place` may lead here).
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: getpid(2) has no preconditions.
    let parent = unsafe { libc::getpid() };
    let arm = move || {
        // SAFETY: between fork and exec only async-signal-safe calls are made: prctl(2) and
        // getppid(2), and the error is built without allocating.
        unsafe {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The bridge died before the line above: the signal will never come.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        Ok(())
    };
    // SAFETY: `arm` only makes the async-signal-safe calls above (see there).
    unsafe {
        cmd.pre_exec(arm);
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut tokio::process::Command) {}

/// Kills the groups of agents that an earlier run of the bridge left behind (their records in
/// `dir`); the daemon calls it once at start, before any agent of its own is launched.
pub fn reap_records(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("acp-") && name.ends_with(".pgid") {
            kill_stale(&e.path());
        }
    }
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

/// Kills the group a previous bridge recorded, unless its id now names someone else's group.
///
/// The leader still running with the recorded start time: ours. The leader gone (the
/// death signal took it) while members remain: ours too, because Linux does not hand a process
/// group's id to a new process while any member of that group lives. The leader running with
/// another start time: the id was free once, so that group is not ours and is left alone.
fn kill_stale(path: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let mut parts = text.split_whitespace();
    let pgid: i32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let started: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let ours = match start_time(pgid) {
        Some(now) => started != 0 && now == started,
        None => true,
    };
    if pgid > 1 && ours {
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
        // Kept in memory, never logged as it comes: only its last lines go to the log, once,
        // when the process ends unasked (`session.rs`), as the reason it ended. Chat text goes
        // to the agent over stdin; an agent that echoes it to stderr is the one way it shows.
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
        assert!(t.state().bytes.len() <= TAIL_BYTES);
    }

    #[test]
    fn our_own_start_time_is_read() {
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(i32::MAX), None);
    }
}
