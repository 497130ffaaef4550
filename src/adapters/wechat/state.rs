//! What the WeChat adapter keeps in the store: the cursor, each peer's send window and latest
//! context token, and the outcome of every `client_id` it sent.

use std::collections::HashMap;
use std::sync::Mutex;

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError};

/// The `account_state` name of the long-poll cursor.
const CURSOR: &str = "wechat_cursor";
/// The `account_state` name of the account-wide send hold after a refusal (Unix ms).
const HOLD_UNTIL: &str = "wechat_hold_until_ms";
/// Send outcomes older than this are forgotten (the outbox retries far sooner than this).
const SEND_RECORD_KEEP_MS: i64 = 8 * 24 * 3600 * 1000;

/// Wall-clock Unix milliseconds: the send window is about hours and must survive restarts.
pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The stored cursor, tagged with the bot it belongs to: a login as another bot starts afresh.
#[derive(Serialize, Deserialize)]
struct StoredCursor {
    bot_id: String,
    cursor: String,
}

/// The cursor to poll from for `bot_id` (`""` when none is stored or it is another bot's).
pub(super) async fn load_cursor(
    store: &Store,
    account: &str,
    bot_id: &str,
) -> Result<String, StoreError> {
    let raw = store.get_state(account, CURSOR).await?;
    Ok(raw
        .and_then(|r| serde_json::from_str::<StoredCursor>(&r).ok())
        .filter(|c| c.bot_id == bot_id)
        .map(|c| c.cursor)
        .unwrap_or_default())
}

/// Stores the cursor inside `t`, the transaction that journals the batch it follows (the server
/// never replays what it returned, so the two must commit together).
pub(super) fn save_cursor_in(
    t: &rusqlite::Transaction<'_>,
    account: &str,
    bot_id: &str,
    cursor: &str,
) -> rusqlite::Result<()> {
    let value = serde_json::to_string(&StoredCursor {
        bot_id: bot_id.to_string(),
        cursor: cursor.to_string(),
    })
    .unwrap_or_default();
    t.execute(
        "INSERT INTO account_state (account, name, value) VALUES (?1, ?2, ?3)
         ON CONFLICT(account, name) DO UPDATE SET value = excluded.value",
        params![account, CURSOR, value],
    )
    .map(drop)
}

/// Stores peers' latest tokens and reopens their windows, inside `t`.
pub(super) fn store_inbound(
    t: &rusqlite::Transaction<'_>,
    account: &str,
    rows: &[(String, String, i64)],
) -> rusqlite::Result<()> {
    let mut st = t.prepare_cached(
        "INSERT INTO wechat_peers (account, peer, context_token, last_inbound_ms, sends)
         VALUES (?1, ?2, ?3, ?4, 0)
         ON CONFLICT(account, peer) DO UPDATE SET context_token = excluded.context_token,
           last_inbound_ms = excluded.last_inbound_ms, sends = 0",
    )?;
    for (peer, token, at) in rows {
        st.execute(params![account, peer, token, at])?;
    }
    Ok(())
}

/// What a new run needs to keep the previous run's pace: when it last tried to send, and until
/// when WeChat's refusal holds sends (both Unix ms). A restart must not send sooner than either.
pub(super) async fn pacing(
    store: &Store,
    account: &str,
) -> Result<(Option<i64>, Option<i64>), StoreError> {
    let a = account.to_string();
    store
        .call(move |t| {
            let last: Option<i64> = t.query_row(
                "SELECT MAX(updated_ms) FROM wechat_sends WHERE account = ?1",
                params![a],
                |r| r.get(0),
            )?;
            let hold: Option<String> = t
                .query_row(
                    "SELECT value FROM account_state WHERE account = ?1 AND name = ?2",
                    params![a, HOLD_UNTIL],
                    |r| r.get(0),
                )
                .optional()?;
            Ok((last, hold.and_then(|h| h.parse().ok())))
        })
        .await
}

