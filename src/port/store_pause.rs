//! What an account does while the journal cannot commit (a full disk, a failing one): it takes
//! no new input, since input is journaled before the platform is acknowledged or the cursor
//! moves, and what the platform hands over uncommitted may never come back (WeChat's server does
//! not replay a poll it answered). WeChat stops polling and keeps retrying the batch it holds;
//! Feishu answers 500, so Feishu pushes the events again. Meanwhile status says so in the
//! account's `store` note, and the first commit that succeeds takes the note away.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::StoreError;
use crate::supervisor::{BackoffPolicy, HealthHandle, NoteSource, random_jitter};
use crate::words::{Lang, Msg};

/// The retries of a held batch: from 1 s, doubling up to 30 s (freeing space is a person's
/// work; a retry costs one small transaction).
const RETRY: BackoffPolicy = BackoffPolicy {
    base: Duration::from_secs(1),
    cap: Duration::from_secs(30),
};

/// One run's view of whether its journal writes are failing; cheap to clone.
#[derive(Clone)]
pub struct StorePause {
    health: HealthHandle,
    paused: Arc<AtomicBool>,
}

impl StorePause {
    /// Nothing failing yet.
    pub fn new(health: &HealthHandle) -> Self {
        StorePause {
            health: health.clone(),
            paused: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A journal write failed with `e`: the note says what and that no input is taken.
    pub fn failed(&self, account: &dyn std::fmt::Display, e: &StoreError) {
        let first = !self.paused.swap(true, Ordering::AcqRel);
        if first {
            tracing::error!(account = %account, error = %e, "the journal cannot commit; taking no new input until it can");
        }
        self.health.note(NoteSource::Store, Some(note(e)));
    }

    /// A journal write committed: the note goes, if there was one.
    pub fn committed(&self, account: &dyn std::fmt::Display) {
        if self.paused.swap(false, Ordering::AcqRel) {
            tracing::info!(account = %account, "the journal commits again; taking input again");
            self.health.note(NoteSource::Store, None);
        }
    }

    /// Waits before retry number `attempt` (0-based) of what failed; true if cancelled first.
    pub async fn wait(&self, attempt: u32, cancel: &CancellationToken) -> bool {
        let d = RETRY.delay(attempt, 0.5 + random_jitter() / 2.0);
        tokio::select! {
            _ = tokio::time::sleep(d) => false,
            _ = cancel.cancelled() => true,
        }
    }
}

/// The status note for a failing journal write (the catalogue's words; status is English).
pub fn note(e: &StoreError) -> String {
    let text = e.to_string();
    let disk_full = match e {
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => {
            f.code == rusqlite::ErrorCode::DiskFull
        }
        // A failed commit reaches callers as its message only.
        _ => text.contains("database or disk is full"),
    };
    Msg::StorePaused {
        disk_full,
        error: text.trim_start_matches("store: ").to_string(),
    }
    .text(Lang::En)
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_named_and_other_failures_quoted() {
        let full = StoreError::Sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        ));
        assert_eq!(
            note(&full),
            "store: disk full; not reading new messages until space is freed"
        );
        assert_eq!(
            note(&StoreError::Closed),
            "store: cannot write (closed); not reading new messages until it can"
        );
    }
}
