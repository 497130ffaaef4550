//! Sends a crash could leave undecided. WeCom takes no idempotency key (spec §4.1), so an
//! answer WeCom took just before a `kill -9`, whose outbox row was not yet marked sent, would go
//! again after the restart. Before each send the item's key is stored; a key found already
//! stored means an earlier run began this very send and never learned how it ended: the
//! outcome is unknown, and the spec's rule for that is not to resend blindly (§5, last row), so
//! it counts as sent. A send that fails with a known outcome removes its key, so its retry
//! goes normally. So that nothing is lost either, such a reply is held here (its chat and text)
//! and a short note goes in its place quoting its first words; `/again` from that chat sends
//! the held replies again, as WeChat's adapter does (`adapters/wechat/held.rs`).

use scv_wecom::limits::STREAM_WINDOW;
use serde::{Deserialize, Serialize};

use crate::store::{AccountState, StoreError};
use crate::supervisor::unix_now;

/// The state name prefix of the keys of sends begun.
const PREFIX: &str = "wecom_sending/";

/// The state name prefix of held replies: `wecom_held/<outbox key>`.
const HELD: &str = "wecom_held/";

/// Held replies are kept this long for `/again`.
const KEEP_HELD_SECS: u64 = 8 * 24 * 3600;

/// One held reply (field names are stored: keep them stable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Held {
    /// The chat it was for (the outbox item's chat).
    pub chat: String,
    /// Its text.
    pub text: String,
    /// When it was held, Unix seconds.
    pub at: u64,
}

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

    /// Keeps the reply `key` for `chat` until the chat asks for it with `/again`.
    pub(super) async fn hold(&self, key: &str, chat: &str, text: &str) -> Result<(), StoreError> {
        let name = format!("{HELD}{key}");
        let held = Held {
            chat: chat.to_string(),
            text: text.to_string(),
            at: unix_now(),
        };
        self.state.call(move |s| s.put_json(&name, &held)).await
    }

    /// The replies held for `chat`, by outbox key, oldest key first.
    pub(super) async fn held_for(&self, chat: &str) -> Result<Vec<(String, Held)>, StoreError> {
        let chat = chat.to_string();
        self.state
            .call(move |s| {
                Ok(s.scan(HELD)?
                    .into_iter()
                    .filter_map(|(name, v)| {
                        let held: Held = serde_json::from_str(&v).ok()?;
                        let key = name.strip_prefix(HELD)?.to_string();
                        (held.chat == chat).then_some((key, held))
                    })
                    .collect())
            })
            .await
    }

    /// Forgets the held reply `key` (it was queued again).
    pub(super) async fn released(&self, key: &str) -> Result<(), StoreError> {
        let name = format!("{HELD}{key}");
        self.state.call(move |s| s.delete(&name)).await
    }

    /// Removes keys older than a day and held replies older than eight days (once per run).
    pub(super) async fn prune(&self) {
        let now = unix_now();
        let cutoff = now.saturating_sub(KEEP_SECS.max(STREAM_WINDOW.as_secs()));
        let held_cutoff = now.saturating_sub(KEEP_HELD_SECS);
        let pruned = self
            .state
            .call(move |s| {
                for (name, at) in s.scan(PREFIX)? {
                    if at.parse::<u64>().map_or(true, |t| t < cutoff) {
                        s.delete(&name)?;
                    }
                }
                for (name, v) in s.scan(HELD)? {
                    let old = serde_json::from_str::<Held>(&v).map_or(true, |h| h.at < held_cutoff);
                    if old {
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
