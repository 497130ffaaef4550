//! What the QQ adapter keeps in the account's state: the gateway's Resume cursor (stored in the
//! commit that journals the event it covers, spec §1.4), how many replies each trigger has
//! spent (so `msg_seq` stays fresh across restarts, spec §4.1), and which `msg_id` + `msg_seq`
//! each outbox piece was first tried with (so a retry, after a crash too, repeats that pair and
//! QQ itself refuses a second delivery, spec §4.1 `40054005`).

use scv_qq::gateway::Cursor;
use serde::{Deserialize, Serialize};

use super::inbound::ReplyRef;
use crate::store::{AccountState, StateError, StateTxn, StoreError};

/// The state name of the journaled cursor.
const CURSOR: &str = "qq_cursor";
/// The prefix of a trigger's spent replies (`qq_used/<msg_id>`).
const USED: &str = "qq_used/";

/// The stored cursor, tagged with the bot it belongs to: a login as another bot starts afresh.
#[derive(Serialize, Deserialize)]
struct StoredCursor {
    bot: String,
    session_id: String,
    seq: u64,
}

/// The cursor to Resume from for `bot`, if one is stored for it.
pub(super) async fn load_cursor(
    state: &AccountState,
    bot: &str,
) -> Result<Option<Cursor>, StoreError> {
    let raw = state.get(CURSOR).await?;
    Ok(raw
        .and_then(|r| serde_json::from_str::<StoredCursor>(&r).ok())
        .filter(|c| c.bot == bot && !c.session_id.is_empty())
        .map(|c| Cursor {
            session_id: c.session_id,
            seq: c.seq,
        }))
}

/// Stores `cursor` inside `s`, the transaction that journals what it covers.
pub(super) fn save_cursor_in(
    s: &StateTxn<'_>,
    bot: &str,
    cursor: &Cursor,
) -> Result<(), StateError> {
    s.put_json(
        CURSOR,
        &StoredCursor {
            bot: bot.to_string(),
            session_id: cursor.session_id.clone(),
            seq: cursor.seq,
        },
    )
}

/// Replies spent on one trigger.
#[derive(Serialize, Deserialize, Default)]
struct Used {
    n: u32,
    /// When the trigger's window opened (kept so old records can be swept).
    at: u64,
}

/// Spends one reply of `trigger` if `allows(spent so far)` says so; returns the `msg_seq` to
/// send with (1, 2, 3…). Stored before the send, so every attempt, after a crash too, has a new
/// `msg_seq` (spec §4.1).
pub(super) fn spend_in(
    s: &StateTxn<'_>,
    trigger: &str,
    opened_at: u64,
    allows: impl Fn(u32) -> bool,
) -> Result<Option<u32>, StateError> {
    let name = format!("{USED}{trigger}");
    let mut used: Used = s.get_json(&name)?.unwrap_or_default();
    if !allows(used.n) {
        return Ok(None);
    }
    used.n += 1;
    used.at = opened_at;
    s.put_json(&name, &used)?;
    Ok(Some(used.n))
}

/// Forgets the spent replies and the attempts of triggers whose window opened before
/// `before_ms` (both records keep that time in `at`).
pub(super) fn sweep_in(s: &StateTxn<'_>, before_ms: u64) -> Result<(), StateError> {
    for prefix in [USED, ATTEMPT] {
        for (name, value) in s.scan(prefix)? {
            let opened: Opened = serde_json::from_str(&value).unwrap_or_default();
            if opened.at < before_ms {
                s.delete(&name)?;
            }
        }
    }
    Ok(())
}

/// The one field the swept records share.
#[derive(Deserialize, Default)]
struct Opened {
    #[serde(default)]
    at: u64,
}

/// The prefix of a piece's attempt (`qq_attempt/<outbox key>#<piece>`).
const ATTEMPT: &str = "qq_attempt/";

/// The trigger and `msg_seq` one outbox piece was first sent with (field names are stored: add,
/// never rename).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Attempt {
    /// The trigger's `msg_id`.
    pub m: String,
    /// The `msg_seq` spent for the piece.
    pub seq: u32,
    /// When the trigger's window opened (swept with the spent replies).
    pub at: u64,
}

/// The state name of piece `piece` of the outbox item keyed `key` (stable across restarts).
pub(super) fn attempt_name(key: &str, piece: usize) -> String {
    format!("{ATTEMPT}{key}#{piece}")
}

/// The piece's earlier attempt, if one was recorded.
pub(super) fn attempt_in(s: &StateTxn<'_>, name: &str) -> Result<Option<Attempt>, StateError> {
    s.get_json(name)
}

/// Records the piece's attempt, in the transaction that spends its `msg_seq`.
pub(super) fn record_attempt_in(
    s: &StateTxn<'_>,
    name: &str,
    attempt: &Attempt,
) -> Result<(), StateError> {
    s.put_json(name, attempt)
}

/// Forgets the piece's attempt: the platform refused its pair for good, the next try spends anew.
pub(super) async fn forget_attempt(state: &AccountState, name: &str) -> Result<(), StoreError> {
    let name = name.to_string();
    state.call(move |s| s.delete(&name)).await
}

/// The prefix of a chat's latest trigger that was not journaled (`qq_latest/<chat>`): a pairing
/// code never reaches the journal, yet the pairing notice must reply to it.
const LATEST: &str = "qq_latest/";

/// Records `trigger` as the chat's latest message outside the journal.
pub(super) async fn note_latest(
    state: &AccountState,
    chat: &str,
    trigger: &ReplyRef,
) -> Result<(), StoreError> {
    let (name, trigger) = (format!("{LATEST}{chat}"), trigger.clone());
    state.call(move |s| s.put_json(&name, &trigger)).await
}

/// The chat's latest message outside the journal, if any.
pub(super) fn latest_in(s: &StateTxn<'_>, chat: &str) -> Result<Option<ReplyRef>, StateError> {
    s.get_json(&format!("{LATEST}{chat}"))
}
