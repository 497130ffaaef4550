//! The inbound journal and the outbox in SQLite: what must survive a crash.

use rusqlite::{OptionalExtension, Transaction, params};

use super::body::Body;
use super::link::Sent;
use super::message::{Inbound, Outbound, OutboundKind, ReplyContext};
use crate::config::AccountKey;
use crate::ids::DeliveryState;
use crate::ids::{ChatId, PlatformMsgId, SenderId};
use crate::supervisor::unix_now;

/// How long journal rows are kept for deduplication.
pub const DEDUPE_WINDOW_SECS: u64 = 8 * 24 * 3600;

/// Where a journaled message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalState {
    /// Waits for an agent turn.
    New,
    /// A command or answer to handle at once.
    Fast,
    /// Finished.
    Done,
    /// Dropped by the policy.
    Dropped,
}

impl JournalState {
    fn as_str(self) -> &'static str {
        match self {
            JournalState::New => "new",
            JournalState::Fast => "fast",
            JournalState::Done => "done",
            JournalState::Dropped => "dropped",
        }
    }
}

/// Which fast-lane handler a `fast` message goes to; decided when it is journaled and stored
/// with it, so a restart hands it to the same one (an answer stays an answer even when its
/// question closed meanwhile, instead of reaching the agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastRoute {
    /// An answer to a pending question (the answer interceptor claimed it).
    Answer,
    /// A built-in command from the owner.
    Command,
    /// The owner's message in a mail chat.
    MailChat,
    /// A bare yes/no that an open question and an open mail-reply draft both wait for: the
    /// bridge asks which.
    Which,
}

impl FastRoute {
    fn as_str(self) -> &'static str {
        match self {
            FastRoute::Answer => "answer",
            FastRoute::Command => "command",
            FastRoute::MailChat => "mail_chat",
            FastRoute::Which => "which",
        }
    }

    /// The stored route; `None` for a row journaled before routes were stored (or unknown).
    fn parse(s: Option<&str>) -> Option<FastRoute> {
        match s? {
            "answer" => Some(FastRoute::Answer),
            "command" => Some(FastRoute::Command),
            "mail_chat" => Some(FastRoute::MailChat),
            "which" => Some(FastRoute::Which),
            _ => None,
        }
    }
}

/// One message to journal, with what the pipeline decided for it.
pub struct Entry {
    /// The message.
    pub inbound: Inbound,
    /// Its initial state.
    pub state: JournalState,
    /// Whether its agent turn may use tools.
    pub tools: bool,
    /// For a `fast` message: which handler it goes to.
    pub route: Option<FastRoute>,
    /// For a `dropped` message: why (the `messages_dropped{reason}` label), counted once it is
    /// journaled for the first time.
    pub dropped: Option<&'static str>,
}

/// Journals `entries`, skipping any already journaled; returns the indexes of the new ones.
pub fn insert(t: &Transaction<'_>, entries: &[Entry]) -> rusqlite::Result<Vec<usize>> {
    let now = unix_now() as i64;
    let mut ins = t.prepare_cached(
        "INSERT OR IGNORE INTO inbound_journal
         (account, msg_id, chat, sender, text, at_unix_ms, reply, state, tools, journaled_unix, fast_route, media)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    let mut chat = t.prepare_cached(
        "INSERT INTO chat_state (account, chat, reply, last_inbound_unix) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(account, chat) DO UPDATE SET reply = excluded.reply, last_inbound_unix = excluded.last_inbound_unix",
    )?;
    let mut fresh = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let m = &e.inbound;
        // Dropped messages keep only their id: their text is never stored.
        let text = if e.state == JournalState::Dropped {
            ""
        } else {
            m.text.as_str()
        };
        // Media references hold CDN keys: stored only for messages that will be worked on.
        let media = if e.state == JournalState::Dropped || m.media.is_empty() {
            None
        } else {
            serde_json::to_string(&m.media).ok()
        };
        let n = ins.execute(params![
            m.account.to_string(),
            m.msg_id.as_str(),
            m.chat.as_str(),
            m.sender.as_str(),
            text,
            m.at_unix_ms as i64,
            m.reply.0,
            e.state.as_str(),
            e.tools,
            now,
            e.route.map(FastRoute::as_str),
            media
        ])?;
        if n == 1 {
            fresh.push(i);
            if e.state != JournalState::Dropped {
                chat.execute(params![
                    m.account.to_string(),
                    m.chat.as_str(),
                    m.reply.0,
                    now
                ])?;
            }
        }
    }
    Ok(fresh)
}

