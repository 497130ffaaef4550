//! Reconcile as a plain value: what to add, change and remove to get from one account set to another.

use std::collections::BTreeMap;

use crate::config::{AccountKey, AccountSpec};

/// One account as the supervisor should run it: its settings and a fingerprint of its credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredAccount {
    /// The account's effective settings (file plus `channel_set` overrides).
    pub spec: AccountSpec,
    /// Changes whenever the stored credentials change (login, logout); never the secret itself.
    pub credentials: Option<String>,
}

/// The difference between two account sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Accounts only in the new set.
    pub add: Vec<AccountKey>,
    /// Accounts in both whose settings or credentials differ.
    pub change: Vec<AccountKey>,
    /// Accounts only in the old set.
    pub remove: Vec<AccountKey>,
}

impl Diff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.add.is_empty() && self.change.is_empty() && self.remove.is_empty()
    }
}

/// Compares two account sets by value; startup is `diff(&empty, &desired)`.
pub fn diff(
    old: &BTreeMap<AccountKey, DesiredAccount>,
    new: &BTreeMap<AccountKey, DesiredAccount>,
) -> Diff {
    let mut d = Diff::default();
    for (key, want) in new {
        match old.get(key) {
            None => d.add.push(key.clone()),
            Some(have) if have != want => d.change.push(key.clone()),
            Some(_) => {}
        }
    }
    d.remove = old
        .keys()
        .filter(|k| !new.contains_key(k))
        .cloned()
        .collect();
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Channel, ChannelSettings};
    use crate::protocol::{Purpose, RemoteTools, Senders};

    fn acct(name: &str) -> (AccountKey, DesiredAccount) {
        let key = AccountKey::new(Channel::Wechat, name);
        let spec = AccountSpec {
            key: key.clone(),
            enabled: true,
            workspace: None,
            senders: Senders::Owner,
            remote_tools: RemoteTools::None,
            approvals: Default::default(),
            purpose: Purpose::Chat,
            language: Default::default(),
            media: Default::default(),
            settings: ChannelSettings::default(),
        };
        (
            key,
            DesiredAccount {
                spec,
                credentials: Some("fp1".into()),
            },
        )
    }

    fn set(names: &[&str]) -> BTreeMap<AccountKey, DesiredAccount> {
        names.iter().map(|n| acct(n)).collect()
    }

    #[test]
    fn startup_is_a_diff_from_empty() {
        let d = diff(&BTreeMap::new(), &set(&["a", "b"]));
        assert_eq!(d.add.len(), 2);
        assert!(d.change.is_empty() && d.remove.is_empty());
    }

    #[test]
    fn identical_sets_do_nothing() {
        assert!(diff(&set(&["a", "b", "c"]), &set(&["a", "b", "c"])).is_empty());
    }

    #[test]
    fn one_changed_setting_changes_one_account() {
        let old = set(&["a", "b", "c"]);
        let mut new = old.clone();
        let b = new
            .get_mut(&AccountKey::new(Channel::Wechat, "b"))
            .expect("b");
        b.spec.senders = Senders::Anyone;
        let d = diff(&old, &new);
        assert_eq!(d.change, vec![AccountKey::new(Channel::Wechat, "b")]);
        assert!(d.add.is_empty() && d.remove.is_empty());
    }

    #[test]
    fn new_credentials_count_as_a_change() {
        let old = set(&["a"]);
        let mut new = old.clone();
        for v in new.values_mut() {
            v.credentials = Some("fp2".into());
        }
        assert_eq!(diff(&old, &new).change.len(), 1);
    }

    #[test]
    fn added_and_removed_are_reported() {
        let d = diff(&set(&["a", "b"]), &set(&["b", "c"]));
        assert_eq!(d.add, vec![AccountKey::new(Channel::Wechat, "c")]);
        assert_eq!(d.remove, vec![AccountKey::new(Channel::Wechat, "a")]);
        assert!(d.change.is_empty());
    }
}
