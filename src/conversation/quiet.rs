//! The quiescence barrier: a count of pipeline work that may still produce something.
//!
//! Each chat worker holds one unit while it is not parked, and every wake-up sent to a worker
//! holds one more until that worker has looked at what woke it; a fast-lane task and an account's
//! resume hold one while they run. The count is zero only when every worker waits for new input
//! and no wake-up is unseen, so [`Quiet::wait`] cannot resolve between "stored" and "picked up".
//! Parked also means waiting out the outside world ([`Gate::wait_out`]): a closed send window, a
//! platform's slow-down or backoff, a failing account, an agent that is down. New work for such a
//! worker waits behind the same trouble, so its wake-up holds nothing; a test that wants it to
//! move advances its clock or writes as the peer (the peer's wake-up does hold the count, see
//! [`Gate::kick_peer`]). A mail-chat message waiting for the mail accounts to start lends its
//! unit the same way ([`Quiet::lend`]). The cost when nobody waits is an atomic or two per message.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// The shared count and who waits for it to reach zero.
#[derive(Default)]
pub(crate) struct Quiet {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    busy: AtomicUsize,
    idle: Notify,
}

impl Inner {
    fn add(&self, n: usize) {
        self.busy.fetch_add(n, Ordering::SeqCst);
    }

    fn sub(&self, n: usize) {
        if n > 0 && self.busy.fetch_sub(n, Ordering::SeqCst) == n {
            self.idle.notify_waiters();
        }
    }
}

impl Quiet {
    /// Resolves once nothing in the pipeline is busy.
    pub(crate) async fn wait(&self) {
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.inner.busy.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Holds one unit until the guard drops (a fast-lane task, a resume).
    pub(crate) fn hold(&self) -> Busy {
        self.inner.add(1);
        Busy {
            inner: self.inner.clone(),
        }
    }

    /// Lends one unit of the caller's to a wait for something outside the bridge (a mail-chat
    /// message waiting for the mail accounts to start); [`Quiet::reclaim`] takes it back.
    pub(crate) fn lend(&self) {
        self.inner.sub(1);
    }

    /// Takes back `n` lent units: their waits ended, or are about to end (a handler was set).
    pub(crate) fn reclaim(&self, n: usize) {
        self.inner.add(n);
    }

    /// A worker's gate, held busy from now (a worker starts by looking at its queue).
    pub(crate) fn gate(&self) -> Gate {
        self.inner.add(1);
        Gate {
            inner: self.inner.clone(),
            kicks: AtomicUsize::new(0),
            held: AtomicBool::new(true),
            out: AtomicBool::new(false),
            peer: AtomicBool::new(false),
        }
    }
}

/// One unit of busy work; released on drop.
pub(crate) struct Busy {
    inner: Arc<Inner>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.inner.sub(1);
    }
}

/// One worker's share of the count: its own unit while it runs, plus unseen wake-ups.
pub(crate) struct Gate {
    inner: Arc<Inner>,
    /// Wake-ups sent and not yet seen by the worker; each holds a unit.
    kicks: AtomicUsize,
    /// Whether the worker holds its own unit (it is not parked).
    held: AtomicBool,
    /// The worker waits out trouble outside the bridge; plain wake-ups then hold nothing.
    out: AtomicBool,
    /// The worker waits for the peer (a closed send window).
    peer: AtomicBool,
}

impl Gate {
    /// Marks a wake-up sent (call before notifying): the count stays up until the worker saw it.
    pub(crate) fn kick(&self) {
        if !self.out.load(Ordering::SeqCst) {
            self.kick_always();
        }
    }

    /// A wake-up that holds the count even during a wait-out.
    fn kick_always(&self) {
        self.inner.add(1);
        self.kicks.fetch_add(1, Ordering::SeqCst);
    }

    /// The worker is about to look at its queue: wake-ups so far are seen. Call while running.
    pub(crate) fn seen(&self) {
        self.inner.sub(self.kicks.swap(0, Ordering::SeqCst));
    }

    /// Whether a wake-up came after the last look (then look again instead of parking).
    pub(crate) fn kicked(&self) -> bool {
        self.kicks.load(Ordering::SeqCst) > 0
    }

    /// The worker parks: its own unit is released (unseen wake-ups still hold theirs).
    pub(crate) fn park(&self) {
        if self.held.swap(false, Ordering::SeqCst) {
            self.inner.sub(1);
        }
    }

