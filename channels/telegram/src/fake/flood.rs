//! Flood control (spec §4.6, §8.12): token buckets per chat (1/s after a small burst), per group
//! (20/min) and per bot (30/s), on tokio time. A refused send costs nothing and learns
//! `retry_after`, the whole seconds until its buckets would let it through.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// One bucket: `capacity` tokens, refilled at `per_second`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    capacity: f64,
    per_second: f64,
    at: Instant,
}

impl Bucket {
    fn new(capacity: f64, per_second: f64) -> Bucket {
        Bucket {
            tokens: capacity,
            capacity,
            per_second,
            at: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + gained).min(self.capacity);
        self.at = now;
    }

    /// How long until one token is there (zero if it is now).
    fn wait(&self) -> Duration {
        if self.tokens >= 1.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - self.tokens) / self.per_second)
        }
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
        let chat = self
            .chats
            .entry(chat_id)
            .or_insert_with(|| Bucket::new(f64::from(burst.max(1)), 1.0));
        chat.refill(now);
        let mut wait = chat.wait();
        if is_group {
            let group = self
                .groups
                .entry(chat_id)
                .or_insert_with(|| Bucket::new(20.0, 20.0 / 60.0));
            group.refill(now);
            wait = wait.max(group.wait());
        }
        let bot = self.bot.get_or_insert_with(|| Bucket::new(30.0, 30.0));
        bot.refill(now);
        wait = wait.max(bot.wait());
        if !wait.is_zero() {
            return Err(wait.as_secs_f64().ceil().max(1.0) as u64);
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
            b.tokens -= 1.0;
        }
        Ok(())
    }
}