/// Remembers the account-wide hold, so a restart keeps it.
pub(super) async fn save_hold(
    store: &Store,
    account: &str,
    until_ms: i64,
) -> Result<(), StoreError> {
    store
        .set_state(account, HOLD_UNTIL, &until_ms.to_string())
        .await
}

/// One peer's latest context token and what is left of its send window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PeerWindow {
    /// The token to echo on sends.
    pub context_token: String,
    /// When the peer last wrote, Unix ms.
    pub last_inbound_ms: i64,
    /// Sends accepted since then.
    pub sends: u32,
}

/// Every peer's window of one account: cached in memory, written through to the store.
pub(super) struct Peers {
    store: Store,
    account: String,
    cache: Mutex<HashMap<String, PeerWindow>>,
}

impl Peers {
    /// The peers of `account`, loaded lazily.
    pub(super) fn new(store: Store, account: String) -> Self {
        Peers {
            store,
            account,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// A peer wrote: its token becomes the latest and its window reopens (count back to 0).
    #[cfg(test)]
    pub(super) async fn record_inbound(
        &self,
        seen: Vec<(String, String, i64)>,
    ) -> Result<(), StoreError> {
        if seen.is_empty() {
            return Ok(());
        }
        let account = self.account.clone();
        let rows = seen.clone();
        self.store
            .call(move |t| store_inbound(t, &account, &rows))
            .await?;
        self.remember_inbound(seen);
        Ok(())
    }

    /// The in-memory half of [`Peers::record_inbound`], for a caller that stores the rows with
    /// [`store_inbound`] in its own transaction.
    pub(super) fn remember_inbound(&self, seen: Vec<(String, String, i64)>) {
        if let Ok(mut cache) = self.cache.lock() {
            for (peer, token, at) in seen {
                cache.insert(
                    peer,
                    PeerWindow {
                        context_token: token,
                        last_inbound_ms: at,
                        sends: 0,
                    },
                );
            }
        }
    }

    /// The peer's window, if the peer ever wrote.
    pub(super) async fn get(&self, peer: &str) -> Result<Option<PeerWindow>, StoreError> {
        if let Some(w) = self.cache.lock().ok().and_then(|c| c.get(peer).cloned()) {
            return Ok(Some(w));
        }
        let (account, p) = (self.account.clone(), peer.to_string());
        let loaded = self
            .store
            .call(move |t| {
                t.query_row(
                    "SELECT context_token, last_inbound_ms, sends FROM wechat_peers
                     WHERE account = ?1 AND peer = ?2",
                    params![account, p],
                    |r| {
                        Ok(PeerWindow {
                            context_token: r.get(0)?,
                            last_inbound_ms: r.get(1)?,
                            sends: r.get::<_, i64>(2)?.max(0) as u32,
                        })
                    },
                )
                .optional()
            })
            .await?;
        if let (Some(w), Ok(mut cache)) = (&loaded, self.cache.lock()) {
            cache.entry(peer.to_string()).or_insert_with(|| w.clone());
        }
        Ok(loaded)
    }

    /// WeChat took the send `client_id` to `peer`: its outcome and one more send on the peer's
    /// window, in one transaction.
    ///
    /// This commit is what a restart reads before sending again: until it lands, a crash
    /// repeats the reply. So it is one statement batch, queued by the same poll that read
    /// WeChat's answer, with nothing awaited before it.
    pub(super) async fn record_accepted(
        &self,
        peer: &str,
        client_id: &str,
    ) -> Result<(), StoreError> {
        if let Ok(mut cache) = self.cache.lock()
            && let Some(w) = cache.get_mut(peer)
        {
            w.sends = w.sends.saturating_add(1);
        }
        let (account, p, id, now) = (
            self.account.clone(),
            peer.to_string(),
            client_id.to_string(),
            now_ms(),
        );
        self.store
            .call(move |t| {
                t.prepare_cached(
                    "UPDATE wechat_sends SET state = 'accepted', updated_ms = ?3
                     WHERE account = ?1 AND client_id = ?2",
                )?
                .execute(params![account, id, now])?;
                t.prepare_cached(
                    "UPDATE wechat_peers SET sends = sends + 1 WHERE account = ?1 AND peer = ?2",
                )?
                .execute(params![account, p])
                .map(drop)
            })
            .await
    }
}

/// What is known of earlier attempts with one `client_id`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct SendRecord {
    /// The platform accepted it already.
    pub accepted: bool,
    /// Some earlier attempt ended without a definite answer.
    pub ambiguous: bool,
    /// When the platform first refused it (`ret=-2`), Unix ms.
    pub first_refused_ms: Option<i64>,
}

/// How one attempt ended without being taken (a taken one is [`Peers::record_accepted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SendOutcome {
    /// `ret=-2`: definitely not taken this time.
    Refused,
    /// Not taken for another definite reason (expired session, a gateway's 429).
    NotTaken,
    /// No definite answer (timeout, network, 5xx): it may have been taken.
    Unknown,
}

