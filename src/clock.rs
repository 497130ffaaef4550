//! The one clock every module reads "now" from and waits with: the wall clock in the daemon,
//! paused tokio time or a hand-moved clock in tests. A leaf: it imports nothing of the daemon.
//!
//! Times people and the store see are Unix milliseconds (and UTC dates for mail days). Waiting
//! goes through tokio, and the wall clock re-checks after every wake-up, so a machine that was
//! suspended or had its time set by NTP still wakes at the right wall time. Tests that need
//! exact steps use [`Clock::manual`]: the store runs on its own thread, so a paused tokio clock
//! auto-advances whenever the runtime waits on it and could skip steps.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tokio::time::Instant;

/// Where "now" comes from; cheap to clone, and every clone reads and moves the same clock.
#[derive(Clone)]
pub struct Clock(Source);

#[derive(Clone)]
enum Source {
    /// The system's wall clock; it never "jumps" in the sense of [`Clock::jumps`].
    Wall(Arc<watch::Sender<u64>>),
    /// Unix time at `base_instant` plus tokio's elapsed time since then (paused in tests).
    Tokio {
        base_instant: Instant,
        base_ms: u64,
        jumps: Arc<watch::Sender<u64>>,
    },
    /// Moves only when a test calls [`Clock::advance`] or [`Clock::set`].
    Manual(Arc<watch::Sender<u64>>),
}

/// Wall-clock Unix milliseconds (0 before 1970).
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Clock {
    /// The daemon's clock: the system's wall time.
    pub fn system() -> Self {
        Clock(Source::Wall(Arc::new(watch::channel(0).0)))
    }

    /// A clock that starts at the wall time, then follows tokio time (paused-clock tests).
    pub fn tokio() -> Self {
        Clock(Source::Tokio {
            base_instant: Instant::now(),
            base_ms: wall_ms(),
            jumps: Arc::new(watch::channel(0).0),
        })
    }

    /// A clock that stands at `unix_ms` until moved (tests).
    pub fn manual(unix_ms: u64) -> Self {
        Clock(Source::Manual(Arc::new(watch::channel(unix_ms).0)))
    }

    /// A clock that stands at `at` until moved (tests that think in dates).
    pub fn manual_at(at: DateTime<Utc>) -> Self {
        Clock::manual(at.timestamp_millis().max(0) as u64)
    }

    /// Now, in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        match &self.0 {
            Source::Wall(_) => wall_ms(),
            Source::Tokio {
                base_instant,
                base_ms,
                ..
            } => base_ms + base_instant.elapsed().as_millis() as u64,
            Source::Manual(tx) => *tx.borrow(),
        }
    }

    /// Now, in whole Unix seconds.
    pub fn unix_secs(&self) -> u64 {
        self.now_ms() / 1000
    }

    /// Now, as a UTC date and time (mail days, digest intervals).
    pub fn now_utc(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.now_ms() as i64).unwrap_or_default()
    }

    /// Moves a manual clock forward by `d` (no effect on the others).
    pub fn advance(&self, d: Duration) {
        if let Source::Manual(tx) = &self.0 {
            tx.send_modify(|t| *t += d.as_millis() as u64);
        }
    }

    /// Sets a manual clock to `unix_ms` (no effect on the others).
    pub fn set(&self, unix_ms: u64) {
        if let Source::Manual(tx) = &self.0 {
            tx.send_replace(unix_ms);
        }
    }

    /// Sets a manual clock to `at` (no effect on the others).
    pub fn set_utc(&self, at: DateTime<Utc>) {
        self.set(at.timestamp_millis().max(0) as u64);
    }

    /// Changes whenever a manual clock is moved; the others never change it. Loops that sleep
    /// until a computed moment also wake on it, to recompute.
    pub fn jumps(&self) -> watch::Receiver<u64> {
        match &self.0 {
            Source::Wall(tx) | Source::Manual(tx) => tx.subscribe(),
            Source::Tokio { jumps, .. } => jumps.subscribe(),
        }
    }

    /// Resolves once the clock reads at least `unix_ms`.
    pub async fn sleep_until(&self, unix_ms: u64) {
        match &self.0 {
            Source::Wall(_) => loop {
                // Re-read after every wake-up: tokio's timer runs on the monotonic clock, which
                // stands still while the machine sleeps and ignores wall-time corrections.
                let now = wall_ms();
                if now >= unix_ms {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(unix_ms - now)).await;
            },
            Source::Tokio {
                base_instant,
                base_ms,
                ..
            } => {
                let at = *base_instant + Duration::from_millis(unix_ms.saturating_sub(*base_ms));
                tokio::time::sleep_until(at).await;
            }
            Source::Manual(tx) => {
                let mut rx = tx.subscribe();
                let _ = rx.wait_for(|t| *t >= unix_ms).await;
            }
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manual_clock_wakes_sleepers_only_when_moved_far_enough() {
        let c = Clock::manual(1_000);
        let sleeper = tokio::spawn({
            let c = c.clone();
            async move { c.sleep_until(5_000).await }
        });
        c.advance(Duration::from_millis(3_000));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        c.advance(Duration::from_millis(1_000));
        sleeper.await.expect("sleeper");
        assert_eq!(c.now_ms(), 5_000);
    }

    #[tokio::test(start_paused = true)]
    async fn the_tokio_clock_follows_paused_time() {
        let c = Clock::tokio();
        let t0 = c.now_ms();
        c.sleep_until(t0 + 90_000).await;
        assert!(c.now_ms() >= t0 + 90_000);
    }

    #[tokio::test]
    async fn moving_a_manual_clock_is_a_jump_and_dates_follow_it() {
        let start = DateTime::parse_from_rfc3339("2026-12-01T23:59:00Z")
            .expect("a valid date")
            .with_timezone(&Utc);
        let c = Clock::manual_at(start);
        let mut jumps = c.jumps();
        c.advance(Duration::from_secs(120));
        jumps.changed().await.expect("a jump");
        assert_eq!(c.now_utc().to_rfc3339(), "2026-12-02T00:01:00+00:00");
        assert_eq!(c.unix_secs(), start.timestamp() as u64 + 120);
    }

    #[tokio::test]
    async fn the_wall_clock_reads_the_system_time_and_a_past_moment_is_already_reached() {
        let c = Clock::system();
        let now = c.now_ms();
        assert!(now.abs_diff(wall_ms()) < 5_000);
        c.sleep_until(now.saturating_sub(1)).await;
    }
}
