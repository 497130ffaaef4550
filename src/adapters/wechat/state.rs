//! What the WeChat adapter keeps in the store: the cursor, each peer's send window and latest
//! context token, and the outcome of every `client_id` it sent.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::store::{AccountState, StateError, StateTxn, StoreError};

/// The state name of the long-poll cursor.
const CURSOR: &str = "wechat_cursor";
/// The state name of the account-wide send hold after a refusal (Unix ms).
const HOLD_UNTIL: &str = "wechat_hold_until_ms";
/// Names of peers' windows: `wechat_peer/<peer id>` (the store's wechat step 2 moved them here).
const PEER: &str = "wechat_peer/";
/// Names of send records: `wechat_send/<client_id>`.
const SEND: &str = "wechat_send/";
/// Send outcomes older than this are forgotten (the outbox retries far sooner than this).
pub(super) const SEND_RECORD_KEEP_MS: i64 = 8 * 24 * 3600 * 1000;

/// The stored cursor, tagged with the bot it belongs to: a login as another bot starts afresh.
#[derive(Serialize, Deserialize)]
struct StoredCursor {
    bot_id: String,
    cursor: String,
}

/// One peer as stored (field names are the migration's; keep them stable).
#[derive(Serialize, Deserialize)]
struct StoredPeer {
    context_token: String,
    last_inbound_ms: i64,
    sends: i64,
}

/// One `client_id`'s outcome as stored: `state` is sending | unknown | refused | accepted | held;
/// `ambiguous` once any attempt ended without a definite answer (crash, timeout, network error),
/// so a later ret=-2 may mean "already delivered". `held`: a crash interrupted an attempt, so
/// the item is never sent under this id again (see [`super::held`]).
#[derive(Serialize, Deserialize)]
struct StoredSend {
    state: String,
    ambiguous: bool,
    first_refused_ms: Option<i64>,
    updated_ms: i64,
}

/// The cursor to poll from for `bot_id` (`""` when none is stored or it is another bot's).
pub(super) async fn load_cursor(state: &AccountState, bot_id: &str) -> Result<String, StoreError> {
    let raw = state.get(CURSOR).await?;
    Ok(raw
        .and_then(|r| serde_json::from_str::<StoredCursor>(&r).ok())
        .filter(|c| c.bot_id == bot_id)
        .map(|c| c.cursor)
        .unwrap_or_default())
}

/// Stores the cursor inside `s`, the transaction that journals the batch it follows (the server
/// never replays what it returned, so the two must commit together).
pub(super) fn save_cursor_in(
    s: &StateTxn<'_>,
    bot_id: &str,
    cursor: &str,
) -> Result<(), StateError> {
    s.put_json(
        CURSOR,
        &StoredCursor {
            bot_id: bot_id.to_string(),
            cursor: cursor.to_string(),
        },
    )
}

/// Stores peers' latest tokens and reopens their windows (count back to 0), inside `s`.
pub(super) fn store_inbound(
    s: &StateTxn<'_>,
    rows: &[(String, String, i64)],
) -> Result<(), StateError> {
    for (peer, token, at) in rows {
        s.put_json(
            &format!("{PEER}{peer}"),
            &StoredPeer {
                context_token: token.clone(),
                last_inbound_ms: *at,
                sends: 0,
            },
        )?;
    }
    Ok(())
}

/// What a new run needs to keep the previous run's pace: when it last tried to send, and until
/// when WeChat's refusal holds sends (both Unix ms). A restart must not send sooner than either.
pub(super) async fn pacing(state: &AccountState) -> Result<(Option<i64>, Option<i64>), StoreError> {
    state
        .call(|s| {
            let last = s
                .scan(SEND)?
                .iter()
                .filter_map(|(_, v)| serde_json::from_str::<StoredSend>(v).ok())
                .map(|r| r.updated_ms)
                .max();
            let hold = s.get(HOLD_UNTIL)?;
            Ok((last, hold.and_then(|h| h.parse().ok())))
        })
        .await
}

/// Remembers the account-wide hold, so a restart keeps it.
pub(super) async fn save_hold(state: &AccountState, until_ms: i64) -> Result<(), StoreError> {
    state.put(HOLD_UNTIL, &until_ms.to_string()).await
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
    state: AccountState,
    /// Wall time (the send window is about hours and must survive restarts); the port's clock.
    clock: Clock,
    cache: Mutex<HashMap<String, PeerWindow>>,
}