/// A journaled message waiting for work.
pub struct Pending {
    /// The message.
    pub inbound: Inbound,
    /// Whether its turn may use tools.
    pub tools: bool,
    /// For a fast-lane message: the handler decided when it was journaled.
    pub route: Option<FastRoute>,
    /// When the bridge journaled it, in Unix seconds (how long the platform held it back).
    pub journaled_unix: u64,
    /// Its place in the journal: later messages have larger ones.
    pub rowid: i64,
}

fn row_to_pending(account: &AccountKey, r: &rusqlite::Row<'_>) -> rusqlite::Result<Pending> {
    Ok(Pending {
        inbound: Inbound {
            account: account.clone(),
            msg_id: PlatformMsgId(r.get(0)?),
            chat: ChatId(r.get(1)?),
            sender: SenderId(r.get(2)?),
            text: r.get(3)?,
            at_unix_ms: r.get::<_, i64>(4)? as u64,
            reply: ReplyContext(r.get(5)?),
            // A reference a later release cannot read is left out, not the message.
            media: r
                .get::<_, Option<String>>(8)?
                .and_then(|j| serde_json::from_str(&j).ok())
                .unwrap_or_default(),
        },
        tools: r.get(6)?,
        route: FastRoute::parse(r.get::<_, Option<String>>(7)?.as_deref()),
        journaled_unix: r.get::<_, i64>(9)?.max(0) as u64,
        rowid: r.get(10)?,
    })
}

/// The oldest `limit` messages of `chat` waiting for a turn, in the order they came.
pub fn new_in_chat(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
    limit: usize,
) -> rusqlite::Result<Vec<Pending>> {
    let mut st = t.prepare_cached(
        "SELECT msg_id, chat, sender, text, at_unix_ms, reply, tools, fast_route, media, journaled_unix, rowid FROM inbound_journal
         WHERE account = ?1 AND chat = ?2 AND state = 'new' ORDER BY rowid LIMIT ?3",
    )?;
    let rows = st.query_map(
        params![account.to_string(), chat.as_str(), limit as i64],
        |r| row_to_pending(account, r),
    )?;
    rows.collect()
}

/// The newest place in the journal (0 when empty): messages journaled after this read have
/// larger ones.
pub fn horizon(t: &Transaction<'_>) -> rusqlite::Result<i64> {
    t.prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM inbound_journal")?
        .query_row([], |r| r.get(0))
}

