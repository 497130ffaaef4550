//! How fast a platform may be sent to, declared once by each platform from its documented limits
//! ([`Pace`], returned by `Platform::pace`), and the [`Pacer`] that keeps one account's sends
//! inside it.
//!
//! The core paces each chat by [`Pace::per_chat`] (the conversation's sender waits that long
//! between two sends to one chat). A platform that also limits the whole bot or each group
//! reserves its sends with a [`Pacer`] built from the same value, so the figure the registry
//! shows is the figure that is kept. WeChat's account-wide gap is its own sender's (one send at a
//! time per account), seeded from the same declared value and configurable.
//!
//! Hand-written rather than a rate-limiter crate: fixed gaps reserved under one lock, on tokio's
//! clock (so paused-time tests drive it), is all the platforms' documented limits need.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A platform's send limits as gaps: the least time between two sends to one chat, of the whole
/// bot (per lane, where the platform budgets its APIs apart), and into one group. `ZERO` means
/// the platform sets no such limit. Declared by each platform; stable per platform version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Least gap between two sends to the same chat (the core keeps it).
    pub per_chat: Duration,
    /// Least gap between two sends of the bot (per lane).
    pub per_bot: Duration,
    /// Least gap between two sends into one group.
    pub per_group: Duration,
}

impl Pace {
    /// No limit at all (mail, the in-memory test chat).
    pub const NONE: Pace = Pace {
        per_chat: Duration::ZERO,
        per_bot: Duration::ZERO,
        per_group: Duration::ZERO,
    };

    /// Sends a second the bot may make at most, for people and benches (`None`: unlimited).
    pub fn bot_rate(&self) -> Option<f64> {
        (!self.per_bot.is_zero()).then(|| 1.0 / self.per_bot.as_secs_f64())
    }
}

/// Groups remembered before the lapsed ones are forgotten (a bot in thousands of groups).
const GROUPS_KEPT: usize = 4096;

/// The next free moments of each lane of the bot and of each group, for one run of an account.
/// `L` names the lanes a platform budgets apart (`()` for one budget over the whole bot).
pub struct Pacer<L = ()> {
    pace: Pace,
    slots: Mutex<Slots<L>>,
}

struct Slots<L> {
    lanes: HashMap<L, Instant>,
    groups: HashMap<String, Instant>,
}

impl<L: Hash + Eq + Copy> Pacer<L> {
    /// A pacer keeping `pace`'s bot and group gaps.
    pub fn new(pace: Pace) -> Self {
        Pacer {
            pace,
            slots: Mutex::new(Slots {
                lanes: HashMap::new(),
                groups: HashMap::new(),
            }),
        }
    }

    /// Waits for the next moment a send on `lane` (into `group`, if one) may go, and reserves it.
    pub async fn wait(&self, lane: L, group: Option<&str>) {
        let at = self.reserve(lane, group, Instant::now());
        tokio::time::sleep_until(at).await;
    }

    /// [`Pacer::wait`] only when the group's own slot is free now (a send outside groups always
    /// is); `false` leaves everything as it was. A streamed answer's edits take this, so a busy
    /// group skips a frame (the next one carries the full text anyway) rather than hold the turn.
    pub async fn try_wait(&self, lane: L, group: Option<&str>) -> bool {
        let now = Instant::now();
        let free = match (self.slots.lock(), group) {
            (Ok(s), Some(g)) => s.groups.get(g).is_none_or(|next| *next <= now),
            _ => true,
        };
        if free {
            self.wait(lane, group).await;
        }
        free
    }

    /// Reserves the first moment from `now` that keeps both gaps; a poisoned lock paces nothing
    /// rather than stopping every send.
    pub fn reserve(&self, lane: L, group: Option<&str>, now: Instant) -> Instant {
        let Ok(mut s) = self.slots.lock() else {
            return now;
        };
        let mut at = s.lanes.get(&lane).map_or(now, |next| (*next).max(now));
        if let Some(g) = group {
            if let Some(next) = s.groups.get(g) {
                at = at.max(*next);
            }
            s.groups.insert(g.to_string(), at + self.pace.per_group);
            if s.groups.len() > GROUPS_KEPT {
                s.groups.retain(|_, next| *next > now);
            }
        }
        s.lanes.insert(lane, at + self.pace.per_bot);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACE: Pace = Pace {
        per_chat: Duration::from_secs(1),
        per_bot: Duration::from_millis(50),
        per_group: Duration::from_secs(3),
    };

    #[test]
    fn lanes_keep_the_bots_gap_and_groups_their_own() {
        let pacer = Pacer::new(PACE);
        let t0 = Instant::now();
        assert_eq!(pacer.reserve(1, None, t0), t0);
        assert_eq!(pacer.reserve(1, None, t0), t0 + PACE.per_bot);
        assert_eq!(
            pacer.reserve(2, None, t0),
            t0,
            "another lane, its own budget"
        );
        let g = pacer.reserve(2, Some("g"), t0);
        assert_eq!(g, t0 + PACE.per_bot);
        assert_eq!(pacer.reserve(1, Some("g"), t0), g + PACE.per_group);
        assert_eq!(PACE.bot_rate(), Some(20.0));
        assert_eq!(Pace::NONE.bot_rate(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_group_is_not_waited_for_by_try_wait() {
        let pacer = Pacer::new(PACE);
        assert!(pacer.try_wait((), Some("g")).await, "a free group");
        assert!(
            !pacer.try_wait((), Some("g")).await,
            "its next slot is 3 s away"
        );
        assert!(
            pacer.try_wait((), None).await,
            "outside groups: the bot's gap only"
        );
        tokio::time::advance(PACE.per_group).await;
        assert!(
            pacer.try_wait((), Some("g")).await,
            "free again after the gap"
        );
    }
}
