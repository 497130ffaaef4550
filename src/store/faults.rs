//! A test-only failure a test can turn on (feature `testing`): every call of the urgent lane
//! (the inbound journal, which acknowledgements and cursors wait on) fails as a full disk does,
//! without running. Without the feature, [`Faults`] is empty and `wrap` returns the call as is.

use rusqlite::Transaction;

/// The store's injected failures; shared by every handle of one store.
#[derive(Clone, Default)]
pub(crate) struct Faults {
    #[cfg(feature = "testing")]
    journal_full: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Faults {
    /// `f`, failing with "database or disk is full" while the fault is on (urgent calls only).
    #[cfg(feature = "testing")]
    pub(crate) fn wrap<R, F>(
        &self,
        f: F,
        urgent: bool,
    ) -> impl FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        let full = urgent && self.journal_full.load(std::sync::atomic::Ordering::Acquire);
        move |t: &Transaction<'_>| {
            if full {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                    Some("database or disk is full".into()),
                ));
            }
            f(t)
        }
    }

    /// `f` as is (the fault exists only with the `testing` feature).
    #[cfg(not(feature = "testing"))]
    pub(crate) fn wrap<R, F>(&self, f: F, _urgent: bool) -> F
    where
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        f
    }

    /// Turns the full-disk failure of the journal on or off.
    #[cfg(feature = "testing")]
    pub(crate) fn set_journal_full(&self, on: bool) {
        self.journal_full
            .store(on, std::sync::atomic::Ordering::Release);
    }
}
