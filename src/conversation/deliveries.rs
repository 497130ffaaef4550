//! Delivery states of the bridge's own messages (proactive outbox items: confirm questions,
//! digests, `send`, notices), for `status`, `status --json` and the metrics page.
//!
//! The store is the truth: a pending item is `waiting` when its chat's sender wrote why into
//! `wait_why` (a closed window, a slow-down, a failing account, failing sends), else `queued`;
//! a settled one is `sent` when the platform named the message, `unconfirmed` when it took it
//! without a message id (nothing proves delivery: WeChat's `ret=0`), or `failed`. `status`
//! must answer without the store (a full disk, a busy writer), so every change that moves a
//! count recounts inside its own store call and publishes the result on the [`Board`], which
//! `status` reads. Whether an account is attached is decided when the board is read, so an
//! account that stops turns its queued items into `waiting` (`account_down`) at once.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Transaction, params};
use tokio::sync::watch;

use super::lock;
use crate::config::AccountKey;
use crate::ids::ChatId;
use crate::protocol::{DeliveryCounts, WaitWhy, WaitingItem};
use crate::supervisor::unix_now;

/// How far back settled items (sent, unconfirmed, moved, failed) are counted.
pub const SETTLED_WINDOW_SECS: u64 = 86_400;

/// Pending proactive items of one account with one reason (none: queued), and the oldest's age.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PendingGroup {
    n: u64,
    since: u64,
}

/// A count made inside one store transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Count {
    settled: DeliveryCounts,
    /// (account, reason) → the group; `None`: no reason stored (queued, or the account is down).
    pending: HashMap<(String, Option<WaitWhy>), PendingGroup>,
}

/// The latest count, as `status` reads it. Made by the pipeline's outbox handle; every writer
/// of proactive states publishes through it.
pub struct Board {
    latest: Mutex<(u64, Count)>,
    stamps: AtomicU64,
    /// The stamp of the latest count published.
    changes: watch::Sender<u64>,
}

impl Default for Board {
    fn default() -> Self {
        Board {
            latest: Mutex::default(),
            stamps: AtomicU64::new(0),
            changes: watch::channel(0).0,
        }
    }
}

