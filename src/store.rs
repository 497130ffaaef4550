//! SQLite state behind one writer thread that batches commits (group commit).
//!
//! Every call runs on the store's own thread inside a shared transaction with its own savepoint,
//! and its answer is released only after the transaction commits: what a caller was told is stored,
//! is stored. Writes a platform acknowledgement waits on take the urgent lane
//! ([`Store::call_urgent`], `writer`). A short call of the message path ([`Store::call_short`])
//! runs on its caller's thread instead while the writer sleeps, in a transaction of its own
//! (`seat`); the async runtime's workers never wait for the writer or for another process.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::thread::JoinHandle;

use futures_util::future::Either;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use tokio::sync::oneshot;

mod checkpoint;
mod faults;
mod files;
mod schema;
mod seat;
mod state;
mod trim;
mod writer;

/// Compiled statements kept by the writer's connection (there are about 40 in the code).
const STATEMENT_CACHE: usize = 128;
/// How long a call on the writer thread waits for another process's write lock.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `pragma` (a blocking `wal_checkpoint` mode) on `conn` without waiting for anyone in its
/// way, then gives the connection back its usual wait ([`BUSY_TIMEOUT`]); `Ok(false)` when a
/// writer or a reader was in the way. The writer's log restart and the checkpointer's cut both
/// go this way, so neither ever holds the other up.
fn checkpoint_at_once(conn: &Connection, pragma: &str) -> rusqlite::Result<bool> {
    conn.busy_timeout(std::time::Duration::ZERO)?;
    let busy = conn.query_row(pragma, [], |r| r.get::<_, i64>(0));
    if let Err(e) = conn.busy_timeout(BUSY_TIMEOUT) {
        tracing::warn!(error = %e, "store: cannot give a connection back its wait for the lock");
    }
    Ok(busy? == 0)
}

pub use schema::versions as schema_versions;
pub(crate) use state::within as state_within;
pub use state::{AccountState, StateError, StateTxn};

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused.
    #[error("store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The store was closed.
    #[error("store: closed")]
    Closed,
    /// The file or its WAL/SHM could not be made private (0600).
    #[error("store: cannot make {path} readable by its owner only ({source}); fix with: chmod 600 {path}", path = path.display())]
    Mode {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Opening the file failed.
    #[error("store: cannot open {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
}

/// A handle to the store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    jobs: writer::Lanes,
    /// The writer's connection, lent to short calls while the writer sleeps.
    seat: Arc<seat::Seat>,
    path: PathBuf,
    counters: Arc<Counters>,
    /// Failures a test turned on (nothing without the `testing` feature).
    faults: faults::Faults,
}

/// How much work the writer thread has done.
#[derive(Debug, Default)]
pub struct Counters {
    /// Transactions committed.
    pub commits: AtomicU64,
    /// Calls run (each in its own savepoint).
    pub calls: AtomicU64,
    /// Of those, short calls run on their caller's thread (each its own commit).
    pub here: AtomicU64,
}

/// Settings changed by `channel_set`, stored so they survive restarts; `None` follows the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsOverride {
    /// `<channel>:<account>`.
    pub account: String,
    /// Whether the account runs, if set.
    pub enabled: Option<bool>,
    /// The saved workspace, if any.
    pub workspace: Option<String>,
    /// `owner` / `anyone`, if set.
    pub senders: Option<String>,
    /// `none` / `owner`, if set.
    pub remote_tools: Option<String>,
    /// `chat` / `mail`, if set.
    pub purpose: Option<String>,
}

/// Closes the writer thread when the last handle that owns it is dropped.
pub struct StoreGuard {
    thread: Option<JoinHandle<()>>,
    checkpoint_thread: Option<JoinHandle<()>>,
    store: Option<Store>,
}

