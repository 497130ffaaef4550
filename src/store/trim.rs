//! Giving back the disk a burst took: the log's file is cut to nothing once the commits pause.
//!
//! Cutting a large file is what costs here (an `ftruncate` of a large WAL). SQLite cuts a
//! restarted log's file back to `journal_size_limit` itself, in the first commit after the
//! restart, on the writer, so under a full load every call queued behind that commit waited for
//! the cut (`strace -f` of the pipeline bench shows the writer's `ftruncate`). So the limit is now
//! the file's size under a full load ([`super::checkpoint`]'s `WAL_KEPT_BYTES`), which a busy log
//! reuses without cutting, and the checkpointer cuts the file when the commits have paused, where
//! no call is waiting for the writer.

use rusqlite::Connection;

/// A paused log's file larger than this (bytes) is cut: about what a log holds when it is
/// restarted under load (the checkpointer's 4,096 frames of 4,120 bytes and 256 more as slack;
/// `checkpoint.rs` checks the two agree when it compiles), so ordinary traffic, whose log never
/// grows that far, never pays for a cut.
pub(super) const TRIM_ABOVE: u64 = (4_096 + 256) * 4_120;

/// Whether the log's file should be cut after a copy: the copy followed a pause in the commits
/// (`quiet`) and the file is larger than [`TRIM_ABOVE`].
pub(super) fn wanted(quiet: bool, file_bytes: u64) -> bool {
    quiet && file_bytes > TRIM_ABOVE
}

/// Copies what is left of the log and cuts its file to nothing, on the checkpointer's
/// connection; true when it did. It waits for nobody: a writer in a transaction or a reader
/// holding a snapshot in the log makes it give up at once (the next pause tries again). A
/// commit that starts during the cut waits for it, on its busy handler.
pub(super) fn trim(conn: &Connection) -> bool {
    super::checkpoint_at_once(conn, "PRAGMA wal_checkpoint(TRUNCATE)").unwrap_or_else(|e| {
        tracing::warn!(error = %e, "store: cannot cut the log's file; tried again at the next pause");
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_large_file_is_cut_and_only_in_a_pause() {
        assert!(wanted(true, TRIM_ABOVE + 1));
        assert!(!wanted(true, TRIM_ABOVE), "an ordinary log's file is kept");
        assert!(
            !wanted(false, 100 * TRIM_ABOVE),
            "never while commits go on"
        );
    }

    #[test]
    fn the_file_is_cut_unless_someone_is_in_the_way() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let wal = dir.path().join("t.db-wal");
        let wal_bytes = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let writer = crate::store::tests::writer_with_log(&path, 400_000);
        let grown = wal_bytes();
        assert!(grown > 400_000, "the log holds the rows: {grown} bytes");
        let checkpointer = Connection::open(&path).expect("open");
        checkpointer
            .busy_timeout(crate::store::BUSY_TIMEOUT)
            .expect("timeout");

        // A writer in a transaction: given up at once, the file left as it was.
        writer
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .expect("a transaction");
        assert!(!trim(&checkpointer));
        writer.execute_batch("COMMIT").expect("commit");
        // A reader holding a snapshot in the log: the same.
        let reader = Connection::open(&path).expect("reader");
        reader
            .execute_batch("BEGIN; SELECT COUNT(*) FROM t;")
            .expect("a read snapshot");
        assert!(!trim(&checkpointer));
        assert!(wal_bytes() >= grown, "nothing was cut while in the way");
        let timeout: i64 = checkpointer
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .expect("pragma");
        assert_eq!(timeout, 5_000, "the checkpointer's own waits are as before");
        reader.execute_batch("COMMIT").expect("end the snapshot");

        assert!(trim(&checkpointer));
        assert_eq!(wal_bytes(), 0, "the log's file is cut to nothing");
        let rows: i64 = reader
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .expect("read");
        assert_eq!(rows, 2, "every commit is in the database");
        writer
            .execute("INSERT INTO t VALUES (2)", [])
            .expect("the writer goes on");
    }

    #[tokio::test]
    async fn a_log_grown_by_a_burst_is_cut_to_nothing_once_the_commits_pause() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, guard) = crate::store::Store::open(&dir.path().join("state.db")).expect("open");
        let wal = dir.path().join("state.db-wal");
        let wal_bytes = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        // The cut's write to the log's file wakes the wait below (inotify), not a clock.
        let (tx, mut written) = tokio::sync::watch::channel(0u64);
        let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
            if e.is_ok() {
                tx.send_modify(|n| *n += 1);
            }
        })
        .expect("an inotify watcher");
        // A burst's worth of log in one commit: past the size an ordinary log reaches.
        store
            .call(|t| {
                t.execute_batch("CREATE TABLE burst (b BLOB)")?;
                let mut st = t.prepare("INSERT INTO burst VALUES (zeroblob(4000))")?;
                for _ in 0..5_000 {
                    st.execute([])?;
                }
                Ok(())
            })
            .await
            .expect("the burst");
        let grown = wal_bytes();
        assert!(grown > TRIM_ABOVE, "the log grew to {grown} bytes");
        notify::Watcher::watch(&mut watcher, &wal, notify::RecursiveMode::NonRecursive)
            .expect("watch the log's file");
        let cut = async {
            while wal_bytes() > 0 {
                written.changed().await.expect("the watcher lives");
            }
        };
        if tokio::time::timeout(std::time::Duration::from_secs(10), cut)
            .await
            .is_err()
        {
            panic!("the log's file is still {} bytes", wal_bytes());
        }
        let rows: i64 = store
            .call(|t| t.query_row("SELECT COUNT(*) FROM burst", [], |r| r.get(0)))
            .await
            .expect("count");
        assert_eq!(rows, 5_000, "every row is in the database");
        guard.close();
    }
}
