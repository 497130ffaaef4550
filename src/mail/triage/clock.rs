//! The wall clock used for days, digest intervals and stored times, injectable for tests.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

/// Where "now" comes from. Policy code asks this, never `Utc::now()` directly.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;

    /// Changes whenever the clock jumps (a test moved it); the system clock never jumps.
    fn jumps(&self) -> watch::Receiver<u64>;
}

/// The system's wall clock.
pub struct SystemClock {
    jumps: watch::Sender<u64>,
}

impl SystemClock {
    /// The system clock as a shared [`Clock`].
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(SystemClock {
            jumps: watch::channel(0).0,
        })
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn jumps(&self) -> watch::Receiver<u64> {
        self.jumps.subscribe()
    }
}

/// A clock that only moves when told to: tests cross midnight or a digest interval at once.
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    jumps: watch::Sender<u64>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> Arc<Self> {
        Arc::new(ManualClock {
            now: Mutex::new(start),
            jumps: watch::channel(0).0,
        })
    }

    /// Moves the clock to `t` and wakes everyone waiting on it.
    pub fn set(&self, t: DateTime<Utc>) {
        if let Ok(mut now) = self.now.lock() {
            *now = t;
        }
        self.jumps.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: chrono::Duration) {
        let t = self.now() + d;
        self.set(t);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        self.now
            .lock()
            .map(|n| *n)
            .unwrap_or_else(|p| *p.into_inner())
    }

    fn jumps(&self) -> watch::Receiver<u64> {
        self.jumps.subscribe()
    }
}