impl StoreGuard {
    /// Drains every queued call, commits, and stops the writer thread.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(store) = self.store.take() {
            store.jobs.close();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The writer's end is gone with the writer, so the checkpointer is stopping too.
        if let Some(t) = self.checkpoint_thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for StoreGuard {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Store {
    /// Opens (creating and migrating) the store at `path`.
    ///
    /// The writer thread runs until the guard is closed or dropped; later calls fail with `Closed`.
    pub fn open(path: &Path) -> Result<(Store, StoreGuard), StoreError> {
        let refused = |e: std::io::Error| StoreError::Mode {
            path: path.to_path_buf(),
            source: e,
        };
        files::prepare(path).map_err(refused)?;
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let opened = Store::start(conn, path.to_path_buf())?;
        // WAL mode and the migration have created the WAL and SHM by now.
        files::tighten_companions(path).map_err(refused)?;
        Ok(opened)
    }

    /// An in-memory store for tests and benchmarks.
    pub fn open_in_memory() -> Result<(Store, StoreGuard), StoreError> {
        Store::start(Connection::open_in_memory()?, PathBuf::from(":memory:"))
    }

    fn start(mut conn: Connection, path: PathBuf) -> Result<(Store, StoreGuard), StoreError> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL with WAL: a commit survives a process crash (kill -9); only power loss can undo
        // the commits since the last checkpoint synced the log (at most about 1 s: `checkpoint.rs`).
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // One plan per statement whatever its parameters: without it SQLite marks a cached
        // `... ORDER BY ... LIMIT 1` statement (a chat's next journal row, its next outbox item)
        // to be compiled again each time a parameter changes, which was each message's steps.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Every hot statement stays compiled: rusqlite keeps 16 by default, fewer than one
        // message's path uses, so they evicted each other and were parsed again per call.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        schema::migrate(&mut conn)?;
        let restart = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let checkpointer = (path != Path::new(":memory:"))
            .then(|| checkpoint::start(&path, restart.clone()))
            .flatten();
        if let Some(c) = &checkpointer {
            conn.pragma_update(None, "wal_autocheckpoint", 0)?;
            c.commits.watch(&mut conn)?;
        }
        // When the log restarts, its file is cut back to this: the size a busy log reaches, so
        // no commit pays for a cut; the checkpointer cuts it to nothing when commits pause.
        conn.pragma_update(None, "journal_size_limit", checkpoint::WAL_KEPT_BYTES)?;
        let (checkpoints, checkpoint_thread) = match checkpointer {
            Some(c) => (Some(c.commits), Some(c.thread)),
            None => (None, None),
        };
        let seat = Arc::new(seat::Seat::new(seat::Open { conn, checkpoints }, restart));
        let (tx, rx) = writer::lanes(seat.clone());
        let counters = Arc::new(Counters::default());
        let thread = std::thread::Builder::new()
            .name("scv-store".into())
            .spawn({
                let (counters, seat) = (counters.clone(), seat.clone());
                move || writer::run(&seat, rx, &counters)
            })
            .map_err(|e| {
                StoreError::Sqlite(rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
            })?;
        let store = Store {
            jobs: tx,
            seat,
            path,
            counters,
            faults: faults::Faults::default(),
        };
        let guard = StoreGuard {
            thread: Some(thread),
            checkpoint_thread,
            store: Some(store.clone()),
        };
        Ok((store, guard))
    }

    /// Commits and calls so far (for benchmarks and metrics).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Makes every journal write fail as on a full disk until called with `false` (tests).
    #[cfg(feature = "testing")]
    pub fn fail_journal_as_full(&self, on: bool) {
        self.faults.set_journal_full(on);
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the writer thread; resolves after the transaction holding it has committed.
    pub async fn call<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        self.submit(f, false)?.await
    }

    /// [`Store::call`] for a call that touches a few rows by key (a message's step through the
    /// pipeline, an account's state): while the writer sleeps it runs here at once, committed in
    /// a transaction of its own, which saves the two thread wake-ups of a trip to the writer;
    /// otherwise it queues like [`Store::call`]. Either way it commits after every call sent
    /// before it, and it is run or queued when this function is called, not at the first poll,
    /// so a caller that does not wait for it still has it commit ahead of its later calls.
    /// Nothing long may go here: it runs on the caller's (a runtime worker's) thread.
    pub fn call_short<R, F>(
        &self,
        f: F,
    ) -> impl std::future::Future<Output = Result<R, StoreError>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        self.short(f, false)
    }

    /// [`Store::call_urgent`] for a short call (see [`Store::call_short`]): run here at once
    /// while the writer sleeps, else queued in the urgent lane now.
    pub fn call_urgent_short<R, F>(
        &self,
        f: F,
    ) -> impl std::future::Future<Output = Result<R, StoreError>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        self.short(f, true)
    }