/// `/stop` (message `stop`) drops what waits in its chat for a turn, journaled before it,
/// except the running turn's messages (`running`: that turn ends them itself); returns how many.
pub fn drop_waiting(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
    stop: &PlatformMsgId,
    running: &[PlatformMsgId],
) -> rusqlite::Result<usize> {
    let mut st = t.prepare_cached(
        "SELECT msg_id FROM inbound_journal WHERE account = ?1 AND chat = ?2 AND state = 'new'
         AND rowid < (SELECT rowid FROM inbound_journal WHERE account = ?1 AND msg_id = ?3)",
    )?;
    let waiting = st
        .query_map(
            params![account.to_string(), chat.as_str(), stop.as_str()],
            |r| r.get::<_, String>(0),
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut dropped = 0;
    for id in waiting.into_iter().map(PlatformMsgId) {
        if running.contains(&id) {
            continue;
        }
        finish(t, account, &id)?;
        dropped += 1;
    }
    Ok(dropped)
}

/// Claims a fast-lane message for the attachment `run` (a per-attach tag); false when another has it.
///
/// A message claimed by an earlier attachment (a crash, a restart) can be claimed again.
pub fn claim_fast(
    t: &Transaction<'_>,
    account: &AccountKey,
    msg: &PlatformMsgId,
    run: &str,
) -> rusqlite::Result<bool> {
    let tag = format!("run:{run}");
    let n = t
        .prepare_cached(
            "UPDATE inbound_journal SET state = ?3 WHERE account = ?1 AND msg_id = ?2
             AND (state = 'fast' OR (state LIKE 'run:%' AND state != ?3))",
        )?
        .execute(params![account.to_string(), msg.as_str(), tag])?;
    Ok(n == 1)
}

/// Fast-lane messages not yet handled by the attachment `run` (left by a crash or not yet started).
pub fn fast_to_resume(
    t: &Transaction<'_>,
    account: &AccountKey,
    run: &str,
) -> rusqlite::Result<Vec<Pending>> {
    let mut st = t.prepare_cached(
        "SELECT msg_id, chat, sender, text, at_unix_ms, reply, tools, fast_route, media, journaled_unix, rowid FROM inbound_journal
         WHERE account = ?1 AND (state = 'fast' OR (state LIKE 'run:%' AND state != ?2)) ORDER BY rowid",
    )?;
    let rows = st.query_map(params![account.to_string(), format!("run:{run}")], |r| {
        row_to_pending(account, r)
    })?;
    rows.collect()
}

/// Marks a message finished and forgets its text.
pub fn finish(
    t: &Transaction<'_>,
    account: &AccountKey,
    msg: &PlatformMsgId,
) -> rusqlite::Result<()> {
    t.prepare_cached(
        "UPDATE inbound_journal SET state = ?3, text = '', media = NULL WHERE account = ?1 AND msg_id = ?2",
    )?
    .execute(params![
        account.to_string(),
        msg.as_str(),
        JournalState::Done.as_str()
    ])
    .map(drop)
}

/// Chats of the account that have open journal rows or pending outbox items.
pub fn open_chats(t: &Transaction<'_>, account: &AccountKey) -> rusqlite::Result<Vec<ChatId>> {
    let mut st = t.prepare_cached(
        "SELECT chat FROM inbound_journal WHERE account = ?1 AND (state IN ('new', 'fast') OR state LIKE 'run:%')
         UNION SELECT chat FROM outbox WHERE account = ?1 AND state = 'pending'",
    )?;
    let rows = st.query_map([account.to_string()], |r| Ok(ChatId(r.get(0)?)))?;
    rows.collect()
}

/// Forgets finished journal rows older than the dedupe window (and their media records).
pub fn purge_old(t: &Transaction<'_>) -> rusqlite::Result<usize> {
    let cutoff = unix_now().saturating_sub(DEDUPE_WINDOW_SECS) as i64;
    let n = t.execute(
        "DELETE FROM inbound_journal WHERE journaled_unix < ?1 AND state IN ('done', 'dropped')",
        [cutoff],
    )?;
    t.execute(
        "DELETE FROM media_fetched WHERE NOT EXISTS (SELECT 1 FROM inbound_journal j
         WHERE j.account = media_fetched.account AND j.msg_id = media_fetched.msg_id)",
        [],
    )?;
    Ok(n)
}

/// One piece to put in the outbox.
pub struct NewOutbound<'a> {
    /// The chat.
    pub chat: &'a ChatId,
    /// The text.
    pub text: &'a str,
    /// What it means beyond its text (stored in the `rich` column).
    pub body: &'a Body,
    /// Stable key: a second insert with the same key is ignored.
    pub key: String,
    /// The triggering message's reply context.
    pub reply: &'a ReplyContext,
    /// Reply or proactive.
    pub kind: OutboundKind,
}

