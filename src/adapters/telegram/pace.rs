//! Telegram's declared pace (spec §4.6) and the bot's pacer: one message a second into one chat
//! (kept by the core), at most [`BOT_SENDS_PER_SECOND`] over the whole bot and
//! [`GROUP_SENDS_PER_MINUTE`] into one group (kept here). Unlike WeChat, nothing is paced
//! account-wide at 1 s: chats do not wait for each other beyond the bot's 30 a second.

use std::time::Duration;

use scv_telegram::limits::{BOT_SENDS_PER_SECOND, CHAT_SEND_INTERVAL, GROUP_SENDS_PER_MINUTE};

use crate::port::pace::{Pace as Declared, Pacer};

/// Telegram's limits as gaps: what `Platform::pace` declares and what [`Pace`] keeps.
pub const PACE: Declared = Declared {
    per_chat: CHAT_SEND_INTERVAL,
    per_bot: Duration::from_millis(1000 / BOT_SENDS_PER_SECOND as u64),
    per_group: Duration::from_millis(60_000 / GROUP_SENDS_PER_MINUTE as u64),
};

/// The bot's pacer, one per run of the account; groups are the chats with negative ids.
pub(super) struct Pace(Pacer);

impl Default for Pace {
    fn default() -> Self {
        Pace(Pacer::new(PACE))
    }
}

impl Pace {
    /// Waits for the next moment a message may go to `chat` and reserves it.
    pub(super) async fn wait(&self, chat: i64) {
        self.0.wait((), group(chat).as_deref()).await;
    }

    /// [`Pace::wait`] only when `chat`'s own group slot is free now (see [`Pacer::try_wait`]).
    pub(super) async fn try_wait(&self, chat: i64) -> bool {
        self.0.try_wait((), group(chat).as_deref()).await
    }
}

/// The group slot `chat` takes: groups and supergroups have negative ids.
fn group(chat: i64) -> Option<String> {
    (chat < 0).then(|| chat.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[test]
    fn private_chats_share_only_the_bots_pace_and_groups_wait_their_own() {
        let pace = Pace::default();
        let t0 = Instant::now();
        let reserve = |chat: i64| pace.0.reserve((), group(chat).as_deref(), t0);
        assert_eq!(reserve(1), t0);
        assert_eq!(
            reserve(2),
            t0 + PACE.per_bot,
            "another chat waits 1/30 s, not 1 s"
        );
        let g = reserve(-5);
        assert_eq!(g, t0 + 2 * PACE.per_bot);
        assert_eq!(
            reserve(-5),
            g + PACE.per_group,
            "20 a minute into one group"
        );
        assert_eq!(PACE.per_group, Duration::from_secs(3));
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
        tokio::time::advance(PACE.per_group).await;
        assert!(pace.try_wait(-5).await, "free again after the gap");
    }
}
