//! The one loop that moves questions on time: withdrawal, deadline, delivery checks, forgetting.

use std::sync::Arc;

use super::ConfirmService;

/// How long the loop waits after a store error before trying again (ms of the service's clock).
const RETRY_MS: u64 = 1_000;

impl ConfirmService {
    /// Runs until the service stops.
    pub(super) async fn drive(self: Arc<Self>) {
        let svc = self;
        loop {
            let now = svc.clock().now_ms();
            let mut retry = false;
            for (seq, due) in svc.due(now) {
                if let Err(e) = svc.process(seq, due, now).await {
                    tracing::error!(question = seq, error = %e, "cannot move a question on; retrying");
                    retry = true;
                }
            }
            let next = if retry {
                Some(now + RETRY_MS)
            } else {
                svc.next_wake()
            };
            let clock = svc.clock().clone();
            let sleep = async move {
                match next {
                    Some(t) => clock.sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => {}
                _ = svc.woken() => {}
                _ = svc.cancelled() => return,
            }
        }
    }
}
