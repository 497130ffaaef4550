//! A daemon child process that cannot outlive its test: killed and reaped when dropped, so a
//! failing assertion never leaves a daemon running.

#![allow(dead_code)]

pub mod bed;
pub mod changes;
pub mod hold;
pub mod log_count;

use std::io::Write;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A spawned `scv-bridge run`.
pub struct Daemon(pub Child);

impl Daemon {
    /// Runs `scv-bridge --config CONFIG run` with `env`, its log appended to `log` (one file
    /// for every run of a test, read back when it fails).
    pub fn spawn(config: &Path, env: &[(&str, &str)], log: &Path) -> Daemon {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
        cmd.arg("--config")
            .arg(config)
            .arg("run")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Daemon(cmd.spawn().expect("spawn the daemon"))
    }
}

/// What the daemons wrote to `log` so far.
pub fn read_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

impl Deref for Daemon {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for Daemon {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Already reaped after a deliberate kill or exit: both calls then fail harmlessly.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGKILL (`Child::kill` on Unix): no handler runs, nothing is flushed; then reap it.
pub fn sigkill(child: &mut Child) {
    child.kill().expect("kill -9");
    child.wait().expect("reap");
}

/// SIGTERM, without waiting for the exit.
pub fn sigterm(child: &Child) {
    let pid = child.id() as i32;
    // SAFETY: kill(2) on our own child's pid; no memory is shared.
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0, "SIGTERM");
}

/// SIGTERM, then wait for a clean exit.
pub fn terminate(child: &mut Child) {
    sigterm(child);
    exits_cleanly(child);
}

/// Waits for the daemon to exit, and asserts it exited 0.
pub fn exits_cleanly(child: &mut Child) {
    let status = child.wait().expect("wait");
    assert!(status.success(), "the daemon exited with {status}");
}

/// Runs `cmd` (an `init` that reads a secret) with `input` on its standard input, waiting off
/// the runtime's threads; asserts it succeeded and returns what it printed, stdout then stderr.
pub async fn run_with_input(mut cmd: Command, input: &[u8]) -> String {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("the input");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("it ran");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    said
}
