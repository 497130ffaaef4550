//! The bot's proactive-send pace (spec §4.3: 30 a minute, 1000 an hour, at least 2 s apart;
//! whether per bot or per chat is unconfirmed, so per bot, the stricter). Replies on a
//! callback's handle are not proactive sends and are not paced here (the crate keeps one frame
//! in flight per handle). A send that would wait longer than a moment is handed back to the
//! outbox as a slow-down, so status says how many wait and when the next goes.

use std::sync::Mutex;
use std::time::Duration;

use scv_wecom::limits::SEND_SPACING;
use scv_wecom::pace::SendPacer;
use tokio::time::Instant;

/// WeCom's declared pace: proactive sends at least [`SEND_SPACING`] apart over the bot (the
/// crate's pacer also keeps the minute and hour budgets); replies on a handle need no gap.
pub const PACE: crate::port::pace::Pace = crate::port::pace::Pace {
    per_chat: Duration::ZERO,
    per_bot: SEND_SPACING,
    per_group: Duration::ZERO,
};

/// The longest a send waits in place for its slot; longer waits go back to the outbox.
pub(super) const MAX_INLINE_WAIT: Duration =
    Duration::from_millis(SEND_SPACING.as_millis() as u64 + 500);

/// One pacer per run of the account.
#[derive(Default)]
pub(super) struct Pace {
    pacer: Mutex<SendPacer>,
}

impl Pace {
    /// Takes the next slot if it comes within [`MAX_INLINE_WAIT`] and waits for it; else
    /// returns how long until it comes (nothing is taken).
    pub async fn take(&self) -> Result<(), Duration> {
        let at = self.reserve(Instant::now())?;
        tokio::time::sleep_until(at).await;
        Ok(())
    }

    fn reserve(&self, now: Instant) -> Result<Instant, Duration> {
        let Ok(mut p) = self.pacer.lock() else {
            return Ok(now);
        };
        let at = p.next_at(now);
        let wait = at.saturating_duration_since(now);
        if wait > MAX_INLINE_WAIT {
            return Err(wait);
        }
        p.record(at);
        Ok(at)
    }

    /// Holds every send for `wait` (after the platform answered `45009`).
    pub fn hold_for(&self, wait: Duration) {
        if let Ok(mut p) = self.pacer.lock() {
            p.hold_for(Instant::now(), wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_go_two_seconds_apart_and_a_longer_wait_goes_back_to_the_outbox() {
        let pace = Pace::default();
        let t0 = Instant::now();
        assert_eq!(pace.reserve(t0), Ok(t0));
        assert_eq!(
            pace.reserve(t0),
            Ok(t0 + SEND_SPACING),
            "2 s after the first"
        );
        let wait = pace
            .reserve(t0)
            .expect_err("a third at once would wait 4 s");
        assert_eq!(wait, 2 * SEND_SPACING);
        assert_eq!(
            pace.reserve(t0 + 2 * SEND_SPACING),
            Ok(t0 + 2 * SEND_SPACING),
            "nothing was taken by the refused one"
        );
        pace.hold_for(Duration::from_secs(60));
        let held = pace.reserve(Instant::now()).expect_err("held after 45009");
        assert!(held > Duration::from_secs(55), "{held:?}");
    }
}
