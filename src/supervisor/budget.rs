//! The restart budget: too many restarts in a sliding window means something is wrong for good.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Counts restarts within a sliding window.
#[derive(Debug, Clone)]
pub struct RestartBudget {
    window: Duration,
    max: usize,
    restarts: VecDeque<Instant>,
}

impl RestartBudget {
    /// Allows `max` restarts per `window`.
    pub fn new(max: usize, window: Duration) -> Self {
        RestartBudget {
            window,
            max,
            restarts: VecDeque::new(),
        }
    }

    /// Records a restart at `now`; false when this one exceeds the budget.
    pub fn record(&mut self, now: Instant) -> bool {
        self.forget_before(now);
        self.restarts.push_back(now);
        self.restarts.len() <= self.max
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
    fn eleventh_restart_within_an_hour_is_refused_and_old_ones_expire() {
        let start = Instant::now();
        let mut b = RestartBudget::new(10, Duration::from_secs(3600));
        for i in 0..10 {
            assert!(b.record(start + Duration::from_secs(i * 60)), "restart {i}");
        }
        assert!(!b.record(start + Duration::from_secs(600)));
        // An hour after the first ones they no longer count.
        assert_eq!(b.recent(start + Duration::from_secs(3600 + 300)), 5);
        assert!(b.record(start + Duration::from_secs(3600 + 300)));
    }
}
