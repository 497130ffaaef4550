//! The writer thread: every call runs here, inside a shared transaction, in its own savepoint.
//!
//! Two lanes. Ordinary calls (turns, the outbox, state) are grouped, up to [`MAX_BATCH`] per
//! commit. Urgent calls (what a platform acknowledgement waits on: the inbound journal) go
//! first, in a transaction of their own, and an ordinary batch being built commits early when
//! one arrives, so a journal write waits behind at most one ordinary call, never behind a
//! batch of hundreds. Within a lane calls commit in the order they were sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, Transaction};

use super::Counters;
use super::seat::Seat;

/// The most calls one transaction carries.
const MAX_BATCH: usize = 512;
/// How long the writer looks for the next call before it sleeps (see [`Inbox::next`]).
const SPIN: Duration = Duration::from_micros(50);

/// Answers a call once its transaction committed (or failed to).
pub(super) type Reply = Box<dyn FnOnce(Result<(), String>) + Send>;
/// A call: runs in the transaction, returns how to answer its caller.
pub(super) type Job = Box<dyn FnOnce(&Transaction<'_>) -> Reply + Send>;

/// What the writer thread receives on its main channel.
pub(super) enum Msg {
    /// Run an ordinary call.
    Job(Job),
    /// An urgent call is waiting in the urgent lane (wakes a writer blocked on this channel).
    Urgent,
    /// Commit what is queued before this and stop.
    Close,
}

/// The sending side of both lanes; cheap to clone.
#[derive(Clone)]
pub(super) struct Lanes {
    main: mpsc::Sender<Msg>,
    urgent: mpsc::Sender<Job>,
    /// Urgent calls sent and not yet taken by the writer.
    waiting: Arc<AtomicUsize>,
    /// Counts every call sent, so a short call never runs ahead of one.
    seat: Arc<Seat>,
}

/// The writer's receiving side.
pub(super) struct Inbox {
    main: mpsc::Receiver<Msg>,
    urgent: mpsc::Receiver<Job>,
    waiting: Arc<AtomicUsize>,
    seat: Arc<Seat>,
}

/// A pair of lanes and the writer's end of them, over `seat`'s connection.
pub(super) fn lanes(seat: Arc<Seat>) -> (Lanes, Inbox) {
    let (main_tx, main_rx) = mpsc::channel();
    let (urgent_tx, urgent_rx) = mpsc::channel();
    let waiting = Arc::new(AtomicUsize::new(0));
    (
        Lanes {
            main: main_tx,
            urgent: urgent_tx,
            waiting: waiting.clone(),
            seat: seat.clone(),
        },
        Inbox {
            main: main_rx,
            urgent: urgent_rx,
            waiting,
            seat,
        },
    )
}

impl Lanes {
    /// Queues `job` in its lane; `Err` when the writer has stopped.
    pub fn send(&self, job: Job, urgent: bool) -> Result<(), ()> {
        self.seat.queue();
        if !urgent {
            return self.main.send(Msg::Job(job)).map_err(drop);
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        self.urgent.send(job).map_err(drop)?;
        self.main.send(Msg::Urgent).map_err(drop)
    }

    /// Asks the writer to commit what is queued and stop.
    pub fn close(&self) {
        self.seat.close();
        let _ = self.main.send(Msg::Close);
    }
}

impl Inbox {
    fn urgent_waiting(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    /// The next message: looked for without sleeping for [`SPIN`] first, then waited for.
    ///
    /// Calls come in chains (a message's journal write, then its turn's read, then its answer),
    /// each sent a moment after the last one's answer arrives. Going to sleep between them
    /// made each cost a thread wake-up, several times an empty call's own work; a short spin
    /// catches the next call instead. It costs at most [`SPIN`] of a core per quiet spell, and a
    /// longer spin measurably slowed other work on two cores (status of many accounts), so it is
    /// kept short.
    fn next(&self) -> Option<Msg> {
        let started = Instant::now();
        loop {
            match self.main.try_recv() {
                Ok(m) => return Some(m),
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) if started.elapsed() < SPIN => {
                    std::hint::spin_loop();
                }
                Err(mpsc::TryRecvError::Empty) => {
                    // Asleep: a short call may use the connection meanwhile (`seat.rs`).
                    self.seat.sleeping(true);
                    let next = self.main.recv().ok();
                    self.seat.sleeping(false);
                    return next;
                }
            }
        }
    }

    /// Takes up to [`MAX_BATCH`] queued urgent calls.
    fn take_urgent(&self) -> Vec<Job> {
        let jobs: Vec<Job> = self.urgent.try_iter().take(MAX_BATCH).collect();
        self.waiting.fetch_sub(jobs.len(), Ordering::AcqRel);
        self.seat.taken(jobs.len());
        jobs
    }
}

/// Runs calls until the store is closed or every handle is gone. The connection is held for
/// each round of calls and released between them, when a short call may take it.
pub(super) fn run(seat: &Seat, inbox: Inbox, counters: &Counters) {
    let mut closing = false;
    let mut next: Option<Msg> = None;
    while !closing {
        let first = match next.take() {
            Some(m) => m,
            None => match inbox.next() {
                Some(m) => m,
                None => break,
            },
        };
        let mut held = seat.hold();
        let Some(open) = held.as_mut() else { break };
        // A reader in the way is not waited for: the checkpointer asks again.
        if seat.take_restart()
            && super::checkpoint::restart_log(&open.conn) == super::checkpoint::Restart::Done
        {
            open.restarted();
        }
        let conn = &mut open.conn;
        let mut committed = commit_urgent(conn, &inbox, counters);
        match first {
            Msg::Job(job) => {
                let (n, closed, left) = ordinary(conn, job, &inbox, counters);
                committed |= n > 0;
                closing = closed;
                next = left;
            }
            Msg::Urgent => {}
            Msg::Close => closing = true,
        }
        if closing {
            // Whatever urgent call came in before the close is answered too.
            committed |= commit_urgent(conn, &inbox, counters);
        }
        if committed {
            open.committed();
        }
    }
    // Checkpoint so the WAL does not outlive a clean shutdown; the checkpointer's channel
    // closes with it, which stops that thread.
    if let Some(open) = seat.hold().take() {
        let _ = open.conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
    }
}

/// Runs every waiting urgent call in one transaction; whether it committed anything.
fn commit_urgent(conn: &mut Connection, inbox: &Inbox, counters: &Counters) -> bool {
    let mut any = false;
    loop {
        let jobs = inbox.take_urgent();
        if jobs.is_empty() {
            return any;
        }
        any = true;
        count(counters, jobs.len());
        let Some(tx) = begin(conn) else { return any };
        let replies: Vec<Reply> = jobs.into_iter().map(|job| job(&tx)).collect();
        finish(tx, replies);
    }
}

/// Runs `first` and the ordinary calls queued behind it in one transaction, committing early
/// when an urgent call arrives. Returns the calls run, whether a close was read, and a message
/// read but not handled (an urgent nudge is handled by the next round).
fn ordinary(
    conn: &mut Connection,
    first: Job,
    inbox: &Inbox,
    counters: &Counters,
) -> (usize, bool, Option<Msg>) {
    inbox.seat.taken(1);
    let Some(tx) = begin(conn) else {
        // Dropping the job answers its caller with `Closed`; the reason is in the log.
        return (0, false, None);
    };
    let mut replies = vec![first(&tx)];
    let mut closing = false;
    let mut left = None;
    while replies.len() < MAX_BATCH && !inbox.urgent_waiting() {
        match inbox.main.try_recv() {
            Ok(Msg::Job(job)) => {
                inbox.seat.taken(1);
                replies.push(job(&tx));
            }
            Ok(Msg::Urgent) => {
                left = Some(Msg::Urgent);
                break;
            }
            Ok(Msg::Close) => {
                closing = true;
                break;
            }
            Err(_) => break,
        }
    }
    let n = replies.len();
    count(counters, n);
    finish(tx, replies);
    (n, closing, left)
}

fn count(counters: &Counters, calls: usize) {
    counters.calls.fetch_add(calls as u64, Ordering::Relaxed);
    counters.commits.fetch_add(1, Ordering::Relaxed);
}

fn begin(conn: &mut Connection) -> Option<Transaction<'_>> {
    match conn.transaction() {
        Ok(tx) => Some(tx),
        Err(e) => {
            tracing::error!(error = %e, "store: cannot begin a transaction");
            None
        }
    }
}

/// Commits, then answers every call of the transaction.
fn finish(tx: Transaction<'_>, replies: Vec<Reply>) {
    let commit = tx.commit().map_err(|e| e.to_string());
    if let Err(e) = &commit {
        tracing::error!(error = %e, "store: commit failed");
    }
    for reply in replies {
        reply(commit.clone());
    }
}

/// Runs one call inside its own savepoint so its failure undoes only its own writes.
pub(super) fn run_in_savepoint<R>(
    t: &Transaction<'_>,
    f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<R>,
) -> rusqlite::Result<R> {
    // Cached statements: a savepoint per call must stay cheap, it runs for every call.
    t.prepare_cached("SAVEPOINT call")?.execute([])?;
    match f(t) {
        Ok(r) => {
            t.prepare_cached("RELEASE call")?.execute([])?;
            Ok(r)
        }
        Err(e) => {
            let _ = t.execute_batch("ROLLBACK TO call; RELEASE call");
            Err(e)
        }
    }
}
