//! Moving a waiting message to the owner's next route (`owner/mover.rs` decides when): in one
//! transaction its pending pieces are marked `moved` and copied, with their text and body, to
//! the next route's chat under `OutboxKey::moved`. A crash leaves either both or neither, and
//! the copy's key makes a repeat insert nothing, so the owner gets it once.

use rusqlite::{Transaction, params};

use crate::config::AccountKey;
use crate::ids::{ChatId, OutboxKey};
use crate::protocol::WaitWhy;
use crate::supervisor::unix_now;

/// A message whose first piece is pending on one of the routes asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingMessage {
    /// `<channel>:<account>`.
    pub account: String,
    /// The chat.
    pub chat: ChatId,
    /// The key it was queued under (its pieces are `<key>/<i>`).
    pub key: String,
    /// Why its chat waits, when its sender said.
    pub why: Option<WaitWhy>,
}

/// The proactive messages whose first piece is pending on `accounts`.
pub fn pending_messages(
    t: &Transaction<'_>,
    accounts: &[String],
) -> rusqlite::Result<Vec<PendingMessage>> {
    let mut st = t.prepare_cached(
        "SELECT chat, idem_key, wait_why FROM outbox
         WHERE account = ?1 AND kind = 'proactive' AND state = 'pending' ORDER BY id",
    )?;
    let mut out = Vec::new();
    for account in accounts {
        let mut rows = st.query([account])?;
        while let Some(r) = rows.next()? {
            let (chat, piece, why): (String, String, Option<String>) =
                (r.get(0)?, r.get(1)?, r.get(2)?);
            if let Some(key) = OutboxKey::first_piece_of(&piece) {
                out.push(PendingMessage {
                    account: account.clone(),
                    chat: ChatId::new(chat),
                    key: key.to_string(),
                    why: why.as_deref().map(WaitWhy::parse),
                });
            }
        }
    }
    Ok(out)
}

/// Marks the pending pieces of `key` on `from` moved and queues copies on `to`'s `chat`;
/// returns the copy's key, or `None` when nothing of it was pending any more (sent meanwhile,
/// or moved by an earlier attempt).
pub fn move_message(
    t: &Transaction<'_>,
    from: &str,
    key: &str,
    to: &AccountKey,
    chat: &ChatId,
) -> rusqlite::Result<Option<String>> {
    let (lo, hi) = OutboxKey::pieces_range(key);
    let pieces: Vec<(i64, String, String, Option<String>)> = t
        .prepare_cached(
            "SELECT id, idem_key, text, rich FROM outbox WHERE account = ?1 AND idem_key >= ?2
             AND idem_key < ?3 AND state = 'pending' AND kind = 'proactive' ORDER BY id",
        )?
        .query_map(params![from, lo, hi], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    if pieces.is_empty() {
        return Ok(None);
    }
    let copy = OutboxKey::moved(key, to);
    let now = unix_now() as i64;
    for (id, piece, text, rich) in pieces {
        // Proactive pieces are plain `<key>/<i>` (only answers stream).
        let i: usize = piece
            .strip_prefix(lo.as_str())
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        t.prepare_cached(
            "INSERT OR IGNORE INTO outbox (account, chat, idem_key, text, rich, reply, kind, state, created_unix)
             VALUES (?1, ?2, ?3, ?4, ?5, '', 'proactive', 'pending', ?6)",
        )?
        .execute(params![
            to.to_string(),
            chat.as_str(),
            String::from(OutboxKey::piece(copy.as_str(), i)),
            text,
            rich,
            now
        ])?;
        t.prepare_cached(
            "UPDATE outbox SET state = 'moved', text = '', rich = NULL, wait_why = NULL,
             sent_unix = ?2, moved_to = ?3 WHERE id = ?1",
        )?
        .execute(params![id, now, to.to_string()])?;
    }
    Ok(Some(copy.as_str().to_string()))
}
