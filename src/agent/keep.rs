//! What a backend keeps of a turn (the `openai` backend's chat history and usage), stored with
//! the turn's answer.

use std::sync::{Arc, Mutex};

use rusqlite::Transaction;

use crate::store::Store;

/// One store write a backend wants made once its turn is answered.
pub type KeepWrite = Box<dyn FnOnce(&Transaction<'_>) -> rusqlite::Result<()> + Send>;

/// A backend's write for a turn, carried on its [`super::TurnOutput`].
///
/// The conversation pipeline takes it ([`Keep::take`]) and runs it inside the transaction that
/// stores the answer: the two commit together or not at all, so a turn asked again after a
/// crash is not remembered twice, and the answer's path pays one commit instead of two. A caller
/// that stores no answer (a test, a direct caller) just drops it: the write then goes on its own
/// at once, as a short store call, ahead of any store call made after the drop.
#[derive(Clone, Default)]
pub struct Keep(Option<Arc<Held>>);

struct Held {
    store: Store,
    write: Mutex<Option<KeepWrite>>,
}

impl Keep {
    /// `write`, to be made in `store` with the answer (or on its own when nobody takes it).
    pub fn new(store: Store, write: KeepWrite) -> Keep {
        Keep(Some(Arc::new(Held {
            store,
            write: Mutex::new(Some(write)),
        })))
    }

    /// The write, for the caller's own transaction; `None` when there is none or it was taken.
    pub fn take(&self) -> Option<KeepWrite> {
        let held = self.0.as_ref()?;
        held.write.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Drops the write unmade: the turn is asked again later, and kept then.
    pub fn forget(&self) {
        drop(self.take());
    }
}

/// Makes `write` inside `t`, in a savepoint of its own: a write that fails is undone and logged,
/// and the answer beside it is stored all the same (the backend forgets one exchange; the
/// owner still gets the answer, and the turn is not produced again).
pub fn made_in(t: &Transaction<'_>, write: KeepWrite) -> rusqlite::Result<()> {
    t.prepare_cached("SAVEPOINT keep")?.execute([])?;
    match write(t) {
        Ok(()) => {
            t.prepare_cached("RELEASE keep")?.execute([])?;
        }
        Err(e) => {
            t.execute_batch("ROLLBACK TO keep; RELEASE keep")?;
            tracing::warn!(error = %e, "could not store what the agent keeps of a turn");
        }
    }
    Ok(())
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(write) = self
            .write
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        // Run or queued now, so it commits ahead of later calls whether or not it is awaited.
        let stored = self.store.call_short(write);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = stored.await {
                    tracing::warn!(error = %e, "could not store what the agent keeps of a turn");
                }
            });
        }
    }
}

impl std::fmt::Debug for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Keep(write)"
        } else {
            "Keep(none)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counting(store: &Store) -> Keep {
        let write: KeepWrite = Box::new(|t| {
            t.execute_batch(
                "CREATE TABLE IF NOT EXISTS kept (n INTEGER); INSERT INTO kept VALUES (1);",
            )
        });
        Keep::new(store.clone(), write)
    }

    async fn kept(store: &Store) -> i64 {
        store
            .call(|t| {
                t.execute_batch("CREATE TABLE IF NOT EXISTS kept (n INTEGER)")?;
                t.query_row("SELECT COUNT(*) FROM kept", [], |r| r.get(0))
            })
            .await
            .expect("count")
    }

    #[tokio::test]
    async fn a_write_nobody_takes_is_made_on_its_own_once() {
        let (store, _g) = Store::open_in_memory().expect("store");
        let keep = counting(&store);
        let copy = keep.clone();
        drop(keep);
        assert_eq!(kept(&store).await, 0, "a clone still holds it");
        drop(copy);
        assert_eq!(kept(&store).await, 1, "made when the last holder went");
    }

    #[tokio::test]
    async fn a_failing_write_is_undone_and_the_rest_of_the_transaction_kept() {
        let (store, _g) = Store::open_in_memory().expect("store");
        let failing: KeepWrite = Box::new(|t| {
            t.execute_batch("CREATE TABLE half (n INTEGER); INSERT INTO nowhere VALUES (1);")
        });
        store
            .call(move |t| {
                made_in(t, failing)?;
                t.execute_batch("CREATE TABLE kept (n INTEGER); INSERT INTO kept VALUES (1);")
            })
            .await
            .expect("the answer's transaction commits");
        let tables: Vec<String> = store
            .call(|t| {
                let mut q = t.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
                q.query_map([], |r| r.get(0))?.collect()
            })
            .await
            .expect("tables");
        assert!(tables.contains(&"kept".to_string()), "{tables:?}");
        assert!(
            !tables.contains(&"half".to_string()),
            "the failed write is undone: {tables:?}"
        );
    }

    #[tokio::test]
    async fn a_taken_or_forgotten_write_is_not_made_again() {
        let (store, _g) = Store::open_in_memory().expect("store");
        let keep = counting(&store);
        let write = keep.take().expect("the write");
        assert!(keep.take().is_none(), "taken once");
        drop(keep);
        assert_eq!(kept(&store).await, 0, "the taker makes it");
        store.call(move |t| write(t)).await.expect("made");
        assert_eq!(kept(&store).await, 1);
        let forgotten = counting(&store);
        forgotten.forget();
        drop(forgotten);
        assert_eq!(kept(&store).await, 1, "forgotten: never made");
    }
}
