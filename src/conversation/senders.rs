//! The chats' senders as one group, so a stop lets each finish the send it is in, and a
//! chat's next sender starts only after the last one ended.
//!
//! A send the platform has taken but the outbox has not yet marked would go again at the next
//! start: a stop that ended the process in between was a repeat the owner saw. Cancelling a
//! sender only ends it between sends, so a stop waits (bounded) for the group to end. For the
//! same reason an account that restarts (a `channel set`, a reload, a failure) must not start
//! a second sender on a chat whose first is still in a send: it would take the same item.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio_util::task::TaskTracker;

use crate::config::AccountKey;
use crate::ids::ChatId;

/// A chat's send lane: whoever holds it is the chat's one sender.
type Lane = Arc<tokio::sync::Mutex<()>>;

/// Every sender task the pipeline started, and how many are between handing an item to the
/// platform and storing what it said.
#[derive(Default)]
pub(super) struct Senders {
    tasks: TaskTracker,
    in_flight: AtomicUsize,
    /// One lock per chat, held by the chat's sender for its whole run.
    lanes: Mutex<HashMap<(AccountKey, ChatId), Lane>>,
}

/// Held from handing an item to the platform until its outcome is stored.
pub(super) struct Sending<'a>(&'a AtomicUsize);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Senders {
    /// Runs a chat's sender in the group, on the pipeline's runtime.
    pub(super) fn spawn(
        &self,
        spawner: &super::spawner::Spawner,
        sender: impl Future<Output = ()> + Send + 'static,
    ) {
        spawner.track(&self.tasks, sender);
    }

    /// Waits until no other sender of this chat runs; the lane is the caller's until the guard
    /// drops (when its sender ends).
    pub(super) async fn lane(&self, account: &AccountKey, chat: &ChatId) -> OwnedMutexGuard<()> {
        let lane = super::lock(&self.lanes)
            .entry((account.clone(), chat.clone()))
            .or_default()
            .clone();
        lane.lock_owned().await
    }

    /// Counts one send in flight until the guard drops.
    pub(super) fn sending(&self) -> Sending<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Sending(&self.in_flight)
    }

    /// Waits up to `grace` for every sender to end (their accounts have detached, so each ends
    /// once the send it is in is answered and stored). Logs counts only.
    pub(super) async fn settle(&self, grace: Duration) {
        self.tasks.close();
        let sending = self.in_flight.load(Ordering::SeqCst);
        if sending > 0 {
            tracing::info!(
                sends = sending,
                "stopping: waiting for the sends in flight to be answered and stored"
            );
        }
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                sends = self.in_flight.load(Ordering::SeqCst),
                grace_s = grace.as_secs(),
                "stopping: sends still unanswered after the grace period; each goes again at the next start, under the same idempotency key"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::spawner::Spawner;
    use std::sync::Arc;
    use tokio::sync::Notify;

    const GRACE: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn settle_waits_for_the_send_in_flight() {
        let senders = Arc::new(Senders::default());
        let (answered, started) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let stored = Arc::new(AtomicUsize::new(0));
        let (s, a, st, d) = (
            senders.clone(),
            answered.clone(),
            started.clone(),
            stored.clone(),
        );
        senders.spawn(&Spawner::default(), async move {
            let _sending = s.sending();
            st.notify_one();
            a.notified().await;
            d.store(1, Ordering::SeqCst);
        });
        started.notified().await;
        let settle = tokio::spawn({
            let s = senders.clone();
            async move { s.settle(GRACE).await }
        });
        answered.notify_one();
        settle.await.expect("settle");
        assert_eq!(
            stored.load(Ordering::SeqCst),
            1,
            "the send was stored first"
        );
        assert_eq!(senders.in_flight.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_send_that_never_ends_holds_the_stop_for_the_grace_only() {
        let senders = Arc::new(Senders::default());
        let s = senders.clone();
        senders.spawn(&Spawner::default(), async move {
            let _sending = s.sending();
            std::future::pending::<()>().await;
        });
        let before = tokio::time::Instant::now();
        senders.settle(GRACE).await;
        assert_eq!(before.elapsed(), GRACE);
        assert_eq!(senders.in_flight.load(Ordering::SeqCst), 1);
    }
}
