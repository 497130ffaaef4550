//! Sends a crash could leave undecided. WeCom takes no idempotency key (spec §4.1), so an
//! answer WeCom took just before a `kill -9`, whose outbox row was not yet marked sent, would go
//! again after the restart. Before each send the item's key is stored; a key found already
//! stored means an earlier run began this very send and never learned how it ended: the
//! outcome is unknown, and the spec's rule for that is not to resend blindly (§5, last row), so
//! it counts as sent. A send that fails with a known outcome removes its key, so its retry
//! goes normally. The loss this trades for the duplicate is a kill in the microseconds between
//! storing the key and writing the frame.

use scv_wecom::limits::STREAM_WINDOW;

use crate::store::{AccountState, StoreError};
use crate::supervisor::unix_now;

/// The state name prefix of the keys of sends begun.
const PREFIX: &str = "wecom_sending/";

/// Keys older than this are pruned at the start of a run (an outbox item is retried for far
/// less long than a day once its run ended).
const KEEP_SECS: u64 = 24 * 3600;

/// The sends begun by this account, in its state.
#[derive(Clone)]
pub(super) struct InFlight {
    state: AccountState,
}

impl InFlight {
    /// Keys kept in `state`.
    pub(super) fn new(state: AccountState) -> Self {
        InFlight { state }
    }

    /// Stores `key` as begun; true when an earlier run had begun it already (outcome unknown).
    pub(super) async fn begin(&self, key: &str) -> Result<bool, StoreError> {
        let name = format!("{PREFIX}{key}");
        let now = unix_now().to_string();
        self.state
            .call(move |s| {
                if s.get(&name)?.is_some() {
                    return Ok(true);
                }
                s.put(&name, &now)?;
                Ok(false)
            })
            .await
    }

    /// Forgets `key`: its send failed with a known outcome and may go again.
    pub(super) async fn failed(&self, key: &str) {
        let name = format!("{PREFIX}{key}");
        if let Err(e) = self.state.call(move |s| s.delete(&name)).await {
            tracing::warn!(error = %e, "cannot forget a failed send; its retry counts as sent");
        }
    }

    /// Removes keys older than a day (once per run).
    pub(super) async fn prune(&self) {
        let cutoff = unix_now().saturating_sub(KEEP_SECS.max(STREAM_WINDOW.as_secs()));
        let pruned = self
            .state
            .call(move |s| {
                for (name, at) in s.scan(PREFIX)? {
                    if at.parse::<u64>().map_or(true, |t| t < cutoff) {
                        s.delete(&name)?;
                    }
                }
                Ok(())
            })
            .await;
        if let Err(e) = pruned {
            tracing::warn!(error = %e, "cannot prune the record of sends begun");
        }
    }
}
