//! Copying the WAL back into the database beside the writer, not in its way.
//!
//! SQLite's automatic checkpoint runs inside whichever commit crosses its threshold, on the writer
//! thread, and costs milliseconds (it syncs the database file): every call queued behind that
//! commit waits for it. Measured in `benches/pipeline.rs`, it was the whole p99 of the pipeline's
//! added latency. A PASSIVE checkpoint on its own connection runs beside the writer instead; it
//! is woken by commits and lets them accumulate briefly, so an idle daemon never wakes.
//!
//! A PASSIVE checkpoint never empties the log while the writer keeps appending to it, so under
//! writes that never pause (a long first mail scan, a burst, steady traffic) the WAL grew
//! without bound: 465 MB in the pipeline bench. When the log holds more than [`RESTART_ABOVE`]
//! frames after a copy, the checkpointer asks the writer to restart it; the writer does so
//! between two transactions (`writer.rs`), on its own connection, so it waits for no lock and
//! copies only what came since. `journal_size_limit` keeps the file at the size it reached.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How long commits accumulate before one checkpoint copies them all.
const COALESCE: Duration = Duration::from_millis(200);
/// WAL frames (pages) above which the log is restarted: 16 MiB of 4 KiB pages, a few thousand
/// messages' steps.
const RESTART_ABOVE: i64 = 4_096;
/// What the WAL file is cut back to when the log restarts, in bytes (`journal_size_limit`): as
/// much as a log grows before it restarts, so a commit overwrites pages the file already has
/// (writing past its end allocates blocks and pages, which the pipeline's profile showed). A
/// frame is a 4 KiB page and its 24-byte header; 256 frames are slack for the copy's lag.
pub(super) const WAL_KEPT_BYTES: i64 = (RESTART_ABOVE + 256) * 4_120;

/// A running checkpointer: tell it about commits through `commits`; it stops when that is dropped.
pub(super) struct Checkpointer {
    /// Where commits are announced.
    pub commits: Notices,
    /// The thread, joined at shutdown.
    pub thread: JoinHandle<()>,
}

/// The writer's side of the commit notices. Only the first commit after a copy wakes the
/// checkpointer: waking it for every commit of its coalescing window cost a thread wake-up per
/// commit, on a machine with two cores for the whole pipeline.
pub(super) struct Notices {
    /// The wake-up (its one slot full means one is already on its way).
    tx: SyncSender<()>,
    /// Set by the commit that sent the wake-up, cleared by the checkpointer as it copies.
    pending: Arc<AtomicBool>,
}

impl Notices {
    /// Says there is something to copy; wakes the checkpointer only if nothing is pending.
    pub fn committed(&self) {
        if !self.pending.swap(true, Ordering::AcqRel) {
            let _ = self.tx.try_send(());
        }
    }
}

/// Starts a checkpointer for the database at `path`, which sets `restart` when the log should
/// be restarted; `None` (keep SQLite's automatic checkpoints) when it cannot open its own
/// connection or thread.
pub(super) fn start(path: &Path, restart: Arc<AtomicBool>) -> Option<Checkpointer> {
    let conn = match Connection::open(path) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "store: no checkpoint connection; checkpoints stay on the writer");
            return None;
        }
    };
    if conn.busy_timeout(Duration::from_secs(5)).is_err()
        || conn
            .pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)
            .is_err()
    {
        return None;
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let pending = Arc::new(AtomicBool::new(false));
    let cleared = pending.clone();
    let thread = std::thread::Builder::new()
        .name("scv-store-checkpoint".into())
        .spawn(move || run(&conn, &rx, &cleared, &restart))
        .ok()?;
    Some(Checkpointer {
        commits: Notices { tx, pending },
        thread,
    })
}

fn run(conn: &Connection, commits: &Receiver<()>, pending: &AtomicBool, restart: &AtomicBool) {
    while commits.recv().is_ok() {
        let until = Instant::now() + COALESCE;
        loop {
            match commits.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                // The writer stopped; its own last checkpoint truncates the WAL.
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        // Cleared before the copy: a commit from now on wakes the next round.
        pending.store(false, Ordering::Release);
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1)) {
            Ok(log) if log > RESTART_ABOVE => restart.store(true, Ordering::Release),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "store: checkpoint failed; retried after the next commit")
            }
        }
    }
}

/// What [`restart_log`] did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Restart {
    /// The next commit writes from the log's start.
    Done,
    /// A reader holds a snapshot in the log; asked again after the next copy.
    ReaderInTheWay,
    /// SQLite refused (logged).
    Failed,
}

/// Restarts the log on the writer's connection, between two of its transactions: copies what
/// the checkpointer has not, and makes the next commit write from the log's start. Only the
/// writer runs this, so no writer is in its way; it does not wait for a reader (the
/// checkpointer mid-copy, a `sqlite3` session holding a snapshot): it is asked again after the
/// next copy instead, so a reader can never hold the writer up.
pub(super) fn restart_log(conn: &Connection) -> Restart {
    if conn.busy_timeout(Duration::ZERO).is_err() {
        return Restart::Failed;
    }
    let restarted = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0));
    if let Err(e) = conn.busy_timeout(super::BUSY_TIMEOUT) {
        tracing::warn!(error = %e, "store: cannot restore the writer's wait for other processes");
    }
    match restarted {
        Ok(0) => Restart::Done,
        Ok(_) => Restart::ReaderInTheWay,
        Err(e) => {
            tracing::warn!(error = %e, "store: cannot restart the log; asked again after the next copy");
            Restart::Failed
        }
    }
}
