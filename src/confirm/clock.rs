//! The questions' clock: Unix milliseconds that advance with tokio time, or by hand in tests.
//!
//! Deadlines are Unix seconds on the wire and in the store, but waiting must go through tokio
//! (paused in tests) or through an explicit manual clock: the store runs on its own thread, so a
//! paused tokio clock would auto-advance whenever the runtime waits on it and skip steps.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// Where the service reads the time and how it waits for a moment.
#[derive(Clone)]
pub struct Clock(Source);

#[derive(Clone)]
enum Source {
    /// Unix time at `base_instant` plus tokio's elapsed time since then.
    Tokio { base_instant: Instant, base_ms: u64 },
    /// Moves only when a test calls [`Clock::advance`] or [`Clock::set`].
    Manual(Arc<watch::Sender<u64>>),
}

impl Clock {
    /// The daemon's clock: starts at the wall clock, then follows tokio time.
    pub fn tokio() -> Self {
        let base_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        Clock(Source::Tokio {
            base_instant: Instant::now(),
            base_ms,
        })
    }

    /// A clock that stands at `unix_ms` until moved (tests).
    pub fn manual(unix_ms: u64) -> Self {
        Clock(Source::Manual(Arc::new(watch::channel(unix_ms).0)))
    }

    /// Now, in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        match &self.0 {
            Source::Tokio {
                base_instant,
                base_ms,
            } => base_ms + base_instant.elapsed().as_millis() as u64,
            Source::Manual(tx) => *tx.borrow(),
        }
    }

    /// Moves a manual clock forward by `d` (no effect on the tokio clock).
    pub fn advance(&self, d: Duration) {
        if let Source::Manual(tx) = &self.0 {
            tx.send_modify(|t| *t += d.as_millis() as u64);
        }
    }

    /// Sets a manual clock to `unix_ms` (no effect on the tokio clock).
    pub fn set(&self, unix_ms: u64) {
        if let Source::Manual(tx) = &self.0 {
            tx.send_replace(unix_ms);
        }
    }

    /// Resolves once the clock reads at least `unix_ms`.
    pub async fn sleep_until(&self, unix_ms: u64) {
        match &self.0 {
            Source::Tokio {
                base_instant,
                base_ms,
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
}
