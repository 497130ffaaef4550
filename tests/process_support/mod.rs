//! A daemon child process that cannot outlive its test: killed and reaped when dropped, so a
//! failing assertion never leaves a daemon running.

#![allow(dead_code)]

use std::ops::{Deref, DerefMut};
use std::process::Child;

/// A spawned `scv-bridge run`.
pub struct Daemon(pub Child);

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

/// SIGTERM, then wait for a clean exit.
pub fn terminate(child: &mut Child) {
    let pid = child.id() as i32;
    // SAFETY: kill(2) on our own child's pid; no memory is shared.
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0, "SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "the daemon exited with {status}");
}
