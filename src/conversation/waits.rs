//! How an account's outbox waits, counting every kind of item (the owner's alerts,
//! `owner/stuck.rs`, tell when replies wait, not only the bridge's own messages): the pending
//! items by the reason their chat's sender wrote (`deliveries::mark_waiting`).

use rusqlite::Transaction;

use crate::protocol::WaitWhy;

/// An account's pending outbox items: how many, and the reasons stored on them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountWaits {
    /// Pending items of every kind (replies, updates, the bridge's own).
    pub pending: u64,
    /// The reasons their chats wait, each once (empty: nothing said why).
    pub whys: Vec<WaitWhy>,
}

/// The pending items of `account` (`<channel>:<account>`), uses the index `outbox_open`.
pub fn of_account(t: &Transaction<'_>, account: &str) -> rusqlite::Result<AccountWaits> {
    let mut st = t.prepare_cached(
        "SELECT wait_why, count(*) FROM outbox
         WHERE account = ?1 AND state = 'pending' GROUP BY 1",
    )?;
    let mut rows = st.query([account])?;
    let mut out = AccountWaits::default();
    while let Some(r) = rows.next()? {
        let (why, n): (Option<String>, i64) = (r.get(0)?, r.get(1)?);
        out.pending += n.max(0) as u64;
        if let Some(w) = why.as_deref().map(WaitWhy::parse)
            && !out.whys.contains(&w)
        {
            out.whys.push(w);
        }
    }
    Ok(out)
}
