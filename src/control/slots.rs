//! The control socket's connection table: at most a fixed number of clients at once, and when it
//! is full a new client takes the place of the one that has been silent longest, so a flood of
//! idle connections can never lock `status` out.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Every open connection, by the order it arrived.
struct Table {
    cap: usize,
    next: u64,
    open: BTreeMap<u64, Entry>,
}

/// One connection: since when it has been waiting for a request (`None` while it is being
/// answered), and how to close it.
struct Entry {
    idle_since: Option<Instant>,
    evict: CancellationToken,
}

/// The table, shared by the accept loop and the connections.
#[derive(Clone)]
pub(super) struct Slots {
    table: Arc<Mutex<Table>>,
}

impl Slots {
    /// A table for at most `cap` connections (at least one).
    pub(super) fn new(cap: usize) -> Slots {
        Slots {
            table: Arc::new(Mutex::new(Table {
                cap: cap.max(1),
                next: 0,
                open: BTreeMap::new(),
            })),
        }
    }

    /// A place for a new connection, closing the longest-idle one when the table is full;
    /// `None` when every connection is in the middle of a request.
    pub(super) fn admit(&self) -> Option<Slot> {
        let mut t = lock(&self.table);
        if t.open.len() >= t.cap {
            let idlest = t
                .open
                .iter()
                .filter_map(|(&id, e)| e.idle_since.map(|since| (since, id)))
                .min()?;
            if let Some(e) = t.open.remove(&idlest.1) {
                e.evict.cancel();
            }
        }
        let id = t.next;
        t.next += 1;
        let evict = CancellationToken::new();
        t.open.insert(
            id,
            Entry {
                idle_since: Some(Instant::now()),
                evict: evict.clone(),
            },
        );
        Some(Slot {
            id,
            table: self.table.clone(),
            evict,
        })
    }

    /// Whether the next newcomer has to take someone's place.
    pub(super) fn full(&self) -> bool {
        let t = lock(&self.table);
        t.open.len() >= t.cap
    }

    /// How many connections are open.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        lock(&self.table).open.len()
    }
}

/// One connection's place in the table; leaving it (drop) frees the place.
pub(super) struct Slot {
    id: u64,
    table: Arc<Mutex<Table>>,
    evict: CancellationToken,
}

impl Slot {
    /// The connection is answering a request: it cannot be closed for a newcomer.
    pub(super) fn busy(&self) {
        self.mark(None);
    }

    /// The connection waits for its next request from now on.
    pub(super) fn idle(&self) {
        self.mark(Some(Instant::now()));
    }

    fn mark(&self, idle_since: Option<Instant>) {
        if let Some(e) = lock(&self.table).open.get_mut(&self.id) {
            e.idle_since = idle_since;
        }
    }

    /// Resolves when a newcomer took this connection's place.
    pub(super) fn evicted(&self) -> WaitForCancellationFutureOwned {
        self.evict.clone().cancelled_owned()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.table).open.remove(&self.id);
    }
}

/// The table stays consistent under a panic elsewhere: every change is a single map operation.
fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_full_table_closes_the_longest_idle_and_never_a_busy_one() {
        let slots = Slots::new(3);
        let a = slots.admit().expect("a");
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        let b = slots.admit().expect("b");
        let c = slots.admit().expect("c");
        a.busy();
        let d = slots
            .admit()
            .expect("d takes b's place: a is busy, b idle longest");
        assert!(b.evict.is_cancelled());
        assert!(!a.evict.is_cancelled() && !c.evict.is_cancelled());
        assert_eq!(slots.len(), 3);
        c.busy();
        d.busy();
        assert!(slots.admit().is_none(), "every connection is busy");
        drop(b);
        assert_eq!(slots.len(), 3, "an evicted slot is already gone");
        drop(d);
        assert!(
            slots.admit().is_some(),
            "a closed connection frees its place"
        );
    }
}
