//! The robot's own send pace, on top of the core's per-chat interval: the new API allows about
//! [`API_QPS`] calls a second per app and API (spec §4.9), so the app's sends through one
//! path keep a gap of 1/20 s; and into one group at most 20 a minute, the only figure DingTalk
//! documents for robots writing to a group (custom robots, spec §6; for session webhooks and
//! internal robots the limit is unconfirmed, so the safe side takes the documented one). Direct
//! chats wait for nothing else: no 1 s account-wide gap as on WeChat.
//!
//! Hand-written rather than a rate-limiter crate: fixed gaps reserved under one lock, on
//! tokio's clock (so paused-time tests drive it).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use scv_dingtalk::limits::API_QPS;
use tokio::time::Instant;

/// Least gap between two calls of the app through one path.
pub(super) const API_GAP: Duration = Duration::from_millis(1000 / API_QPS as u64);
/// Least gap between two sends into one group (20 a minute).
pub(super) const GROUP_GAP: Duration = Duration::from_secs(3);

/// Which send path a call takes (each has its own QPS budget on the platform).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Path {
    /// A message's reply webhook.
    Webhook,
    /// `oToMessages/batchSend`.
    User,
    /// `groupMessages/send`.
    Group,
    /// `media/upload`.
    Upload,
}

/// The next free moments of each path and of each group. One per run of the account.
#[derive(Default)]
pub(super) struct Pace {
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    paths: HashMap<Path, Instant>,
    groups: HashMap<String, Instant>,
}

impl Pace {
    /// Waits for the next moment a call on `path` (into `group`, if one) may go, and reserves it.
    pub(super) async fn wait(&self, path: Path, group: Option<&str>) {
        let at = self.reserve(path, group, Instant::now());
        tokio::time::sleep_until(at).await;
    }

    fn reserve(&self, path: Path, group: Option<&str>, now: Instant) -> Instant {
        let Ok(mut s) = self.slots.lock() else {
            return now;
        };
        let mut at = s.paths.get(&path).map_or(now, |p| (*p).max(now));
        if let Some(g) = group {
            if let Some(next) = s.groups.get(g) {
                at = at.max(*next);
            }
            s.groups.insert(g.to_string(), at + GROUP_GAP);
            if s.groups.len() > 4096 {
                s.groups.retain(|_, next| *next > now);
            }
        }
        s.paths.insert(path, at + API_GAP);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_the_apps_qps_and_groups_their_own_pace() {
        let pace = Pace::default();
        let t0 = Instant::now();
        assert_eq!(pace.reserve(Path::User, None, t0), t0);
        assert_eq!(
            pace.reserve(Path::User, None, t0),
            t0 + API_GAP,
            "another direct chat waits 1/20 s, not 1 s"
        );
        assert_eq!(
            pace.reserve(Path::Webhook, None, t0),
            t0,
            "another path has its own budget"
        );
        let g = pace.reserve(Path::Group, Some("cidG"), t0);
        assert_eq!(g, t0);
        assert_eq!(pace.reserve(Path::Webhook, Some("cidG"), t0), g + GROUP_GAP);
        assert_eq!(API_GAP, Duration::from_millis(50));
    }
}