impl Board {
    /// Stamps a count about to be made inside a transaction: the store runs transactions one
    /// at a time, so a later stamp is a later state, and an older count never replaces it.
    pub fn stamp(&self) -> u64 {
        self.stamps.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Publishes `count`, made under `stamp`, unless a newer one is there.
    pub fn publish(&self, stamp: u64, count: Count) {
        let mut latest = lock(&self.latest);
        if stamp > latest.0 {
            *latest = (stamp, count);
            self.changes.send_replace(stamp);
        }
    }

    /// Changes with every count published.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The accounts with pending items that carry a reason to wait.
    pub fn waiting_accounts(&self) -> HashSet<String> {
        lock(&self.latest)
            .1
            .pending
            .keys()
            .filter(|(_, why)| why.is_some())
            .map(|(a, _)| a.clone())
            .collect()
    }

    /// The counts, with items of accounts not in `attached` waiting as `account_down`.
    pub fn counts(&self, attached: &HashSet<String>) -> DeliveryCounts {
        let count = lock(&self.latest).1.clone();
        let mut out = count.settled.clone();
        let mut oldest: Option<WaitingItem> = None;
        for ((account, why), g) in &count.pending {
            let why = match why {
                Some(w) => *w,
                None if attached.contains(account) => {
                    out.queued += g.n;
                    continue;
                }
                None => WaitWhy::AccountDown,
            };
            out.waiting += g.n;
            if oldest
                .as_ref()
                .is_none_or(|o| g.since < o.since_unix_seconds)
            {
                oldest = Some(WaitingItem {
                    route: account.clone(),
                    why,
                    since_unix_seconds: g.since,
                });
            }
        }
        out.oldest_waiting = oldest;
        out
    }
}

/// Counts proactive items: the pending ones by account and reason, the settled ones of the
/// last [`SETTLED_WINDOW_SECS`].
pub fn count(t: &Transaction<'_>) -> rusqlite::Result<Count> {
    let mut c = Count::default();
    let cutoff = unix_now().saturating_sub(SETTLED_WINDOW_SECS) as i64;
    let mut st = t.prepare_cached(
        "SELECT state, platform_msg_id IS NULL, count(*) FROM outbox
         WHERE kind = 'proactive' AND state IN ('sent', 'failed', 'moved') AND sent_unix >= ?1
         GROUP BY 1, 2",
    )?;
    let mut rows = st.query(params![cutoff])?;
    while let Some(r) = rows.next()? {
        let (state, no_id, n): (String, bool, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let n = n.max(0) as u64;
        match (state.as_str(), no_id) {
            ("sent", false) => c.settled.sent += n,
            // Taken without a message id: nothing the platform said proves it arrived.
            ("sent", true) => c.settled.unconfirmed += n,
            ("moved", _) => c.settled.moved += n,
            _ => c.settled.failed += n,
        }
    }
    let mut st = t.prepare_cached(
        "SELECT account, wait_why, count(*), min(COALESCE(wait_since, created_unix)) FROM outbox
         WHERE kind = 'proactive' AND state = 'pending' GROUP BY 1, 2",
    )?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let (account, why): (String, Option<String>) = (r.get(0)?, r.get(1)?);
        let (n, since): (i64, i64) = (r.get(2)?, r.get(3)?);
        let g = c
            .pending
            .entry((account, why.as_deref().map(WaitWhy::parse)))
            .or_default();
        g.n += n.max(0) as u64;
        g.since = since.max(0) as u64;
    }
    Ok(c)
}

/// Writes why the pending items of a chat wait (all of them: those behind the first wait for
/// it), keeping since when they first waited.
pub fn mark_waiting(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
    why: WaitWhy,
) -> rusqlite::Result<()> {
    t.prepare_cached(
        "UPDATE outbox SET wait_why = ?3, wait_since = COALESCE(wait_since, ?4)
         WHERE account = ?1 AND chat = ?2 AND state = 'pending'",
    )?
    .execute(params![
        account.to_string(),
        chat.as_str(),
        why.as_str(),
        unix_now() as i64
    ])
    .map(drop)
}

/// Forgets why a chat's pending items waited: a send went through, so they are queued again.
pub fn clear_waiting(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
) -> rusqlite::Result<()> {
    t.prepare_cached(
        "UPDATE outbox SET wait_why = NULL, wait_since = NULL
         WHERE account = ?1 AND chat = ?2 AND state = 'pending' AND wait_why IS NOT NULL",
    )?
    .execute(params![account.to_string(), chat.as_str()])
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(n: u64, since: u64) -> PendingGroup {
        PendingGroup { n, since }
    }

    #[test]
    fn queued_items_of_a_detached_account_wait_as_account_down() {
        let board = Board::default();
        let mut c = Count::default();
        c.settled.sent = 2;
        c.pending.insert(("chat:phone".into(), None), group(3, 50));
        c.pending
            .insert(("chat:work".into(), Some(WaitWhy::Throttle)), group(1, 70));
        let s = board.stamp();
        board.publish(s, c);
        let attached: HashSet<String> = ["chat:phone".to_string()].into();
        let on = board.counts(&attached);
        assert_eq!((on.queued, on.waiting, on.sent), (3, 1, 2));
        let w = on.oldest_waiting.expect("one waits");
        assert_eq!((w.route.as_str(), w.why), ("chat:work", WaitWhy::Throttle));
        let off = board.counts(&HashSet::new());
        assert_eq!((off.queued, off.waiting), (0, 4));
        let w = off.oldest_waiting.expect("the oldest");
        assert_eq!((w.why, w.since_unix_seconds), (WaitWhy::AccountDown, 50));
    }

    #[test]
    fn an_older_count_never_replaces_a_newer_one() {
        let board = Board::default();
        let (first, second) = (board.stamp(), board.stamp());
        let mut newer = Count::default();
        newer.settled.failed = 1;
        board.publish(second, newer);
        board.publish(first, Count::default());
        assert_eq!(board.counts(&HashSet::new()).failed, 1);
    }
}
