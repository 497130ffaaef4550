//! Copying the WAL back into the database beside the writer, not in its way.
//!
//! SQLite's automatic checkpoint runs inside whichever commit crosses its threshold, on the writer
//! thread, and syncs the database file: every call queued behind that commit waits for it. A
//! PASSIVE checkpoint on its own connection runs beside the writer instead; it is woken by
//! commits and lets them accumulate, so an idle daemon never wakes.
//!
//! Even beside the writer a copy is not free: its fsyncs hold the writer's own WAL writes up
//! while they run. So a copy waits for a pause in the commits ([`QUIET`]), which a chat has
//! between a message and its answer, and only under commits that never pause for that long does
//! it go ahead, once the log holds [`COPY_ABOVE`] frames or [`AT_MOST`] after the first commit,
//! whichever comes first (the writer's WAL hook counts the frames, so a full load cannot grow
//! the log for the whole second). That is also how long a power loss can undo commits (with
//! `synchronous = NORMAL` the WAL is synced by the copy): shorter when traffic pauses, up to
//! [`AT_MOST`] when it does not.
//!
//! A PASSIVE checkpoint never empties the log while the writer keeps appending to it, so under
//! writes that never pause (a long first mail scan, a burst, steady traffic) the WAL would grow
//! without bound. When the log holds more than [`RESTART_ABOVE`] frames after a copy, the
//! checkpointer asks the writer to restart it; the writer does so between two transactions
//! (`writer.rs`), on its own connection, so it waits for no lock and copies only what came
//! since. That restart syncs what it copies while the writer's calls wait, so before asking for
//! it the checkpointer copies again what was committed during its own copy (a few rounds,
//! [`copy`]), which leaves the restart a few commits' frames. The log's file keeps its size
//! under load (`journal_size_limit` is that size) and is cut to nothing once the commits pause
//! (`trim.rs`), because SQLite's own cut, in the first commit after each restart, stalls the
//! writer. `benches/pipeline.rs` prints what each of these costs.

use std::os::raw::c_int;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::hooks::Wal;

/// How long no commit must come before a copy starts.
const QUIET: Duration = Duration::from_millis(50);
/// How long after the first commit a copy starts at the latest, pause or not.
const AT_MOST: Duration = Duration::from_secs(1);
/// WAL frames (pages) at which a copy starts without waiting for a pause or [`AT_MOST`]: 64 MiB,
/// four restarts' worth, so under one message at a time copies (and the restarts after them)
/// stay rare; a smaller bound brought them back into the pipeline's tail latency.
const COPY_ABOVE: i64 = 4 * RESTART_ABOVE;
/// At most this many copies follow a copy to take what was committed during it.
const CATCH_UP_ROUNDS: usize = 4;
/// Frames left to copy that the writer's restart may copy itself (a few commits' worth).
const CAUGHT_UP: i64 = 64;
/// WAL frames (pages) above which the log is restarted: 16 MiB of 4 KiB pages, a few thousand
/// messages' steps.
const RESTART_ABOVE: i64 = 4_096;
// The cut's threshold is a restarted log's size; it is written out there so `trim.rs` needs
// nothing from here.
const _: () = assert!(super::trim::TRIM_ABOVE == ((RESTART_ABOVE + 256) * 4_120) as u64);
/// What the WAL file is cut back to when the log restarts, in bytes (`journal_size_limit`):
/// about as much as a log grows under a full load before it restarts (twice [`COPY_ABOVE`]
/// frames, 130 MiB; the pipeline bench's full load grew it past 111 MiB), so a busy log's
/// commits overwrite pages the file already has (writing past its end allocates blocks and
/// pages, which the pipeline's profile showed) and a commit pays at most for cutting what
/// passed this. A frame is a 4 KiB page and its 24-byte header. The checkpointer cuts the file
/// to nothing once the commits pause ([`super::trim`]).
pub(super) const WAL_KEPT_BYTES: i64 = (2 * COPY_ABOVE + 256) * 4_120;

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
    /// What the writer tells and the checkpointer reads.
    shared: Arc<Shared>,
}