/// Queues pieces for sending; returns how many were new (the rest were already queued or sent).
pub fn enqueue(
    t: &Transaction<'_>,
    account: &AccountKey,
    items: &[NewOutbound<'_>],
) -> rusqlite::Result<usize> {
    let now = unix_now() as i64;
    let mut st = t.prepare_cached(
        "INSERT OR IGNORE INTO outbox (account, chat, idem_key, text, rich, reply, kind, state, created_unix)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8)",
    )?;
    let mut n = 0;
    for o in items {
        n += st.execute(params![
            account.to_string(),
            o.chat.as_str(),
            o.key,
            o.text,
            o.body.to_stored(),
            o.reply.0,
            kind_str(o.kind),
            now
        ])?;
    }
    Ok(n)
}

fn kind_str(kind: OutboundKind) -> &'static str {
    match kind {
        OutboundKind::Reply => "reply",
        OutboundKind::Proactive => "proactive",
        OutboundKind::Update => "update",
    }
}

fn parse_kind(s: &str) -> OutboundKind {
    match s {
        "proactive" => OutboundKind::Proactive,
        "update" => OutboundKind::Update,
        _ => OutboundKind::Reply,
    }
}

/// One update to put in the outbox: replace the message sent under `target_key` with `body`.
pub struct NewUpdate<'a> {
    /// The chat of both messages.
    pub chat: &'a ChatId,
    /// The plain text, sent with `body` if the update becomes a new message.
    pub text: &'a str,
    /// The replacement content.
    pub body: &'a Body,
    /// Stable key: a second insert with the same key is ignored.
    pub key: String,
    /// The outbox key of the message to replace (a piece key, `<key>/0`).
    pub target_key: String,
}

/// Queues an update; returns whether it was new.
pub fn enqueue_update(
    t: &Transaction<'_>,
    account: &AccountKey,
    u: &NewUpdate<'_>,
) -> rusqlite::Result<bool> {
    let n = t
        .prepare_cached(
            "INSERT OR IGNORE INTO outbox
             (account, chat, idem_key, text, rich, reply, kind, state, created_unix, target_key)
             VALUES (?1, ?2, ?3, ?4, ?5, '', 'update', 'pending', ?6, ?7)",
        )?
        .execute(params![
            account.to_string(),
            u.chat.as_str(),
            u.key,
            u.text,
            u.body.to_stored(),
            unix_now() as i64,
            u.target_key
        ])?;
    Ok(n == 1)
}

/// Turns a pending update the platform refused into a new proactive message (same row, same
/// place in the chat's order), noting why.
pub fn update_as_new(t: &Transaction<'_>, id: i64, why: &str) -> rusqlite::Result<()> {
    t.prepare_cached(
        "UPDATE outbox SET kind = 'proactive', error = ?2 WHERE id = ?1 AND kind = 'update' AND state = 'pending'",
    )?
    .execute(params![id, why])
    .map(drop)
}

/// The oldest pending outbox item of a chat, with the chat's latest reply context.
pub fn next_outbound(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
) -> rusqlite::Result<Option<Outbound>> {
    // An update's target resolves now, not when it was queued: the message it replaces is
    // earlier in the same chat's order, so by now it has gone out (or failed for good).
    t.prepare_cached(
        "SELECT o.id, o.text, o.rich, o.idem_key, o.reply, o.kind, COALESCE(c.reply, ''),
                tgt.platform_msg_id
         FROM outbox o LEFT JOIN chat_state c ON c.account = o.account AND c.chat = o.chat
         LEFT JOIN outbox tgt ON o.target_key IS NOT NULL AND tgt.idem_key = o.target_key
              AND tgt.account = o.account AND tgt.state = 'sent'
         WHERE o.account = ?1 AND o.chat = ?2 AND o.state = 'pending' ORDER BY o.id LIMIT 1",
    )?
    .query_row(params![account.to_string(), chat.as_str()], |r| {
        let key: String = r.get(3)?;
        Ok(Outbound {
            id: r.get(0)?,
            account: account.clone(),
            chat: chat.clone(),
            text: r.get(1)?,
            body: Body::from_stored(r.get::<_, Option<String>>(2)?.as_deref()),
            finishes: crate::ids::OutboxKey::first_piece_of(&key).map(str::to_string),
            idempotency_key: key,
            reply: ReplyContext(r.get(4)?),
            kind: parse_kind(&r.get::<_, String>(5)?),
            latest_reply: ReplyContext(r.get(6)?),
            target: r.get::<_, Option<String>>(7)?.map(PlatformMsgId),
        })
    })
    .optional()
}

