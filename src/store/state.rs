//! One account's own namespaced state (cursor, peers, send records) as names and values, so an
//! adapter keeps what it needs without seeing SQL or the rest of the store.
//!
//! Values are text; [`StateTxn::get_json`] and [`StateTxn::put_json`] carry records. Names are the
//! adapter's own (prefix them by kind, e.g. `wechat_peer/<id>`); the account part is bound by
//! whoever lends the handle, so one account can never read or write another's.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Store, StoreError};

/// Why a state operation failed inside a transaction; it aborts the whole transaction.
#[derive(Debug)]
pub struct StateError(rusqlite::Error);

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "account state: {}", self.0)
    }
}

impl std::error::Error for StateError {}

impl From<rusqlite::Error> for StateError {
    fn from(e: rusqlite::Error) -> Self {
        StateError(e)
    }
}

/// One account's state inside a transaction of the store's writer thread: lent by
/// [`AccountState::call`] and by the inbox's accept, which commits it with the batch.
pub struct StateTxn<'a> {
    t: &'a Transaction<'a>,
    account: &'a str,
}

impl<'a> StateTxn<'a> {
    /// The state of `account` inside `t` (the store and the pipeline build these; adapters get one).
    pub(crate) fn new(t: &'a Transaction<'a>, account: &'a str) -> Self {
        StateTxn { t, account }
    }

    /// The value stored under `name`.
    pub fn get(&self, name: &str) -> Result<Option<String>, StateError> {
        Ok(self
            .t
            .prepare_cached("SELECT value FROM account_state WHERE account = ?1 AND name = ?2")?
            .query_row(params![self.account, name], |r| r.get(0))
            .optional()?)
    }

    /// The record stored under `name`; one that does not decode (written by a newer build, or
    /// damaged) reads as absent, never as an error that would stop the account.
    pub fn get_json<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, StateError> {
        Ok(self.get(name)?.and_then(|v| serde_json::from_str(&v).ok()))
    }

    /// Stores `value` under `name`, replacing what was there.
    pub fn put(&self, name: &str, value: &str) -> Result<(), StateError> {
        self.t
            .prepare_cached(
                "INSERT INTO account_state (account, name, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT(account, name) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![self.account, name, value])?;
        Ok(())
    }

    /// Stores `record` under `name` as JSON.
    pub fn put_json<T: Serialize>(&self, name: &str, record: &T) -> Result<(), StateError> {
        let value = serde_json::to_string(record)
            .map_err(|e| StateError(rusqlite::Error::ToSqlConversionFailure(Box::new(e))))?;
        self.put(name, &value)
    }

    /// Forgets `name`.
    pub fn delete(&self, name: &str) -> Result<(), StateError> {
        self.t
            .prepare_cached("DELETE FROM account_state WHERE account = ?1 AND name = ?2")?
            .execute(params![self.account, name])?;
        Ok(())
    }

    /// Every name starting with `prefix`, with its value, in name order.
    pub fn scan(&self, prefix: &str) -> Result<Vec<(String, String)>, StateError> {
        // A range on the primary key (account, name) rather than LIKE, which would not use it
        // and would treat `_` and `%` in a prefix as wildcards.
        let end = format!("{prefix}\u{10FFFF}");
        let mut st = self.t.prepare_cached(
            "SELECT name, value FROM account_state
             WHERE account = ?1 AND name >= ?2 AND name < ?3 ORDER BY name",
        )?;
        let rows = st.query_map(params![self.account, prefix, end], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// A handle on one account's state, bound to the account by the daemon; cheap to clone.
#[derive(Clone)]
pub struct AccountState {
    store: Store,
    account: String,
}

impl AccountState {
    /// The state of `account` (the daemon lends this to the account's adapter).
    pub fn new(store: Store, account: impl Into<String>) -> Self {
        AccountState {
            store,
            account: account.into(),
        }
    }

    /// The account this state belongs to (its key, for logs).
    pub fn account(&self) -> &str {
        &self.account
    }

    /// Runs `f` in one transaction; resolves after it committed. An account's state is a few
    /// rows by name, so this is a short call ([`Store::call_short`]): keep `f` small.
    pub async fn call<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&StateTxn<'_>) -> Result<R, StateError> + Send + 'static,
    {
        let account = self.account.clone();
        self.store
            .call_short(move |t| f(&StateTxn::new(t, &account)).map_err(|e| e.0))
            .await
    }

    /// The value stored under `name`.
    pub async fn get(&self, name: &str) -> Result<Option<String>, StoreError> {
        let name = name.to_string();
        self.call(move |s| s.get(&name)).await
    }

    /// Stores `value` under `name`.
    pub async fn put(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let (name, value) = (name.to_string(), value.to_string());
        self.call(move |s| s.put(&name, &value)).await
    }
}

/// Runs `f` on the state of `account` inside `t`, for the pipeline's accept (one commit with the
/// batch it follows).
pub(crate) fn within<R>(
    t: &Transaction<'_>,
    account: &str,
    f: impl FnOnce(&StateTxn<'_>) -> Result<R, StateError>,
) -> rusqlite::Result<R> {
    f(&StateTxn::new(t, account)).map_err(|e| e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_account_sees_only_its_own_names_and_prefix_scans_are_literal() {
        let (store, _g) = Store::open_in_memory().expect("the in-memory store");
        let a = AccountState::new(store.clone(), "wechat:a");
        let b = AccountState::new(store.clone(), "wechat:b");
        a.call(|s| {
            s.put("peer/x", "1")?;
            s.put("peer/y", "2")?;
            s.put("peer_z", "3")?;
            s.put("peers", "4")
        })
        .await
        .expect("the in-memory store");
        b.put("peer/x", "other").await.expect("the in-memory store");
        let scanned = a
            .call(|s| s.scan("peer/"))
            .await
            .expect("the in-memory store");
        assert_eq!(
            scanned,
            vec![
                ("peer/x".to_string(), "1".to_string()),
                ("peer/y".to_string(), "2".to_string())
            ]
        );
        assert_eq!(b.get("peer/y").await.expect("the in-memory store"), None);
        a.call(|s| s.delete("peer/x"))
            .await
            .expect("the in-memory store");
        assert_eq!(a.get("peer/x").await.expect("the in-memory store"), None);
        assert_eq!(
            b.get("peer/x")
                .await
                .expect("the in-memory store")
                .as_deref(),
            Some("other")
        );
    }

    #[tokio::test]
    async fn a_record_that_does_not_decode_reads_as_absent() {
        let (store, _g) = Store::open_in_memory().expect("the in-memory store");
        let a = AccountState::new(store, "wechat:a");
        a.put("rec", "{not json")
            .await
            .expect("the in-memory store");
        let got: Option<u32> = a
            .call(|s| s.get_json("rec"))
            .await
            .expect("the in-memory store");
        assert_eq!(got, None);
        a.call(|s| s.put_json("rec", &7u32))
            .await
            .expect("the in-memory store");
        let got: Option<u32> = a
            .call(|s| s.get_json("rec"))
            .await
            .expect("the in-memory store");
        assert_eq!(got, Some(7));
    }
}
