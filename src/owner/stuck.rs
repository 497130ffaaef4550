//! What the owner is told about one route, and when: the route's condition now (fine, its
//! messages waiting and why, or `failed`) against what was told last.
//!
//! - `failed`: told once per stretch of the failure (its `since`), as before.
//! - Waiting (any pending outbox item of the account, replies too, whose chat's sender wrote
//!   why, or any pending item of an account that is not attached): told once the stretch of
//!   waiting has lasted `[owner] alert_after_seconds` on the daemon's clock, then again only
//!   when its reason gets worse in kind (`rank`); a better reason is not news.
//! - Fine again after something was told: told once that it delivers again.
//!
//! A stretch is timed from when the watcher first saw it, in memory (as the mover's waits): a
//! restart times it again, so an alert may come later than it could, never earlier, and a
//! stretch told before a restart may be told again after it.

use crate::protocol::WaitWhy;

/// A route's condition now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Condition {
    /// Nothing of it waits (or what is queued is being sent).
    Fine,
    /// Its messages wait, for this reason (the worst of its chats'); `command` is the health's
    /// fix, when it names one.
    Waits {
        why: WaitWhy,
        command: Option<String>,
    },
    /// The account failed (`since`: when, Unix seconds; its error and fix command).
    Failed {
        since: u64,
        why: String,
        command: Option<String>,
    },
}

/// How bad a reason to wait is: a change to a higher rank is told again.
pub(super) fn rank(why: WaitWhy) -> u8 {
    match why {
        WaitWhy::Throttle => 1,
        WaitWhy::SendsFailing | WaitWhy::Unknown => 2,
        WaitWhy::SendWindow => 3,
        WaitWhy::AccountDown => 4,
    }
}

/// What was told last about a route.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Told {
    Failed(u64),
    Waits { why: WaitWhy, since_ms: u64 },
}

impl Told {
    /// Names the stretch, for the key of the notice that it ended.
    fn stretch(&self) -> String {
        match self {
            Told::Failed(since) => format!("failed-{since}"),
            Told::Waits { since_ms, .. } => format!("wait-{since_ms}"),
        }
    }
}

/// News to tell the owner about a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum News {
    /// The account failed.
    Stopped {
        since: u64,
        why: String,
        command: Option<String>,
    },
    /// Its messages have waited `minutes` since `since_ms` (daemon clock), for `why`.
    Waits {
        why: WaitWhy,
        since_ms: u64,
        minutes: u64,
        command: Option<String>,
    },
    /// It delivers again after the stretch named `stretch`.
    Back { stretch: String },
}

/// What the watcher does about a route on one look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing new.
    Nothing,
    /// Nothing yet; look again at this instant (daemon clock, ms).
    LookAt(u64),
    /// Tell the owner (then [`RouteWatch::told`]).
    Tell(News),
}

/// One route's watch: the stretch of waiting seen, and what was told.
#[derive(Debug, Clone, Default)]
pub(super) struct RouteWatch {
    waiting_since: Option<u64>,
    told: Option<Told>,
}

impl RouteWatch {
    /// What to do about condition `c` at `now` (ms), with waits told after `bound_ms`.
    pub(super) fn step(&mut self, c: &Condition, now: u64, bound_ms: u64) -> Step {
        match c {
            Condition::Failed {
                since,
                why,
                command,
            } => {
                self.waiting_since = None;
                if self.told == Some(Told::Failed(*since)) {
                    return Step::Nothing;
                }
                Step::Tell(News::Stopped {
                    since: *since,
                    why: why.clone(),
                    command: command.clone(),
                })
            }
            Condition::Waits { why, command } => {
                let since_ms = *self.waiting_since.get_or_insert(now);
                if now < since_ms.saturating_add(bound_ms) {
                    return Step::LookAt(since_ms.saturating_add(bound_ms));
                }
                let news = match &self.told {
                    None => true,
                    Some(Told::Waits { why: told, .. }) => rank(*why) > rank(*told),
                    // Running again but waiting is better than failed: told when it is fine.
                    Some(Told::Failed(_)) => false,
                };
                match news {
                    true => Step::Tell(News::Waits {
                        why: *why,
                        since_ms,
                        minutes: (now - since_ms) / 60_000,
                        command: command.clone(),
                    }),
                    false => Step::Nothing,
                }
            }
            Condition::Fine => {
                self.waiting_since = None;
                match &self.told {
                    Some(t) => Step::Tell(News::Back {
                        stretch: t.stretch(),
                    }),
                    None => Step::Nothing,
                }
            }
        }
    }