/// The commits as both threads see them.
#[derive(Default)]
struct Shared {
    /// Set by the commit that sent the wake-up, cleared by the checkpointer as it copies.
    pending: AtomicBool,
    /// Commits so far, which the waiting checkpointer reads to see whether they paused.
    count: AtomicU64,
    /// Frames in the log after the last commit, as the writer's WAL hook reports them.
    frames: AtomicI64,
}

impl Notices {
    /// Says there is something to copy; wakes the checkpointer only if nothing is pending.
    pub fn committed(&self) {
        self.shared.count.fetch_add(1, Ordering::Relaxed);
        if !self.shared.pending.swap(true, Ordering::AcqRel) {
            let _ = self.tx.try_send(());
        }
    }

    /// The writer restarted the log: its length is no longer what the last commit reported, so
    /// the next wake-up does not copy at once for a log that is long no more.
    pub fn restarted(&self) {
        self.shared.frames.store(0, Ordering::Relaxed);
    }

    /// Has the writer's connection report its log's length after each commit. Set after
    /// `wal_autocheckpoint`, which replaces the connection's WAL hook.
    pub fn watch(&self, conn: &mut Connection) -> rusqlite::Result<()> {
        let shared = self.shared.clone();
        conn.wal_hook(Some(move |_: &mut Wal, pages: c_int| {
            shared.frames.store(i64::from(pages), Ordering::Relaxed);
            Ok(())
        }))
    }
}

/// The wait between a wake-up and its copy: until commits pause for [`QUIET`], or [`AT_MOST`]
/// after the wake-up.
struct Spell {
    /// When the first commit woke the checkpointer.
    woken: Instant,
    /// The commit count at the last look.
    seen: u64,
}

impl Spell {
    /// How long to wait before looking again, or `None` to copy now, given the time, the
    /// commit count and the log's length in frames at this look.
    fn next(&mut self, now: Instant, count: u64, frames: i64) -> Option<Duration> {
        let left = AT_MOST.saturating_sub(now.saturating_duration_since(self.woken));
        if left.is_zero() || count == self.seen || frames >= COPY_ABOVE {
            return None;
        }
        self.seen = count;
        Some(QUIET.min(left))
    }
}

/// Starts a checkpointer for the database at `path`, which sets `restart` when the log should
/// be restarted; `None` (keep SQLite's automatic checkpoints) when it cannot open its own
/// connection or thread.
pub(super) fn start(path: &Path, restart: Arc<AtomicBool>) -> Option<Checkpointer> {
    let wal = super::files::companion(path, "-wal");
    let conn = match Connection::open(path) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "store: no checkpoint connection; checkpoints stay on the writer");
            return None;
        }
    };
    if conn.busy_timeout(super::BUSY_TIMEOUT).is_err()
        || conn
            .pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)
            .is_err()
    {
        return None;
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let shared = Arc::new(Shared::default());
    let seen = shared.clone();
    let thread = std::thread::Builder::new()
        .name("scv-store-checkpoint".into())
        .spawn(move || run(&conn, &wal, &rx, &seen, &restart))
        .ok()?;
    Some(Checkpointer {
        commits: Notices { tx, shared },
        thread,
    })
}

fn run(conn: &Connection, wal: &Path, commits: &Receiver<()>, seen: &Shared, restart: &AtomicBool) {
    let Shared {
        pending,
        count,
        frames,
    } = seen;
    while commits.recv().is_ok() {
        let mut spell = Spell {
            woken: Instant::now(),
            seen: count.load(Ordering::Relaxed),
        };
        let mut wait = Some(QUIET);
        while let Some(d) = wait {
            // Only the writer's end going away ends this wait early (the wake-up's slot stays
            // empty until the copy clears `pending`).
            if let Err(RecvTimeoutError::Disconnected) = commits.recv_timeout(d) {
                // The writer stopped; its own last checkpoint truncates the WAL.
                return;
            }
            let (n, log) = (
                count.load(Ordering::Relaxed),
                frames.load(Ordering::Relaxed),
            );
            wait = spell.next(Instant::now(), n, log);
        }
        // No commit came during the last wait (a transaction under way when the cut starts
        // makes it give up).
        let quiet = count.load(Ordering::Relaxed) == spell.seen;
        // Cleared before the copy: a commit from now on wakes the next round.
        pending.store(false, Ordering::Release);
        let file = std::fs::metadata(wal).map_or(0, |m| m.len());
        match copy(conn, frames) {
            Ok(_) if super::trim::wanted(quiet, file) && super::trim::trim(conn) => {
                frames.store(0, Ordering::Relaxed)
            }
            Ok(log) if log > RESTART_ABOVE => restart.store(true, Ordering::Release),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "store: checkpoint failed; retried after the next commit")
            }
        }
    }
}

