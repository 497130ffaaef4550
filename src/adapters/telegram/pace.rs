//! The bot's own send pace on top of the core's per-chat interval (1 s, `SendLimits`): at most
//! [`BOT_SENDS_PER_SECOND`] over the whole bot and [`GROUP_SENDS_PER_MINUTE`] into one group
//! (spec §4.6). Unlike WeChat, nothing is paced account-wide at 1 s: chats do not wait for each
//! other beyond the bot's 30 a second.
//!
//! Hand-written rather than a rate-limiter crate: two fixed gaps, reserved under one lock, on
//! tokio's clock (so paused-time tests drive it) is all it takes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use scv_telegram::limits::{BOT_SENDS_PER_SECOND, GROUP_SENDS_PER_MINUTE};
use tokio::time::Instant;

/// Least gap between two sends of the bot.
pub(super) const BOT_GAP: Duration = Duration::from_millis(1000 / BOT_SENDS_PER_SECOND as u64);
/// Least gap between two sends into one group.
pub(super) const GROUP_GAP: Duration =
    Duration::from_millis(60_000 / GROUP_SENDS_PER_MINUTE as u64);

/// The next free moments of the bot and of each group. One per run of the account.
#[derive(Default)]
pub(super) struct Pace {
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    bot: Option<Instant>,
    groups: HashMap<i64, Instant>,
}

impl Pace {
    /// Waits for the next moment a message may go to `chat` (groups have negative ids) and
    /// reserves it.
    pub(super) async fn wait(&self, chat: i64) {
        let at = self.reserve(chat, Instant::now());
        tokio::time::sleep_until(at).await;
    }

    /// Reserves the next moment for `chat` only when the chat's own slot is free now, and
    /// waits for the bot's (at most a few of its 1/30 s gaps); `false` leaves everything as it
    /// was. A streamed answer's edits take this, so a busy group skips a frame (the next one
    /// carries the full text anyway) rather than hold the turn.
    pub(super) async fn try_wait(&self, chat: i64) -> bool {
        let now = Instant::now();
        let free = self
            .slots
            .lock()
            .map(|s| chat >= 0 || s.groups.get(&chat).is_none_or(|g| *g <= now))
            .unwrap_or(true);
        if free {
            self.wait(chat).await;
        }
        free
    }

    fn reserve(&self, chat: i64, now: Instant) -> Instant {
        let Ok(mut s) = self.slots.lock() else {
            return now;
        };
        let mut at = s.bot.map_or(now, |b| b.max(now));
        if chat < 0 {
            if let Some(g) = s.groups.get(&chat) {
                at = at.max(*g);
            }
            s.groups.insert(chat, at + GROUP_GAP);
            if s.groups.len() > 4096 {
                s.groups.retain(|_, g| *g > now);
            }
        }
        s.bot = Some(at + BOT_GAP);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_chats_share_only_the_bots_pace_and_groups_wait_their_own() {
        let pace = Pace::default();
        let t0 = Instant::now();
        assert_eq!(pace.reserve(1, t0), t0);
        assert_eq!(
            pace.reserve(2, t0),
            t0 + BOT_GAP,
            "another chat waits 1/30 s, not 1 s"
        );
        let g = pace.reserve(-5, t0);
        assert_eq!(g, t0 + 2 * BOT_GAP);
        assert_eq!(
            pace.reserve(-5, t0),
            g + GROUP_GAP,
            "20 a minute into one group"
        );
        assert_eq!(GROUP_GAP, Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_group_is_not_waited_for_by_a_streamed_edit() {
        let pace = Pace::default();
        assert!(pace.try_wait(-5).await, "a free group");
        assert!(!pace.try_wait(-5).await, "its next slot is 3 s away");
        assert!(
            pace.try_wait(7).await,
            "a private chat waits only the bot's gap"
        );
        tokio::time::advance(GROUP_GAP).await;
        assert!(pace.try_wait(-5).await, "free again after the gap");
    }
}
