//! The writer's connection, lent to a short call on its caller's thread while the writer sleeps.
//!
//! A call sent to the writer thread pays two thread wake-ups, there and back, each several
//! times what SQLite needs for the few rows a message's step touches (a journal row, the turn's
//! read, an outbox row; `benches/pipeline.rs` prints both). So a short call
//! ([`super::Store::call_short`]) takes the connection itself while the writer sleeps and
//! nothing is queued, and commits in a transaction of its own. It never waits: when the writer
//! is awake (running calls, or spinning for the next one after them), a call is queued ahead
//! of it, or another process holds the write lock, it queues like any call. So calls still
//! commit in the order they were sent, a busy spell's calls still share commits (letting every
//! call commit alone cost the pipeline a good part of its throughput), and a runtime thread
//! never waits for the writer or for another process (it only runs the call's own SQL).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::checkpoint::Notices;
use super::{BUSY_TIMEOUT, Counters, StoreError};

/// The open connection and where its commits are announced; gone once the writer closed it.
pub(super) struct Open {
    /// The one connection that writes.
    pub conn: Connection,
    /// Commit notices for the checkpointer (`None`: SQLite checkpoints by itself).
    pub checkpoints: Option<Notices>,
}

impl Open {
    /// Tells the checkpointer there is something to copy.
    pub fn committed(&self) {
        if let Some(c) = &self.checkpoints {
            c.committed();
        }
    }

    /// Tells the checkpointer the log starts over (until the next commit reports its length).
    pub fn restarted(&self) {
        if let Some(c) = &self.checkpoints {
            c.restarted();
        }
    }
}

/// The connection and what says whether it may be used here.
pub(super) struct Seat {
    /// `None` once the writer has closed it.
    open: Mutex<Option<Open>>,
    /// Calls sent to the writer and not yet taken by it, in both lanes.
    queued: AtomicUsize,
    /// Whether the writer is asleep waiting for a call (not spinning, not running one).
    asleep: AtomicBool,
    /// Set when the store is asked to close: later calls queue (and are answered `Closed`).
    closing: AtomicBool,
    /// Set by the checkpointer when the log should restart: calls queue, so the writer's next
    /// round, which restarts it, comes soon.
    restart: Arc<AtomicBool>,
}

impl Seat {
    /// A seat for `conn`.
    pub fn new(open: Open, restart: Arc<AtomicBool>) -> Seat {
        Seat {
            open: Mutex::new(Some(open)),
            queued: AtomicUsize::new(0),
            asleep: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            restart,
        }
    }

    /// Whether the log should be restarted now (and no longer, once asked).
    pub fn take_restart(&self) -> bool {
        self.restart.swap(false, Ordering::AcqRel)
    }

    /// The connection, for the writer; waits for a short call running here to end.
    pub fn hold(&self) -> MutexGuard<'_, Option<Open>> {
        // A call that panicked here left no transaction open (it rolled back as it unwound).
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a call sent to the writer (before it is sent, so no short call slips ahead of it).
    pub fn queue(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts `n` calls the writer has taken; called with the connection held.
    pub fn taken(&self, n: usize) {
        self.queued.fetch_sub(n, Ordering::AcqRel);
    }

    /// Marks whether the writer is asleep waiting for a call; set by the writer itself.
    pub fn sleeping(&self, asleep: bool) {
        self.asleep.store(asleep, Ordering::Release);
    }

    /// Whether the writer sleeps now (tests wait for it before a short call that must run here).
    #[cfg(test)]
    pub fn asleep(&self) -> bool {
        self.asleep.load(Ordering::Acquire)
    }

    /// Marks the store closing.
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Runs `f` here, committed in its own transaction, while the writer sleeps and nothing is
    /// queued; gives `f` back when it must queue.
    pub fn run_here<R, F>(&self, f: F, counters: &Counters) -> Result<Result<R, StoreError>, F>
    where
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R>,
    {
        // Only while the writer sleeps: when it is awake (busy, or spinning for the next call
        // after one) calls go to it, so the calls of a busy spell share its commits.
        if !self.asleep.load(Ordering::Acquire)
            || self.closing.load(Ordering::Acquire)
            || self.restart.load(Ordering::Acquire)
        {
            return Err(f);
        }
        let held = match self.open.try_lock() {
            Ok(g) => g,
            Err(TryLockError::WouldBlock | TryLockError::Poisoned(_)) => return Err(f),
        };
        // Checked with the connection held: the writer takes calls only while holding it.
        if self.queued.load(Ordering::Acquire) > 0 {
            return Err(f);
        }
        let Some(open) = held.as_ref() else {
            return Err(f);
        };
        let Some(tx) = begin_here(&open.conn) else {
            return Err(f);
        };
        let out = match f(&tx) {
            // Dropping the transaction rolls back what the call wrote.
            Err(e) => Err(e),
            Ok(r) => tx.commit().map(|()| r),
        };
        counters.calls.fetch_add(1, Ordering::Relaxed);
        counters.here.fetch_add(1, Ordering::Relaxed);
        if out.is_ok() {
            counters.commits.fetch_add(1, Ordering::Relaxed);
            open.committed();
        }
        Ok(out.map_err(StoreError::Sqlite))
    }
}

/// Begins a transaction that already holds the write lock, without waiting for it: another
/// process holding it (`doctor`, `sqlite3`) sends the call to the writer, which may wait.
fn begin_here(conn: &Connection) -> Option<Transaction<'_>> {
    conn.busy_timeout(Duration::ZERO).ok()?;
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate);
    // The writer's waits stay as they were, whatever happened.
    let restored = conn.busy_timeout(BUSY_TIMEOUT);
    match (tx, restored) {
        (Ok(t), Ok(())) => Some(t),
        _ => None,
    }
}
