//! How long a command waits for its answer is timed by a [`Timer`]: tokio's clock unless the
//! caller hands its own. The daemon hands its clock, so its tests can move that clock by hand:
//! a paused tokio clock would jump whenever the daemon waits on its store's thread, and an ack
//! timeout (§5: outcome unknown) would fire on its own.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A sleep of the caller's choosing.
type SleepFn = dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync;

/// Times the wait for a command's answer. Made by the caller of [`crate::Options`]; the
/// default sleeps on tokio's clock.
#[derive(Clone, Default)]
pub struct Timer(Option<Arc<SleepFn>>);

impl Timer {
    /// A timer that waits with `sleep`.
    pub fn new(
        sleep: impl Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static,
    ) -> Self {
        Timer(Some(Arc::new(sleep)))
    }

    /// Resolves after `d` on this timer's clock.
    pub async fn sleep(&self, d: Duration) {
        match &self.0 {
            Some(f) => f(d).await,
            None => tokio::time::sleep(d).await,
        }
    }
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Timer(given)"
        } else {
            "Timer(tokio)"
        })
    }
}
