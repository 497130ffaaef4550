//! DingTalk's declared pace and the robot's pacer, on top of the core's per-chat interval: the
//! new API allows about [`API_QPS`] calls a second per app and API (spec §4.9), so the app's
//! sends through one path keep a gap of 1/20 s; and into one group at most 20 a minute, the only
//! figure DingTalk documents for robots writing to a group (custom robots, spec §6; for session
//! webhooks and internal robots the limit is unconfirmed, so the safe side takes the documented
//! one). Direct chats wait for nothing else: no 1 s account-wide gap as on WeChat.

use std::time::Duration;

use scv_dingtalk::limits::API_QPS;

use crate::port::pace::{Pace as Declared, Pacer};

/// DingTalk's limits as gaps: what `Platform::pace` declares and what [`Pace`] keeps. One chat
/// waits no more than its path's gap.
pub const PACE: Declared = Declared {
    per_chat: Duration::from_millis(1000 / API_QPS as u64),
    per_bot: Duration::from_millis(1000 / API_QPS as u64),
    per_group: Duration::from_secs(3),
};

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

/// The robot's pacer, one per run of the account: a lane per path.
pub(super) struct Pace(Pacer<Path>);

impl Default for Pace {
    fn default() -> Self {
        Pace(Pacer::new(PACE))
    }
}

impl Pace {
    /// Waits for the next moment a call on `path` (into `group`, if one) may go, and reserves it.
    pub(super) async fn wait(&self, path: Path, group: Option<&str>) {
        self.0.wait(path, group).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[test]
    fn paths_keep_the_apps_qps_and_groups_their_own_pace() {
        let pace = Pace::default();
        let t0 = Instant::now();
        let reserve = |path, group| pace.0.reserve(path, group, t0);
        assert_eq!(reserve(Path::User, None), t0);
        assert_eq!(
            reserve(Path::User, None),
            t0 + PACE.per_bot,
            "another direct chat waits 1/20 s, not 1 s"
        );
        assert_eq!(
            reserve(Path::Webhook, None),
            t0,
            "another path has its own budget"
        );
        let g = reserve(Path::Group, Some("cidG"));
        assert_eq!(g, t0);
        assert_eq!(reserve(Path::Webhook, Some("cidG")), g + PACE.per_group);
        assert_eq!(PACE.per_bot, Duration::from_millis(50));
    }
}