impl Peers {
    /// The peers of `account`, loaded lazily.
    pub(super) fn new(state: AccountState, clock: Clock) -> Self {
        Peers {
            state,
            clock,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Now, in Unix milliseconds, on the port's clock.
    pub(super) fn now_ms(&self) -> i64 {
        self.clock.now_ms() as i64
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
        let rows = seen.clone();
        self.state.call(move |s| store_inbound(s, &rows)).await?;
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
        let name = format!("{PEER}{peer}");
        let loaded = self
            .state
            .call(move |s| {
                Ok(s.get_json::<StoredPeer>(&name)?.map(|p| PeerWindow {
                    context_token: p.context_token,
                    last_inbound_ms: p.last_inbound_ms,
                    sends: p.sends.max(0) as u32,
                }))
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
        let (p, id, now) = (peer.to_string(), client_id.to_string(), self.now_ms());
        self.state
            .call(move |s| {
                let send = format!("{SEND}{id}");
                if let Some(mut r) = s.get_json::<StoredSend>(&send)? {
                    r.state = "accepted".into();
                    r.updated_ms = now;
                    s.put_json(&send, &r)?;
                }
                let peer = format!("{PEER}{p}");
                if let Some(mut w) = s.get_json::<StoredPeer>(&peer)? {
                    w.sends = w.sends.saturating_add(1);
                    s.put_json(&peer, &w)?;
                }
                Ok(())
            })
            .await
    }
}

/// What is known of earlier attempts with one `client_id`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct SendRecord {
    /// The platform accepted it already.
    pub accepted: bool,
    /// An earlier attempt was still in flight when the process died: the platform may have
    /// taken it, and nothing recorded says whether.
    pub interrupted: bool,
    /// Held after such an attempt (not sent again; the chat was or is being told).
    pub held: bool,
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
/// A record still in `sending` means the process died during an earlier attempt: the request
/// may have been taken. Such a record (or a `held` one) is left as it is, for the caller to
/// hold the item ([`mark_held_in`]) rather than start an attempt.
pub(super) async fn begin_send(
    state: &AccountState,
    client_id: &str,
    now: i64,
) -> Result<SendRecord, StoreError> {
    let name = format!("{SEND}{client_id}");
    state
        .call(move |s| {
            let prior = s.get_json::<StoredSend>(&name)?;
            let record = match &prior {
                None => SendRecord::default(),
                Some(p) => SendRecord {
                    accepted: p.state == "accepted",
                    interrupted: p.state == "sending",
                    held: p.state == "held",
                    ambiguous: p.ambiguous || p.state == "sending" || p.state == "unknown",
                    first_refused_ms: p.first_refused_ms,
                },
            };
            if !(record.accepted || record.interrupted || record.held) {
                s.put_json(
                    &name,
                    &StoredSend {
                        state: "sending".into(),
                        ambiguous: record.ambiguous,
                        first_refused_ms: record.first_refused_ms,
                        updated_ms: now,
                    },
                )?;
            }
            Ok(record)
        })
        .await
}

/// Marks `client_id` held inside `s`: no attempt under it is ever started again.
pub(super) fn mark_held_in(s: &StateTxn<'_>, client_id: &str, now: i64) -> Result<(), StateError> {
    let name = format!("{SEND}{client_id}");
    let mut r = s.get_json::<StoredSend>(&name)?.unwrap_or(StoredSend {
        state: String::new(),
        ambiguous: true,
        first_refused_ms: None,
        updated_ms: now,
    });
    r.state = "held".into();
    r.updated_ms = now;
    s.put_json(&name, &r)
}

/// Records how an attempt with `client_id` ended.
pub(super) async fn finish_send(
    state: &AccountState,
    client_id: &str,
    outcome: SendOutcome,
    now: i64,
) -> Result<(), StoreError> {
    let name = format!("{SEND}{client_id}");
    state
        .call(move |s| {
            let Some(mut r) = s.get_json::<StoredSend>(&name)? else {
                return Ok(());
            };
            r.updated_ms = now;
            match outcome {
                SendOutcome::Refused => {
                    r.state = "refused".into();
                    r.first_refused_ms = r.first_refused_ms.or(Some(now));
                }
                SendOutcome::NotTaken => r.state = "refused".into(),
                SendOutcome::Unknown => {
                    r.state = "unknown".into();
                    r.ambiguous = true;
                }
            }
            s.put_json(&name, &r)
        })
        .await
}

/// Forgets send outcomes older than the outbox could still retry.
pub(super) async fn purge_sends(state: &AccountState, now: i64) -> Result<(), StoreError> {
    let cutoff = now - SEND_RECORD_KEEP_MS;
    state
        .call(move |s| {
            for (name, value) in s.scan(SEND)? {
                let old = serde_json::from_str::<StoredSend>(&value)
                    .map(|r| r.updated_ms < cutoff)
                    // A record this build cannot read is of no use to it.
                    .unwrap_or(true);
                if old {
                    s.delete(&name)?;
                }
            }
            Ok(())
        })
        .await
}

/// The stored state of send `client_id` and the peer's send count, for tests that check what a
/// crash leaves behind.
#[cfg(test)]
pub(super) async fn inspect(
    state: &AccountState,
    client_id: &str,
    peer: &str,
) -> (Option<String>, Option<i64>) {
    let (send, peer) = (format!("{SEND}{client_id}"), format!("{PEER}{peer}"));
    state
        .call(move |s| {
            Ok((
                s.get_json::<StoredSend>(&send)?.map(|r| r.state),
                s.get_json::<StoredPeer>(&peer)?.map(|p| p.sends),
            ))
        })
        .await
        .unwrap_or((None, None))
}

#[cfg(test)]
mod upgrade_tests {
    use super::*;
    use crate::store::Store;

    /// A store written before the port kept WeChat's peers and send records in their own
    /// tables; opening it with this build moves them into the account's state unchanged.
    #[tokio::test]
    async fn peers_and_send_records_from_the_old_tables_survive_the_upgrade() {
        let dir = tempfile::tempdir().expect("the upgrade test");
        let path = dir.path().join("state.db");
        let (store, guard) = Store::open(&path).expect("the upgrade test");
        drop(store);
        guard.close();
        {
            let c = rusqlite::Connection::open(&path).expect("the upgrade test");
            c.execute_batch(
                "DROP TABLE IF EXISTS wechat_peers; DROP TABLE IF EXISTS wechat_sends;
                 CREATE TABLE wechat_peers (account TEXT NOT NULL, peer TEXT NOT NULL,
                   context_token TEXT NOT NULL, last_inbound_ms INTEGER NOT NULL,
                   sends INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (account, peer));
                 CREATE TABLE wechat_sends (account TEXT NOT NULL, client_id TEXT NOT NULL,
                   state TEXT NOT NULL, ambiguous INTEGER NOT NULL DEFAULT 0,
                   first_refused_ms INTEGER, updated_ms INTEGER NOT NULL,
                   PRIMARY KEY (account, client_id));
                 INSERT INTO wechat_peers VALUES ('wechat:a', 'o@im.wechat', 'tok', 1000, 3);
                 INSERT INTO wechat_peers VALUES ('wechat:b', 'o@im.wechat', 'other', 5, 0);
                 INSERT INTO wechat_sends VALUES ('wechat:a', 'c-acc', 'accepted', 0, NULL, 2000);
                 INSERT INTO wechat_sends VALUES ('wechat:a', 'c-ref', 'refused', 1, 1500, 2500);
                 UPDATE schema_versions SET version = 1 WHERE module = 'wechat';",
            )
            .expect("the upgrade test");
        }
        let (store, _guard) = Store::open(&path).expect("the upgrade test");
        let a = AccountState::new(store.clone(), "wechat:a");
        let peer = Peers::new(a.clone(), Clock::system())
            .get("o@im.wechat")
            .await
            .expect("the upgrade test");
        assert_eq!(
            peer,
            Some(PeerWindow {
                context_token: "tok".into(),
                last_inbound_ms: 1000,
                sends: 3
            })
        );
        let b = Peers::new(
            AccountState::new(store.clone(), "wechat:b"),
            Clock::system(),
        );
        assert_eq!(
            b.get("o@im.wechat")
                .await
                .expect("the upgrade test")
                .expect("the upgrade test")
                .context_token,
            "other"
        );
        // An accepted send is never sent again; a refused one keeps its ambiguity and time.
        assert!(
            begin_send(&a, "c-acc", 3000)
                .await
                .expect("the upgrade test")
                .accepted
        );
        let refused = begin_send(&a, "c-ref", 3000)
            .await
            .expect("the upgrade test");
        assert!(!refused.accepted && refused.ambiguous);
        assert_eq!(refused.first_refused_ms, Some(1500));
        let (last, _) = pacing(&a).await.expect("the upgrade test");
        assert!(
            last.is_some_and(|t| t > 2500),
            "begin_send stamped the records now"
        );
        let tables: i64 = store
            .call(|t| {
                t.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name IN ('wechat_peers', 'wechat_sends')",
                    [],
                    |r| r.get(0),
                )
            })
            .await
            .expect("the upgrade test");
        assert_eq!(tables, 0, "the old tables are gone");
    }
}
