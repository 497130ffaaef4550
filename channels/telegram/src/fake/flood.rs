//! Flood control (spec §4.6, §8.12): per chat (1/s after a small burst), per group (20/min)
//! and per bot (30/s), on tokio time. Each limit is a GCRA bucket (a "theoretical arrival
//! time" in whole nanoseconds, so waiting exactly `retry_after` always suffices, with no
//! rounding drift). A refused send costs nothing and learns `retry_after`, the whole seconds
//! until every bucket it needs lets it through.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// One limit: `burst` sends at once, then one per `interval`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// When the bucket would be empty again if nothing more were sent.
    tat: Instant,
    interval: Duration,
    burst: u32,
}

impl Bucket {
    fn new(burst: u32, interval: Duration) -> Bucket {
        Bucket {
            tat: Instant::now(),
            interval,
            burst: burst.max(1),
        }
    }

    /// How long until one more send fits (zero if it does now).
    fn wait(&self, now: Instant) -> Duration {
        let tat = self.tat.max(now);
        let slack = self.interval * (self.burst - 1);
        (tat - now).saturating_sub(slack)
    }

    fn take(&mut self, now: Instant) {
        self.tat = self.tat.max(now) + self.interval;
    }
}

#[derive(Debug, Default)]
pub(crate) struct Flood {
    chats: HashMap<i64, Bucket>,
    groups: HashMap<i64, Bucket>,
    bot: Option<Bucket>,
}

impl Flood {
    /// Takes one send into `chat_id` or answers the `retry_after` seconds (at least 1).
    pub fn take(&mut self, chat_id: i64, is_group: bool, burst: u32) -> Result<(), u64> {
        let now = Instant::now();
        let chat = *self
            .chats
            .entry(chat_id)
            .or_insert_with(|| Bucket::new(burst, Duration::from_secs(1)));
        let group = is_group.then(|| {
            *self
                .groups
                .entry(chat_id)
                .or_insert_with(|| Bucket::new(20, Duration::from_secs(3)))
        });
        let bot = *self
            .bot
            .get_or_insert_with(|| Bucket::new(30, Duration::from_nanos(1_000_000_000 / 30)));
        let wait = [Some(chat), group, Some(bot)]
            .into_iter()
            .flatten()
            .map(|b| b.wait(now))
            .max()
            .unwrap_or_default();
        if !wait.is_zero() {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return Err(secs.max(1));
        }
        for b in [
            self.chats.get_mut(&chat_id),
            if is_group {
                self.groups.get_mut(&chat_id)
            } else {
                None
            },
            self.bot.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            b.take(now);
        }
        Ok(())
    }
}