/// Copies the log into the database, then what the writer committed during the copy (a few
/// rounds, each shorter than the one before), and returns the log's length in frames.
///
/// A copy takes the log as it was when it began; a long one (after a full load) would leave
/// everything committed meanwhile to the writer's restart, which copies it and syncs both files
/// between two of the writer's transactions while calls wait: catching up first keeps that
/// restart short.
fn copy(conn: &Connection, frames: &AtomicI64) -> rusqlite::Result<i64> {
    let passive = || {
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        })
    };
    catch_up(passive, || frames.load(Ordering::Relaxed))
}

/// [`copy`]'s rounds: `passive` copies and answers the log's length and how much of it is
/// copied; `writer` is the writer's own count of frames in the log now.
fn catch_up(
    mut passive: impl FnMut() -> rusqlite::Result<(i64, i64)>,
    writer: impl Fn() -> i64,
) -> rusqlite::Result<i64> {
    let (mut log, mut done) = passive()?;
    for _ in 0..CATCH_UP_ROUNDS {
        if !behind(log, done, writer()) {
            break;
        }
        let before = done;
        (log, done) = passive()?;
        if done <= before {
            // Nothing more could be copied (a reader holds an older snapshot): the restart
            // waits for the next copy either way.
            break;
        }
    }
    Ok(log)
}

