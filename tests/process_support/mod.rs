//! A daemon child process that cannot outlive its test: killed and reaped when dropped, so a
//! failing assertion never leaves a daemon running.

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
