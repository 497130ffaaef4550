//! The `[owner]` table: the chats that reach the same person, in order of preference, and how
//! long a message may wait on one before it moves to the next (`owner/mover.rs`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{AccountKey, AccountSpec, Channel};

/// The wait before a message moves on when the table does not say (5 minutes).
pub const MOVE_AFTER_DEFAULT: u64 = 300;

/// How long a route's messages may wait before the owner is told on another route, when the
/// table does not say (10 minutes).
pub const ALERT_AFTER_DEFAULT: u64 = 600;

/// `[owner]`: `routes = ["wechat:phone", "feishu:work"]`, `move_after_seconds = 300`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerConfig {
    /// Chat accounts whose owner is the same person, most preferred first. Empty: questions,
    /// digests and sends go where `notify` (or the asker) says, and never move.
    #[serde(default)]
    pub routes: Vec<AccountKey>,
    /// How long a message may wait on a route (window closed, account down, sends failing)
    /// before it moves to the next one (10 to 86400; default 300).
    pub move_after_seconds: Option<u64>,
    /// How long a route's messages (replies too) may wait before the owner is told on another
    /// route (`owner/stuck.rs`; 60 to 86400; default 600).
    pub alert_after_seconds: Option<u64>,
}

impl OwnerConfig {
    /// The wait before a message moves on.
    pub fn move_after(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.move_after_seconds.unwrap_or(MOVE_AFTER_DEFAULT))
    }

    /// How long a route's messages may wait before the owner is told.
    pub fn alert_after(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.alert_after_seconds.unwrap_or(ALERT_AFTER_DEFAULT))
    }

    /// What is wrong with the table, as (key, message): a route that is not a configured chat
    /// account, or one named twice (`move_after_seconds`' range is checked with every other
    /// number's, `config/ranges.rs`).
    pub(super) fn check(
        &self,
        accounts: &BTreeMap<AccountKey, AccountSpec>,
    ) -> Option<(&'static str, String)> {
        for (i, r) in self.routes.iter().enumerate() {
            if accounts
                .get(r)
                .is_none_or(|a| a.key.channel == Channel::Mail)
            {
                return Some((
                    "routes",
                    format!(
                        "expected configured chat accounts, found '{r}' (not a configured chat account)"
                    ),
                ));
            }
            if self.routes[..i].contains(r) {
                return Some(("routes", format!("'{r}' is named twice")));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    fn parse(owner: &str) -> Result<Config, String> {
        let text = format!("[wechat.phone]\n[feishu.work]\n[owner]\n{owner}");
        Config::parse(Path::new("c.toml"), &text).map_err(|e| e.to_string())
    }

    #[test]
    fn routes_name_configured_chats_once_and_the_wait_is_in_range() {
        let c = parse("routes = [\"wechat:phone\", \"feishu:work\"]\n").expect("valid");
        assert_eq!(c.owner.routes.len(), 2);
        assert_eq!(c.owner.move_after().as_secs(), 300);
        let e = parse("routes = [\"wechat:phone\", \"feishu:home\"]\n").expect_err("unknown");
        assert!(
            e.contains("owner.routes") && e.contains("feishu:home"),
            "{e}"
        );
        let e = parse("routes = [\"wechat:phone\", \"wechat:phone\"]\n").expect_err("twice");
        assert!(e.contains("named twice"), "{e}");
        let e = parse("move_after_seconds = 5\n").expect_err("too short");
        assert!(e.contains("from 10 to 86400"), "{e}");
        assert_eq!(c.owner.alert_after().as_secs(), 600);
        let e = parse("alert_after_seconds = 30\n").expect_err("too short");
        assert!(e.contains("from 60 to 86400"), "{e}");
        let e = parse("route = []\n").expect_err("unknown key");
        assert!(e.contains("route"), "{e}");
    }
}
