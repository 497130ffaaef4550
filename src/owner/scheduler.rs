//! The scheduler: hands each stored send to the outbox when the clock reaches its time.
//!
//! It waits on the daemon's clock (a test's hand-moved one too) until the next due time, a new
//! send, or a jump of the clock, whichever comes first; every pass hands over all that is due,
//! so sends due while the daemon was down go out at its start, once each (see
//! `OwnerService::hand_over`).

use std::sync::Arc;
use std::time::Duration;

use super::{OwnerService, sends};

/// How long a pass that could not reach the store waits before the next.
const STORE_RETRY: Duration = Duration::from_secs(1);

/// Runs until the service stops.
pub(super) async fn run(svc: Arc<OwnerService>) {
    let mut jumps = svc.parts.clock.jumps();
    loop {
        // Listen before reading, so a send stored during the pass wakes the next wait.
        let stored = svc.wake.notified();
        tokio::pin!(stored);
        stored.as_mut().enable();
        let now = svc.parts.clock.now_ms();
        let mut failed = svc.hand_over_due(now).await;
        let next = match svc.parts.store.call(sends::next_due).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "cannot read when the next send is due");
                failed += 1;
                None
            }
        };
        if failed == 0 && next.is_some_and(|n| n <= now) {
            // More were due than one pass takes.
            continue;
        }
        svc.passed.send_replace(now);
        let retry = failed > 0;
        tokio::select! {
            _ = svc.cancel.cancelled() => return,
            _ = &mut stored => {}
            _ = jumps.changed() => {}
            _ = tokio::time::sleep(STORE_RETRY), if retry => {}
            _ = svc.sleep_until(next), if !retry => {}
        }
    }
}
