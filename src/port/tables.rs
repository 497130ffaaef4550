//! The store, lent to a platform whose records are tables of its own rather than the names and
//! values of [`crate::store::AccountState`]: mail's claims, decisions, digests and drafted
//! replies (`mail/triage/db.rs` owns their schema). Only such a platform asks for it; every
//! other one keeps its state through `AccountPort::state`.

use rusqlite::Transaction;

use crate::store::{Store, StoreError};

/// The platform's tables; cheap to clone.
#[derive(Clone)]
pub struct Tables(Store);

impl Tables {
    pub(super) fn new(store: Store) -> Self {
        Tables(store)
    }

    /// Runs `f` on the writer thread; resolves after the transaction holding it has committed.
    pub async fn call<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<R> + Send + 'static,
    {
        self.0.call(f).await
    }
}