/// Whether a copy that left the log at `log` frames with `done` of them copied should copy
/// again: the log is long enough to be restarted, and the writer has committed more than
/// [`CAUGHT_UP`] frames beyond what was copied (`now`, the writer's own count).
fn behind(log: i64, done: i64, now: i64) -> bool {
    log > RESTART_ABOVE && now > done + CAUGHT_UP
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
    match super::checkpoint_at_once(conn, "PRAGMA wal_checkpoint(RESTART)") {
        Ok(true) => Restart::Done,
        Ok(false) => Restart::ReaderInTheWay,
        Err(e) => {
            tracing::warn!(error = %e, "store: cannot restart the log; asked again after the next copy");
            Restart::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Notices with no checkpointer behind them (the wake-up's receiver is dropped).
    fn notices() -> Notices {
        Notices {
            tx: mpsc::sync_channel(1).0,
            shared: Arc::default(),
        }
    }

    #[test]
    fn the_writers_hook_reports_how_long_the_log_is_after_each_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut conn = Connection::open(dir.path().join("t.db")).expect("open");
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
            .expect("wal");
        let notices = notices();
        notices.watch(&mut conn).expect("hook");
        conn.execute_batch("CREATE TABLE t (v BLOB)")
            .expect("table");
        let first = notices.shared.frames.load(Ordering::Relaxed);
        assert!(first > 0, "no frames after the first commit");
        conn.execute("INSERT INTO t VALUES (zeroblob(40000))", [])
            .expect("insert");
        let after = notices.shared.frames.load(Ordering::Relaxed);
        assert!(
            after >= first + 9,
            "a 40 kB row adds 10 pages: {first} -> {after}"
        );
        // A restarted log is short again, whatever the last commit before it reported.
        notices.restarted();
        assert_eq!(notices.shared.frames.load(Ordering::Relaxed), 0);
    }

    /// A scripted checkpoint: each call answers the next (log, copied) pair and counts itself.
    fn scripted<'a>(
        rounds: Vec<(i64, i64)>,
        calls: &'a std::cell::Cell<usize>,
    ) -> impl FnMut() -> rusqlite::Result<(i64, i64)> + 'a {
        move || {
            let i = calls.get();
            calls.set(i + 1);
            Ok(rounds[i.min(rounds.len() - 1)])
        }
    }

    #[test]
    fn a_copy_takes_what_was_committed_during_it_before_the_restart() {
        let long = RESTART_ABOVE + 1_000;
        // The writer went on during the first copy (it is at `long + 610` now): a second copy
        // takes that, and the 10 frames still left are the restart's.
        let calls = std::cell::Cell::new(0);
        let copies = scripted(vec![(long, long), (long + 600, long + 600)], &calls);
        let log = catch_up(copies, || long + 610).expect("copy");
        assert_eq!((log, calls.get()), (long + 600, 2));

        // A short log is never copied twice: it is not restarted, so nothing waits on it.
        let calls = std::cell::Cell::new(0);
        let short = scripted(vec![(100, 100)], &calls);
        assert_eq!(catch_up(short, || 5_000).expect("copy"), 100);
        assert_eq!(calls.get(), 1);

        // No progress (a reader's snapshot holds the copy back): it stops at once.
        let calls = std::cell::Cell::new(0);
        let stuck = scripted(vec![(long, long - 500)], &calls);
        assert_eq!(catch_up(stuck, || long).expect("copy"), long);
        assert_eq!(calls.get(), 2);

        // A writer that never lets it catch up: a bounded number of rounds.
        let calls = std::cell::Cell::new(0);
        let mut n = 0;
        let racing = || {
            n += 1_000;
            Ok((long + n, long + n))
        };
        let counted = || {
            calls.set(calls.get() + 1);
            long * 10
        };
        catch_up(racing, counted).expect("copy");
        assert_eq!(calls.get(), CATCH_UP_ROUNDS);
    }

    #[test]
    fn a_copy_leaves_the_whole_log_in_the_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let mut writer = Connection::open(&path).expect("open");
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
                 CREATE TABLE t (v BLOB);",
            )
            .expect("wal");
        let notices = notices();
        notices.watch(&mut writer).expect("hook");
        for _ in 0..20 {
            writer
                .execute("INSERT INTO t VALUES (zeroblob(40000))", [])
                .expect("insert");
        }
        let reader = Connection::open(&path).expect("open");
        let frames = &notices.shared.frames;
        let log = copy(&reader, frames).expect("copy");
        assert_eq!(log, frames.load(Ordering::Relaxed));
        let (left, copied): (i64, i64) = reader
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(1)?, r.get(2)?))
            })
            .expect("look");
        assert_eq!((left, copied), (log, log), "everything was copied");
    }

    #[test]
    fn a_copy_waits_for_a_pause_in_the_commits_and_no_longer_than_at_most() {
        let woken = Instant::now();
        let ms = |n: u64| woken + Duration::from_millis(n);
        // Commits keep coming: it looks again after each quiet interval.
        let mut busy = Spell { woken, seen: 1 };
        assert_eq!(busy.next(ms(50), 9, 40), Some(QUIET));
        assert_eq!(busy.next(ms(100), 30, 120), Some(QUIET));
        // No commit since the last look: the pause has come.
        assert_eq!(busy.next(ms(150), 30, 120), None);
        // Commits that fill the log copy it without waiting for a pause or the second.
        let mut full = Spell { woken, seen: 1 };
        assert_eq!(full.next(ms(50), 9, COPY_ABOVE - 1), Some(QUIET));
        assert_eq!(full.next(ms(100), 30, COPY_ABOVE), None);

        // Commits that never pause: the last wait ends at AT_MOST, then it copies anyway.
        // As `run` does: wait first, then look (a commit came during every wait).
        let mut steady = Spell { woken, seen: 0 };
        let (mut now, mut waits, mut copied) = (woken, vec![QUIET], false);
        for count in 1..1_000 {
            now += waits[waits.len() - 1];
            match steady.next(now, count, 10) {
                Some(d) => waits.push(d),
                None => {
                    copied = true;
                    break;
                }
            }
        }
        assert!(copied, "never copied: waits {waits:?}");
        assert_eq!(now, woken + AT_MOST, "waits: {waits:?}");
        assert!(waits.iter().all(|d| *d <= QUIET), "waits: {waits:?}");
    }
}