    /// Records that `news` was queued for the owner.
    pub(super) fn told(&mut self, news: &News) {
        self.told = match news {
            News::Stopped { since, .. } => Some(Told::Failed(*since)),
            News::Waits { why, since_ms, .. } => Some(Told::Waits {
                why: *why,
                since_ms: *since_ms,
            }),
            News::Back { .. } => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn waits(why: WaitWhy) -> Condition {
        Condition::Waits { why, command: None }
    }

    /// Steps and records what was told, as the watcher does.
    fn look(w: &mut RouteWatch, c: &Condition, now: u64) -> Step {
        let step = w.step(c, now, 10 * MIN);
        if let Step::Tell(n) = &step {
            w.told(n);
        }
        step
    }

    #[test]
    fn a_wait_is_told_after_the_bound_again_when_worse_and_once_when_fine() {
        let mut w = RouteWatch::default();
        let window = waits(WaitWhy::SendWindow);
        assert_eq!(look(&mut w, &window, 0), Step::LookAt(10 * MIN));
        assert_eq!(look(&mut w, &window, 9 * MIN), Step::LookAt(10 * MIN));
        let Step::Tell(News::Waits { minutes, .. }) = look(&mut w, &window, 12 * MIN) else {
            panic!("told after the bound")
        };
        assert_eq!(minutes, 12);
        assert_eq!(look(&mut w, &window, 13 * MIN), Step::Nothing, "once");
        let better = waits(WaitWhy::Throttle);
        assert_eq!(look(&mut w, &better, 14 * MIN), Step::Nothing);
        let worse = waits(WaitWhy::AccountDown);
        assert!(matches!(
            look(&mut w, &worse, 15 * MIN),
            Step::Tell(News::Waits {
                why: WaitWhy::AccountDown,
                since_ms: 0,
                ..
            })
        ));
        assert_eq!(
            look(&mut w, &Condition::Fine, 16 * MIN),
            Step::Tell(News::Back {
                stretch: "wait-0".into()
            })
        );
        assert_eq!(look(&mut w, &Condition::Fine, 17 * MIN), Step::Nothing);
    }

    #[test]
    fn a_short_wait_is_never_told_and_a_failure_is_told_per_stretch() {
        let mut w = RouteWatch::default();
        look(&mut w, &waits(WaitWhy::SendsFailing), 0);
        assert_eq!(look(&mut w, &Condition::Fine, 5 * MIN), Step::Nothing);
        // A new stretch is timed from its own start.
        let again = waits(WaitWhy::SendsFailing);
        assert_eq!(look(&mut w, &again, 6 * MIN), Step::LookAt(16 * MIN));
        let failed = |since| Condition::Failed {
            since,
            why: "ended".into(),
            command: None,
        };
        assert!(matches!(
            look(&mut w, &failed(100), 7 * MIN),
            Step::Tell(News::Stopped { since: 100, .. })
        ));
        assert_eq!(look(&mut w, &failed(100), 8 * MIN), Step::Nothing);
        // Running but waiting after a failure is not news; fine is.
        look(&mut w, &waits(WaitWhy::SendWindow), 9 * MIN);
        assert_eq!(
            look(&mut w, &waits(WaitWhy::SendWindow), 30 * MIN),
            Step::Nothing
        );
        assert!(matches!(
            look(&mut w, &failed(200), 31 * MIN),
            Step::Tell(News::Stopped { since: 200, .. })
        ));
    }
}
