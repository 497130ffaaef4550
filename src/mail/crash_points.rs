//! Crash points: where a test makes a mail account stop as if the process died there.
//!
//! Only builds with the `testing` feature (the test suite's) can arm them; in a release build
//! the struct is empty and every point is a constant `false` the optimizer removes.

#[cfg(any(test, feature = "testing"))]
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(any(test, feature = "testing"))]
use tokio::sync::Notify;

/// A point in a mail account's work where a test may stop it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CrashPoint {
    /// After new mail is claimed, before it is decided.
    AfterClaim,
    /// After a digest is built and stored, before it goes to the outbox.
    AfterDigestBuild,
}

/// The armed crash points; once one is reached, nothing after it runs, exactly as after
/// `kill -9` (only commits survive). Shared by every account of a test daemon.
#[derive(Default)]
pub struct TestHooks {
    /// Stop after new mail is claimed, before it is decided.
    #[cfg(any(test, feature = "testing"))]
    pub stop_after_claim: AtomicBool,
    /// Stop after a digest is built and stored, before it goes to the outbox.
    #[cfg(any(test, feature = "testing"))]
    pub stop_after_digest_build: AtomicBool,
    /// Notified when a stop point is reached.
    #[cfg(any(test, feature = "testing"))]
    pub reached: Notify,
}

impl TestHooks {
    /// Whether `point` is armed; if so, announces it to the waiting test.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn hit(&self, point: CrashPoint) -> bool {
        let flag = match point {
            CrashPoint::AfterClaim => &self.stop_after_claim,
            CrashPoint::AfterDigestBuild => &self.stop_after_digest_build,
        };
        let armed = flag.load(Ordering::SeqCst);
        if armed {
            self.reached.notify_waiters();
            self.reached.notify_one();
        }
        armed
    }

    /// Never armed outside the test suite.
    #[cfg(not(any(test, feature = "testing")))]
    pub(crate) fn hit(&self, _point: CrashPoint) -> bool {
        false
    }
}
