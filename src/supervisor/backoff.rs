//! Restart delays: exponential with full jitter, as a pure function a test can drive.

use std::time::Duration;

/// The backoff curve: `base * 2^attempt`, capped, then scaled by a jitter draw in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// The delay ceiling of the first retry.
    pub base: Duration,
    /// The largest delay ever returned.
    pub cap: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        BackoffPolicy {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(300),
        }
    }
}

impl BackoffPolicy {
    /// The ceiling for retry number `attempt` (0-based): `min(cap, base * 2^attempt)`.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The delay for retry `attempt` given a jitter draw `jitter` in `[0, 1]` (full jitter).
    pub fn delay(&self, attempt: u32, jitter: f64) -> Duration {
        self.ceiling(attempt).mul_f64(jitter.clamp(0.0, 1.0))
    }
}

/// A uniform draw in `[0, 1]` from the thread's RNG.
pub fn random_jitter() -> f64 {
    rand::random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_double_from_one_second_up_to_five_minutes() {
        let p = BackoffPolicy::default();
        let secs: Vec<u64> = (0..12).map(|a| p.ceiling(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(300), "no overflow");
    }

    #[test]
    fn full_jitter_spans_zero_to_the_ceiling() {
        let p = BackoffPolicy::default();
        assert_eq!(p.delay(3, 0.0), Duration::ZERO);
        assert_eq!(p.delay(3, 1.0), Duration::from_secs(8));
        assert_eq!(p.delay(3, 0.5), Duration::from_secs(4));
        assert_eq!(p.delay(3, 7.0), Duration::from_secs(8), "draws are clamped");
        for _ in 0..1000 {
            let d = p.delay(5, random_jitter());
            assert!(d <= Duration::from_secs(32));
        }
    }
}