/// Pending outbox items of a chat.
pub fn pending_count(
    t: &Transaction<'_>,
    account: &AccountKey,
    chat: &ChatId,
) -> rusqlite::Result<u64> {
    t.prepare_cached(
        "SELECT count(*) FROM outbox WHERE account = ?1 AND chat = ?2 AND state = 'pending'",
    )?
    .query_row(params![account.to_string(), chat.as_str()], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n as u64)
}

/// Marks an item sent (its text is forgotten) with what the platform said about it.
pub fn mark_sent(t: &Transaction<'_>, id: i64, sent: &Sent) -> rusqlite::Result<()> {
    t.prepare_cached(
        "UPDATE outbox SET state = 'sent', text = '', rich = NULL, sent_unix = ?2,
         platform_msg_id = ?3, platform_chat = ?4, wait_why = NULL WHERE id = ?1",
    )?
    .execute(params![
        id,
        unix_now() as i64,
        sent.msg_id.as_ref().map(PlatformMsgId::as_str),
        sent.chat.as_ref().map(ChatId::as_str)
    ])
    .map(drop)
}

/// Marks an item failed for good (its text is forgotten); `sent_unix` says when it settled.
pub fn mark_failed(t: &Transaction<'_>, id: i64, error: &str) -> rusqlite::Result<()> {
    t.prepare_cached(
        "UPDATE outbox SET state = 'failed', text = '', rich = NULL, error = ?2, sent_unix = ?3,
         wait_why = NULL WHERE id = ?1",
    )?
    .execute(params![id, error, unix_now() as i64])
    .map(drop)
}

/// Where an outbox item stands, and what the platform said about it once sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Pending, sent or failed.
    pub state: DeliveryState,
    /// The platform's message id and chat, when sent and named.
    pub sent: Sent,
    /// Why it waits, while pending and held back (`conversation/deliveries.rs`).
    pub wait_why: Option<crate::protocol::WaitWhy>,
    /// Why it failed, when failed.
    pub error: Option<String>,
    /// The route a copy went to, when moved (`<channel>:<account>`).
    pub moved_to: Option<String>,
}

/// Where the outbox item with `key` stands.
pub fn delivery(t: &Transaction<'_>, key: &str) -> rusqlite::Result<Option<Delivery>> {
    t.prepare_cached(
        "SELECT state, platform_msg_id, platform_chat, wait_why, error, moved_to FROM outbox WHERE idem_key = ?1",
    )?
    .query_row([key], |r| {
        let state: String = r.get(0)?;
        Ok(Delivery {
            // Only this module writes states; an unknown one (a newer release's) is not done.
            state: DeliveryState::parse(&state).unwrap_or(DeliveryState::Pending),
            sent: Sent {
                msg_id: r.get::<_, Option<String>>(1)?.map(PlatformMsgId),
                chat: r.get::<_, Option<String>>(2)?.map(ChatId),
            },
            wait_why: r
                .get::<_, Option<String>>(3)?
                .map(|w| crate::protocol::WaitWhy::parse(&w)),
            error: r.get(4)?,
            moved_to: r.get(5)?,
        })
    })
    .optional()
}
