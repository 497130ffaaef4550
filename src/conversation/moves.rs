//! Moving a waiting message to the owner's next route (`owner/mover.rs` decides when): in one
//! transaction its pending pieces are marked `moved` and copied, with their text and body, to
//! the next route's chat under `OutboxKey::moved`, and whatever follows the message (the
//! question it asks: [`AlsoMove`]) changes in that same transaction. A crash leaves either all
//! of it or none, and the copy's key makes a repeat insert nothing, so the owner gets it once
//! and answers it where it is.

use rusqlite::{OptionalExtension, Transaction, params};

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

/// What else changes with a move, inside its transaction, given the copy's key; true when it
/// changed something. Made by whoever owns what follows the message (the confirm service for
/// the question a message asks: `ConfirmService::follow`); its error undoes the whole move.
pub type AlsoMove = Box<dyn FnOnce(&Transaction<'_>, &str) -> rusqlite::Result<bool> + Send>;

/// A move that was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The copy's key on the next route.
    pub copy: String,
    /// Whether the [`AlsoMove`] changed something.
    pub also: bool,
}

/// [`move_message`], and `also` with the copy's key when it moved, in the caller's transaction.
pub fn move_with(
    t: &Transaction<'_>,
    from: &str,
    key: &str,
    to: &AccountKey,
    chat: &ChatId,
    also: Option<AlsoMove>,
) -> rusqlite::Result<Option<Moved>> {
    let Some(copy) = move_message(t, from, key, to, chat)? else {
        return Ok(None);
    };
    let also = match also {
        Some(f) => f(t, &copy)?,
        None => false,
    };
    Ok(Some(Moved { copy, also }))
}

/// Where the message queued under `key` went when it moved: the copy's key and its
/// `(account, chat)`; `None` when it did not move. Read at start, to follow a question whose
/// message moved in a store an older build left (it moved questions in a second transaction).
pub fn moved_to(
    t: &Transaction<'_>,
    key: &str,
) -> rusqlite::Result<Option<(String, String, ChatId)>> {
    let to: Option<Option<String>> = t
        .prepare_cached("SELECT moved_to FROM outbox WHERE idem_key = ?1 AND state = 'moved'")?
        .query_row([String::from(OutboxKey::piece(key, 0))], |r| r.get(0))
        .optional()?;
    let Some(to) = to.flatten().and_then(|to| AccountKey::parse(&to)) else {
        return Ok(None);
    };
    let copy = OutboxKey::moved(key, &to).as_str().to_string();
    Ok(where_queued(t, &copy)?.map(|(account, chat)| (copy, account, chat)))
}

/// Where the copy queued under `copy` waited before it moved (`OutboxKey::moved`): the
/// `(account, chat)` of the message it copies; `None` for a key that is no copy.
pub fn moved_from(t: &Transaction<'_>, copy: &str) -> rusqlite::Result<Option<(String, ChatId)>> {
    match OutboxKey::moved_original(copy) {
        Some(key) => where_queued(t, key),
        None => Ok(None),
    }
}

/// The `(account, chat)` of the message queued under `key` (its first piece).
fn where_queued(t: &Transaction<'_>, key: &str) -> rusqlite::Result<Option<(String, ChatId)>> {
    t.prepare_cached("SELECT account, chat FROM outbox WHERE idem_key = ?1")?
        .query_row([String::from(OutboxKey::piece(key, 0))], |r| {
            Ok((r.get(0)?, ChatId::new(r.get::<_, String>(1)?)))
        })
        .optional()
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
