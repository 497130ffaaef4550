//! The restart window: how many times an account that had connected restarted in the last hour.
//! Too many means it connects and drops over and over; the lifecycle then waits the backoff cap.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Restart times within a sliding window (on tokio's clock, so tests can pause it).
#[derive(Debug, Clone)]
pub struct RestartWindow {
    window: Duration,
    restarts: VecDeque<Instant>,
}

impl RestartWindow {
    /// Counts restarts within the last `window`.
    pub fn new(window: Duration) -> Self {
        RestartWindow {
            window,
            restarts: VecDeque::new(),
        }
    }

    /// Records a restart at `now`; returns the restarts within the window, this one included.
    pub fn record(&mut self, now: Instant) -> usize {
        self.forget_before(now);
        self.restarts.push_back(now);
        self.restarts.len()
    }

    /// Restarts within the window ending at `now`.
    pub fn recent(&mut self, now: Instant) -> usize {
        self.forget_before(now);
        self.restarts.len()
    }

    fn forget_before(&mut self, now: Instant) {
        while let Some(&t) = self.restarts.front() {
            if now.duration_since(t) >= self.window {
                self.restarts.pop_front();
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_count_within_the_hour_and_old_ones_expire() {
        let start = Instant::now();
        let mut w = RestartWindow::new(Duration::from_secs(3600));
        for i in 0..10 {
            assert_eq!(
                w.record(start + Duration::from_secs(i * 60)),
                i as usize + 1
            );
        }
        assert_eq!(w.record(start + Duration::from_secs(600)), 11);
        // An hour after the first ones they no longer count.
        assert_eq!(w.recent(start + Duration::from_secs(3600 + 300)), 5);
        assert_eq!(w.record(start + Duration::from_secs(3600 + 300)), 6);
    }
}
