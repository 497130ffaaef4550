//! Pacing of proactive sends (§4.3): at least 2 s apart, at most 30 a minute and 1000 an hour.
//!
//! Whether the platform counts per bot or per chat is unconfirmed, so one [`SendPacer`] per
//! bot (the stricter reading) is the safe use. Made by the account task; it keeps only the
//! times of the last hour's sends.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::limits::{SEND_PER_HOUR, SEND_PER_MINUTE, SEND_SPACING};

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

/// When the next proactive send may go.
#[derive(Debug, Clone, Default)]
pub struct SendPacer {
    sent: VecDeque<Instant>,
    hold: Option<Instant>,
}

impl SendPacer {
    /// A pacer with no sends yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The earliest instant a send may go, seen from `now`.
    pub fn next_at(&self, now: Instant) -> Instant {
        let mut at = now;
        if let Some(last) = self.sent.back() {
            at = at.max(*last + SEND_SPACING);
        }
        // The n-th newest send leaves the window when the window has passed since it.
        let nth = |n: u32| {
            self.sent
                .len()
                .checked_sub(n as usize)
                .map(|i| self.sent[i])
        };
        if let Some(t) = nth(SEND_PER_MINUTE) {
            at = at.max(t + MINUTE);
        }
        if let Some(t) = nth(SEND_PER_HOUR) {
            at = at.max(t + HOUR);
        }
        self.hold.map_or(at, |h| at.max(h))
    }

    /// Records a send made at `at`.
    pub fn record(&mut self, at: Instant) {
        self.sent.push_back(at);
        while self
            .sent
            .front()
            .is_some_and(|t| at.duration_since(*t) >= HOUR)
        {
            self.sent.pop_front();
        }
    }

    /// Holds every send until `now + wait` (after a `SlowDown(wait)` answer).
    pub fn hold_for(&mut self, now: Instant, wait: Duration) {
        let until = now + wait;
        self.hold = Some(self.hold.map_or(until, |h| h.max(until)));
    }

    /// Waits for the next slot and takes it.
    pub async fn wait(&mut self) {
        let at = self.next_at(Instant::now());
        tokio::time::sleep_until(at).await;
        self.record(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn spacing_the_minute_and_a_hold() {
        let start = Instant::now();
        let mut p = SendPacer::new();
        for _ in 0..SEND_PER_MINUTE {
            p.wait().await;
        }
        // 30 sends 2 s apart took 58 s; the 31st waits for the first to leave the minute.
        assert_eq!(start.elapsed(), SEND_SPACING * (SEND_PER_MINUTE - 1));
        assert_eq!(p.next_at(Instant::now()), start + MINUTE);
        p.hold_for(Instant::now(), Duration::from_secs(60));
        assert_eq!(
            p.next_at(Instant::now()),
            Instant::now() + Duration::from_secs(60)
        );
        p.wait().await;
        assert_eq!(
            start.elapsed(),
            SEND_SPACING * (SEND_PER_MINUTE - 1) + MINUTE
        );
    }

    #[test]
    fn the_hour_limit() {
        let t0 = Instant::now();
        let mut p = SendPacer::new();
        for i in 0..SEND_PER_HOUR {
            p.record(t0 + Duration::from_secs(3 * i as u64));
        }
        let last = t0 + Duration::from_secs(3 * (SEND_PER_HOUR as u64 - 1));
        assert_eq!(p.next_at(last), t0 + HOUR);
    }
}
