//! The `owner_sends` table (schema `owner`): one row per `send`, what the scheduler and the
//! `send_*` requests read and write. Only this file spells its SQL.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::conversation::body::MediaOut;
use crate::supervisor::unix_now;

/// Where a row stands before the outbox takes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowState {
    /// Not yet handed to the outbox (due or not).
    Scheduled,
    /// In the outbox under `OutboxKey::owner_send(id)`.
    Queued,
    /// Cancelled before it was due.
    Cancelled,
    /// No route could take it (`reason`).
    Failed,
}

impl RowState {
    fn as_str(self) -> &'static str {
        match self {
            RowState::Scheduled => "scheduled",
            RowState::Queued => "queued",
            RowState::Cancelled => "cancelled",
            RowState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> RowState {
        match s {
            "queued" => RowState::Queued,
            "cancelled" => RowState::Cancelled,
            "failed" => RowState::Failed,
            // A newer release's state: left alone as not yet handed over.
            _ => RowState::Scheduled,
        }
    }
}

/// One stored send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its number (`s-<id>` for people).
    pub id: i64,
    /// What `to` named (`<channel>:<account>[:<chat>]`), or none: the `notify` account.
    pub target: Option<String>,
    /// The text (kept until it is queued, then cleared; may be empty when there are files).
    pub text: String,
    /// The files, checked when the send was asked (kept until it is queued, then cleared).
    pub files: Vec<MediaOut>,
    /// When it is due (UTC, Unix ms).
    pub due_ms: u64,
    /// Where it stands.
    pub state: RowState,
    /// The route chosen: `<channel>:<account>` and the chat, once chosen.
    pub route: Option<(String, String)>,
    /// Why it failed.
    pub reason: Option<String>,
}

/// Stores a new send; returns its id.
pub fn insert(
    t: &Transaction<'_>,
    target: Option<&str>,
    text: &str,
    files: &[MediaOut],
    due_ms: u64,
) -> rusqlite::Result<i64> {
    let files = match files.is_empty() {
        true => None,
        false => Some(
            serde_json::to_string(files)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?,
        ),
    };
    t.prepare_cached(
        "INSERT INTO owner_sends (target, text, due_unix_ms, state, created_unix, files)
         VALUES (?1, ?2, ?3, 'scheduled', ?4, ?5)",
    )?
    .execute(params![
        target,
        text,
        due_ms as i64,
        unix_now() as i64,
        files
    ])?;
    Ok(t.last_insert_rowid())
}

const COLUMNS: &str = "id, target, text, due_unix_ms, state, account, chat, reason, files";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let (account, chat): (Option<String>, Option<String>) = (r.get(5)?, r.get(6)?);
    Ok(Row {
        id: r.get(0)?,
        target: r.get(1)?,
        text: r.get(2)?,
        due_ms: r.get::<_, i64>(3)?.max(0) as u64,
        state: RowState::parse(&r.get::<_, String>(4)?),
        route: account.zip(chat),
        reason: r.get(7)?,
        files: match r.get::<_, Option<String>>(8)? {
            None => Vec::new(),
            Some(j) => serde_json::from_str(&j).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    8,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })?,
        },
    })
}

/// One send by id.
pub fn get(t: &Transaction<'_>, id: i64) -> rusqlite::Result<Option<Row>> {
    t.prepare_cached(&format!("SELECT {COLUMNS} FROM owner_sends WHERE id = ?1"))?
        .query_row([id], row)
        .optional()
}

/// Sends due by `now_ms` and not yet handed over, oldest first.
pub fn due(t: &Transaction<'_>, now_ms: u64) -> rusqlite::Result<Vec<Row>> {
    t.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM owner_sends WHERE state = 'scheduled' AND due_unix_ms <= ?1
         ORDER BY due_unix_ms, id LIMIT 64"
    ))?
    .query_map([now_ms as i64], row)?
    .collect()
}

/// Sends not yet handed over, soonest first (at most 100: what `list_scheduled` shows).
pub fn scheduled(t: &Transaction<'_>) -> rusqlite::Result<Vec<Row>> {
    t.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM owner_sends WHERE state = 'scheduled'
         ORDER BY due_unix_ms, id LIMIT 100"
    ))?
    .query_map([], row)?
    .collect()
}

/// When the next send not yet handed over is due.
pub fn next_due(t: &Transaction<'_>) -> rusqlite::Result<Option<u64>> {
    t.prepare_cached("SELECT min(due_unix_ms) FROM owner_sends WHERE state = 'scheduled'")?
        .query_row([], |r| r.get::<_, Option<i64>>(0))
        .map(|v| v.map(|v| v.max(0) as u64))
}

/// Records the route chosen, before the outbox is given the message: a crash after this
/// queues it again on the same route under the same key, which the outbox ignores.
pub fn set_route(t: &Transaction<'_>, id: i64, account: &str, chat: &str) -> rusqlite::Result<()> {
    t.prepare_cached("UPDATE owner_sends SET account = ?2, chat = ?3 WHERE id = ?1")?
        .execute(params![id, account, chat])
        .map(drop)
}

/// Moves a scheduled send on (queued, failed with a reason, or cancelled); the text is
/// forgotten once it is out of this table's hands. Returns whether it was still scheduled.
pub fn settle(
    t: &Transaction<'_>,
    id: i64,
    state: RowState,
    reason: Option<&str>,
) -> rusqlite::Result<bool> {
    let n = t
        .prepare_cached(
            "UPDATE owner_sends SET state = ?2, reason = ?3, text = '', files = NULL
             WHERE id = ?1 AND state = 'scheduled'",
        )?
        .execute(params![id, state.as_str(), reason])?;
    Ok(n == 1)
}