    /// [`Gate::wait_out`] for a closed window, which the peer writing ends ([`Gate::kick_peer`]).
    ///
    /// Wake-ups that came while the refused send was out (new work queued meanwhile) are
    /// released too: that work waits behind the same closed window, and nothing the pipeline
    /// does ends this wait (only the peer, a move of the chat's first item, or the recheck
    /// minutes later), so holding them kept the barrier shut until the recheck. Released
    /// before the peer flag is set: a peer's wake-up from then on holds the count.
    pub(crate) fn wait_for_peer(&self) {
        self.out.store(true, Ordering::SeqCst);
        self.seen();
        self.peer.store(true, Ordering::SeqCst);
        self.park();
    }

    /// The peer wrote: holds the count if the worker waits for that, until it has looked again.
    pub(crate) fn kick_peer(&self) {
        if self.peer.load(Ordering::SeqCst) {
            self.kick_always();
        }
    }

    /// Closes the gate as the worker ends: what it held is released, later wake-ups hold nothing.
    pub(crate) fn close(&self) {
        self.out.store(true, Ordering::SeqCst);
        self.park();
        self.seen();
    }

    /// The worker parks while it waits out trouble outside the bridge (see the module doc).
    pub(crate) fn wait_out(&self) {
        self.out.store(true, Ordering::SeqCst);
        self.park();
    }

    /// The worker runs again after parking; it looks at its queue next.
    pub(crate) fn unpark(&self) {
        if !self.held.swap(true, Ordering::SeqCst) {
            self.inner.add(1);
        }
        self.out.store(false, Ordering::SeqCst);
        self.peer.store(false, Ordering::SeqCst);
    }
}

/// Closes a gate when its worker ends, however it ends.
pub(crate) struct Closing<'a>(&'a Gate);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Gate {
    /// A guard that closes the gate on drop; a worker takes it first thing.
    pub(crate) fn closing(&self) -> Closing<'_> {
        Closing(self)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.park();
        self.inner.sub(self.kicks.swap(0, Ordering::SeqCst));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn resolves(q: &Quiet) -> bool {
        tokio::time::timeout(Duration::from_millis(1), q.wait())
            .await
            .is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_wake_during_a_send_the_window_refused_holds_nothing_once_it_waits_for_the_peer() {
        let q = Quiet::default();
        let g = q.gate();
        g.seen();
        // New work is queued while the send is out: the running worker will look at it.
        g.kick();
        assert!(
            !resolves(&q).await,
            "the worker runs and has an unseen wake-up"
        );
        // The window was closed: the new work waits behind it with the rest.
        g.wait_for_peer();
        assert!(
            resolves(&q).await,
            "nothing the pipeline does ends this wait"
        );
        g.kick_peer();
        assert!(!resolves(&q).await, "the peer wrote: the worker retries");
        g.unpark();
        g.seen();
        g.park();
        assert!(resolves(&q).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_kick_holds_the_barrier_until_seen_even_while_the_worker_is_parked() {
        let q = Quiet::default();
        assert!(resolves(&q).await, "nothing runs");
        let g = q.gate();
        assert!(
            !resolves(&q).await,
            "a fresh worker looks at its queue first"
        );
        g.seen();
        g.park();
        assert!(resolves(&q).await, "parked");
        g.kick();
        assert!(!resolves(&q).await, "a wake-up is unseen");
        g.unpark();
        g.seen();
        assert!(!resolves(&q).await, "the worker runs");
        g.park();
        assert!(resolves(&q).await);
        let held = q.hold();
        assert!(!resolves(&q).await, "a fast-lane task runs");
        drop(held);
        g.unpark();
        g.wait_out();
        g.kick();
        assert!(resolves(&q).await, "new work waits behind the trouble");
        g.kick_peer();
        assert!(
            resolves(&q).await,
            "a slow-down does not end when the peer writes"
        );
        g.unpark();
        g.wait_for_peer();
        g.kick_peer();
        assert!(!resolves(&q).await, "the peer wrote: the worker retries");
        g.unpark();
        g.seen();
        g.kick();
        g.close();
        assert!(resolves(&q).await, "an ended worker holds nothing");
        g.kick();
        assert!(resolves(&q).await, "nor do wake-ups after it ended");
    }
}