    /// Runs `f` here now when the writer sleeps, else queues it in its lane now.
    fn short<R, F>(
        &self,
        f: F,
        urgent: bool,
    ) -> impl std::future::Future<Output = Result<R, StoreError>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        let f = self.faults.wrap(f, urgent);
        match self.seat.run_here(f, &self.counters) {
            Ok(done) => Either::Left(std::future::ready(done)),
            Err(f) => Either::Right(self.queue_now(f, urgent)),
        }
    }

    /// [`Store::call`], queued when this function is called rather than at the first poll, so a
    /// caller that does not wait for it still has it commit ahead of its later calls.
    pub fn call_queued<R, F>(
        &self,
        f: F,
    ) -> impl std::future::Future<Output = Result<R, StoreError>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        self.queue_now(f, false)
    }

    /// [`Store::call`] for a write an acknowledgement waits on (the inbound journal): it runs
    /// ahead of queued ordinary calls, in a small transaction of its own. The call is queued
    /// when this function is called, not when the future is first polled, so calls made one
    /// after another commit in that order.
    pub fn call_urgent<R, F>(
        &self,
        f: F,
    ) -> impl std::future::Future<Output = Result<R, StoreError>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        self.queue_now(f, true)
    }

    /// Queues `f` in its lane now; the future answers once its transaction committed.
    fn queue_now<R, F>(
        &self,
        f: F,
        urgent: bool,
    ) -> impl std::future::Future<Output = Result<R, StoreError>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        let queued = self.submit(f, urgent);
        async move { queued?.await }
    }

    /// Queues `f` in its lane; the future resolves after its transaction committed.
    fn submit<R, F>(
        &self,
        f: F,
        urgent: bool,
    ) -> Result<impl std::future::Future<Output = Result<R, StoreError>> + use<R, F>, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        let f = self.faults.wrap(f, urgent);
        let (tx, rx) = oneshot::channel::<Result<R, StoreError>>();
        let job: writer::Job = Box::new(move |t| {
            let result = writer::run_in_savepoint(t, f);
            Box::new(move |commit: Result<(), String>| {
                let out = match (result, commit) {
                    (Ok(r), Ok(())) => Ok(r),
                    (Err(e), _) => Err(StoreError::Sqlite(e)),
                    (Ok(_), Err(e)) => {
                        Err(StoreError::Sqlite(rusqlite::Error::InvalidParameterName(e)))
                    }
                };
                let _ = tx.send(out);
            })
        });
        self.jobs
            .send(job, urgent)
            .map_err(|()| StoreError::Closed)?;
        Ok(async move { rx.await.map_err(|_| StoreError::Closed)? })
    }

    /// Reads one per-account value (a cursor, a token's fingerprint, ...).
    pub async fn get_state(&self, account: &str, name: &str) -> Result<Option<String>, StoreError> {
        let (account, name) = (account.to_string(), name.to_string());
        self.call(move |t| {
            t.query_row(
                "SELECT value FROM account_state WHERE account = ?1 AND name = ?2",
                params![account, name],
                |r| r.get(0),
            )
            .optional()
        })
        .await
    }

    /// Writes one per-account value.
    pub async fn set_state(
        &self,
        account: &str,
        name: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        let (account, name, value) = (account.to_string(), name.to_string(), value.to_string());
        self.call(move |t| {
            t.execute(
                "INSERT INTO account_state (account, name, value) VALUES (?1, ?2, ?3)
                 ON CONFLICT(account, name) DO UPDATE SET value = excluded.value",
                params![account, name, value],
            )
            .map(drop)
        })
        .await
    }

    /// Every stored `channel_set` override.
    pub async fn settings_overrides(&self) -> Result<Vec<SettingsOverride>, StoreError> {
        self.call(|t| {
            let mut st = t.prepare(
                "SELECT account, enabled, workspace, senders, remote_tools, purpose FROM account_settings ORDER BY account",
            )?;
            let rows = st.query_map([], |r| {
                Ok(SettingsOverride {
                    account: r.get(0)?,
                    enabled: r.get(1)?,
                    workspace: r.get(2)?,
                    senders: r.get(3)?,
                    remote_tools: r.get(4)?,
                    purpose: r.get(5)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// Stores a `channel_set` override, replacing the previous one.
    pub async fn put_settings(&self, o: SettingsOverride) -> Result<(), StoreError> {
        self.call(move |t| {
            t.execute(
                "INSERT INTO account_settings (account, enabled, workspace, senders, remote_tools, purpose)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(account) DO UPDATE SET enabled = excluded.enabled, workspace = excluded.workspace,
                   senders = excluded.senders, remote_tools = excluded.remote_tools, purpose = excluded.purpose",
                params![o.account, o.enabled, o.workspace, o.senders, o.remote_tools, o.purpose],
            )
            .map(drop)
        })
        .await
    }

    /// Removes `account`'s run-time settings (`channel_reset`); whether there were any.
    pub async fn delete_settings(&self, account: &str) -> Result<bool, StoreError> {
        let account = account.to_string();
        self.call(move |t| {
            t.execute(
                "DELETE FROM account_settings WHERE account = ?1",
                [&account],
            )
            .map(|n| n > 0)
        })
        .await
    }

    /// Removes every row of `account` from every table that has an `account` column.
    pub async fn delete_account(&self, account: &str) -> Result<usize, StoreError> {
        let account = account.to_string();
        self.call(move |t| {
            let mut removed = 0;
            for table in account_tables(t)? {
                removed += t.execute(
                    &format!("DELETE FROM \"{table}\" WHERE account = ?1"),
                    [&account],
                )?;
            }
            Ok(removed)
        })
        .await
    }

    /// Runs SQLite's own consistency check; `ok` when the file is sound.
    pub async fn integrity_check(&self) -> Result<String, StoreError> {
        self.call(|t| t.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
            .await
    }
}

/// The tables that hold per-account rows (those with an `account` column).
pub fn account_tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare(
        "SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c
         WHERE m.type = 'table' AND c.name = 'account' ORDER BY m.name",
    )?;
    let names = st.query_map([], |r| r.get(0))?;
    names.collect()
}

#[cfg(test)]
mod tests;