/// Records that an attempt with `client_id` starts, and returns what earlier attempts left.
///
/// A row still in `sending` means the process died during an earlier attempt: ambiguous.
pub(super) async fn begin_send(
    store: &Store,
    account: &str,
    client_id: &str,
) -> Result<SendRecord, StoreError> {
    let (account, id, now) = (account.to_string(), client_id.to_string(), now_ms());
    store
        .call(move |t| {
            let prior: Option<(String, bool, Option<i64>)> = t
                .query_row(
                    "SELECT state, ambiguous, first_refused_ms FROM wechat_sends
                     WHERE account = ?1 AND client_id = ?2",
                    params![account, id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let record = match prior {
                None => SendRecord::default(),
                Some((state, ambiguous, first_refused_ms)) => SendRecord {
                    accepted: state == "accepted",
                    ambiguous: ambiguous || state == "sending" || state == "unknown",
                    first_refused_ms,
                },
            };
            if !record.accepted {
                t.execute(
                    "INSERT INTO wechat_sends (account, client_id, state, ambiguous, updated_ms)
                     VALUES (?1, ?2, 'sending', ?3, ?4)
                     ON CONFLICT(account, client_id) DO UPDATE SET state = 'sending',
                       ambiguous = excluded.ambiguous, updated_ms = excluded.updated_ms",
                    params![account, id, record.ambiguous, now],
                )?;
            }
            Ok(record)
        })
        .await
}

/// Records how an attempt with `client_id` ended.
pub(super) async fn finish_send(
    store: &Store,
    account: &str,
    client_id: &str,
    outcome: SendOutcome,
) -> Result<(), StoreError> {
    let (account, id, now) = (account.to_string(), client_id.to_string(), now_ms());
    store
        .call(move |t| {
            let sql = match outcome {
                SendOutcome::Refused => {
                    "UPDATE wechat_sends SET state = 'refused', updated_ms = ?3,
                       first_refused_ms = COALESCE(first_refused_ms, ?3)
                     WHERE account = ?1 AND client_id = ?2"
                }
                SendOutcome::NotTaken => {
                    "UPDATE wechat_sends SET state = 'refused', updated_ms = ?3
                     WHERE account = ?1 AND client_id = ?2"
                }
                SendOutcome::Unknown => {
                    "UPDATE wechat_sends SET state = 'unknown', ambiguous = 1, updated_ms = ?3
                     WHERE account = ?1 AND client_id = ?2"
                }
            };
            t.execute(sql, params![account, id, now]).map(drop)
        })
        .await
}

/// Forgets send outcomes older than the outbox could still retry.
pub(super) async fn purge_sends(store: &Store, account: &str) -> Result<(), StoreError> {
    let (account, cutoff) = (account.to_string(), now_ms() - SEND_RECORD_KEEP_MS);
    store
        .call(move |t| {
            t.execute(
                "DELETE FROM wechat_sends WHERE account = ?1 AND updated_ms < ?2",
                params![account, cutoff],
            )
            .map(drop)
        })
        .await
}
