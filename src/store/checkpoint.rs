//! Copying the WAL back into the database beside the writer, not in its way.
//!
//! SQLite's automatic checkpoint runs inside whichever commit crosses its threshold, on the writer
//! thread, and costs milliseconds (it syncs the database file): every call queued behind that
//! commit waits for it. Measured in `benches/pipeline.rs`, it was the whole p99 of the pipeline's
//! added latency. A PASSIVE checkpoint on its own connection runs beside the writer instead; it
//! is woken by commits and lets them accumulate briefly, so an idle daemon never wakes.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How long commits accumulate before one checkpoint copies them all.
const COALESCE: Duration = Duration::from_millis(200);

/// A running checkpointer: tell it about commits through `commits`; it stops when that is dropped.
pub(super) struct Checkpointer {
    /// Commit notices (a full channel means one is already pending).
    pub commits: SyncSender<()>,
    /// The thread, joined at shutdown.
    pub thread: JoinHandle<()>,
}

/// Starts a checkpointer for the database at `path`; `None` (keep SQLite's automatic
/// checkpoints) when it cannot open its own connection or thread.
pub(super) fn start(path: &Path) -> Option<Checkpointer> {
    let conn = match Connection::open(path) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "store: no checkpoint connection; checkpoints stay on the writer");
            return None;
        }
    };
    if conn.busy_timeout(Duration::from_secs(5)).is_err() {
        return None;
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let thread = std::thread::Builder::new()
        .name("scv-store-checkpoint".into())
        .spawn(move || run(&conn, &rx))
        .ok()?;
    Some(Checkpointer {
        commits: tx,
        thread,
    })
}

fn run(conn: &Connection, commits: &Receiver<()>) {
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
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(error = %e, "store: checkpoint failed; retried after the next commit");
        }
    }
}
