//! Counters of the pipeline, per account: what was received, dropped (by reason), answered, sent.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::config::AccountKey;

/// Monotonic counters keyed by (account, name).
#[derive(Default)]
pub struct Stats {
    counts: Mutex<BTreeMap<(String, String), u64>>,
}

impl Stats {
    fn add(&self, account: &AccountKey, name: &str) {
        if let Ok(mut c) = self.counts.lock() {
            *c.entry((account.to_string(), name.to_string()))
                .or_insert(0) += 1;
        }
    }

    pub(crate) fn received(&self, account: &AccountKey) {
        self.add(account, "received");
    }

    pub(crate) fn dropped(&self, account: &AccountKey, reason: &str) {
        self.add(account, &format!("dropped_{reason}"));
    }

    pub(crate) fn answered(&self, account: &AccountKey) {
        self.add(account, "answered");
    }

    pub(crate) fn sent(&self, account: &AccountKey) {
        self.add(account, "sent");
    }

    pub(crate) fn send_failed(&self, account: &AccountKey, class: &str) {
        self.add(account, &format!("send_failed_{class}"));
    }

    /// One counter's value (`received`, `dropped_not_owner`, `answered`, `sent`, `send_failed_transient`...).
    pub fn get(&self, account: &AccountKey, name: &str) -> u64 {
        self.counts
            .lock()
            .ok()
            .and_then(|c| c.get(&(account.to_string(), name.to_string())).copied())
            .unwrap_or(0)
    }

    /// One account's drops by reason (`not_owner` -> 2), for its status.
    pub fn dropped_of(&self, account: &AccountKey) -> BTreeMap<String, u64> {
        let Ok(c) = self.counts.lock() else {
            return BTreeMap::new();
        };
        let key = account.to_string();
        c.range((key.clone(), "dropped_".to_string())..)
            .take_while(|((a, n), _)| *a == key && n.starts_with("dropped_"))
            .map(|((_, n), v)| (n["dropped_".len()..].to_string(), *v))
            .collect()
    }

    /// Every counter, for metrics.
    pub fn snapshot(&self) -> Vec<(String, String, u64)> {
        self.counts
            .lock()
            .map(|c| {
                c.iter()
                    .map(|((a, n), v)| (a.clone(), n.clone(), *v))
                    .collect()
            })
            .unwrap_or_default()
    }
}
