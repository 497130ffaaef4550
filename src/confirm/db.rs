//! The questions in SQLite: what must survive a restart (state, code, deadline, message key and
//! the platform's ids of the message once sent).

use crate::ids::{OutboxKey, QuestionId};
use rusqlite::{OptionalExtension, Transaction, params};

use crate::protocol::ConfirmState;

/// One stored question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The row number; the wire id is `q-<seq>`.
    pub seq: i64,
    /// `<channel>:<account>`, or "" when it had nowhere to go.
    pub account: String,
    /// The chat asked.
    pub chat: String,
    /// The short code shown with it.
    pub code: String,
    /// The question.
    pub question: String,
    /// Where it stands.
    pub state: ConfirmState,
    /// Why it failed, when it did.
    pub reason: Option<String>,
    /// When it was asked.
    pub created_ms: u64,
    /// When no answer counts as no.
    pub deadline_unix: u64,
    /// The outbox key of the question message.
    pub message_key: String,
    /// The platform message id of the answer (text answers), to recognise a replay.
    pub answer_msg: Option<String>,
    /// When it closed.
    pub closed_ms: Option<u64>,
    /// The platform's id of the question message, once sent (Feishu `om_…`).
    pub platform_msg: Option<String>,
    /// The chat the question landed in, when the platform named one other than `chat` (Feishu:
    /// asked by the owner's open_id, it lands in their `oc_…` p2p chat).
    pub platform_chat: Option<String>,
    /// The question offers "always" beside yes and no (an agent's tool question).
    pub offers_always: bool,
    /// The owner answered "always" (only ever with `yes`, on a question that offered it).
    pub always: bool,
}

impl Row {
    /// Whether a message in `chat` is in this question's chat.
    pub fn in_chat(&self, chat: &str) -> bool {
        self.chat == chat || self.platform_chat.as_deref() == Some(chat)
    }
}

/// The wire spelling of a state, as stored.
pub fn state_str(s: ConfirmState) -> &'static str {
    crate::confirm::text::answer_word(s)
}

fn parse_state(s: &str) -> ConfirmState {
    match s {
        "pending" => ConfirmState::Pending,
        "yes" => ConfirmState::Yes,
        "no" => ConfirmState::No,
        "expired" => ConfirmState::Expired,
        "withdrawn" => ConfirmState::Withdrawn,
        "failed" => ConfirmState::Failed,
        _ => ConfirmState::Unknown,
    }
}

const COLUMNS: &str = "seq, account, chat, code, question, state, reason, created_unix_ms, \
     deadline_unix, message_key, answer_msg, closed_unix_ms, platform_msg_id, platform_chat, \
     offers_always, always";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        seq: r.get(0)?,
        account: r.get(1)?,
        chat: r.get(2)?,
        code: r.get(3)?,
        question: r.get(4)?,
        state: parse_state(&r.get::<_, String>(5)?),
        reason: r.get(6)?,
        created_ms: r.get::<_, i64>(7)? as u64,
        deadline_unix: r.get::<_, i64>(8)? as u64,
        message_key: r.get(9)?,
        answer_msg: r.get(10)?,
        closed_ms: r.get::<_, Option<i64>>(11)?.map(|v| v as u64),
        platform_msg: r.get(12)?,
        platform_chat: r.get(13)?,
        offers_always: r.get::<_, i64>(14)? != 0,
        always: r.get::<_, i64>(15)? != 0,
    })
}

/// Stores a new question; its `seq` and `message_key` are filled in from the new row.
pub fn insert(t: &Transaction<'_>, q: &Row) -> rusqlite::Result<Row> {
    t.prepare_cached(
        "INSERT INTO confirm_questions
         (account, chat, code, question, state, reason, created_unix_ms, deadline_unix, message_key, closed_unix_ms, offers_always)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, '', ?9, ?10)",
    )?
    .execute(params![
        q.account,
        q.chat,
        q.code,
        q.question,
        state_str(q.state),
        q.reason,
        q.created_ms as i64,
        q.deadline_unix as i64,
        q.closed_ms.map(|v| v as i64),
        i64::from(q.offers_always)
    ])?;
    let seq = t.last_insert_rowid();
    let key = OutboxKey::question(QuestionId(seq)).to_string();
    t.prepare_cached("UPDATE confirm_questions SET message_key = ?2 WHERE seq = ?1")?
        .execute(params![seq, key])?;
    Ok(Row {
        seq,
        message_key: key,
        ..q.clone()
    })
}

/// What closing a question changes.
pub struct Close<'a> {
    /// The question.
    pub seq: i64,
    /// Its final state.
    pub state: ConfirmState,
    /// Why, for `failed`.
    pub reason: Option<&'a str>,
    /// Who answered (a platform user id).
    pub by: Option<&'a str>,
    /// The answering message's id (text answers).
    pub msg: Option<&'a str>,
    /// When.
    pub at_ms: u64,
    /// The answer was "always" (kept only with a yes on a question that offered it).
    pub always: bool,
}

/// Closes a pending question; false when it was no longer pending (someone else closed it first).
pub fn close(t: &Transaction<'_>, c: &Close<'_>) -> rusqlite::Result<bool> {
    let n = t
        .prepare_cached(
            "UPDATE confirm_questions SET state = ?2, reason = ?3, answered_by = ?4, answer_msg = ?5,
             closed_unix_ms = ?6, always = (?7 AND ?2 = 'yes' AND offers_always)
             WHERE seq = ?1 AND state = 'pending'",
        )?
        .execute(params![
            c.seq,
            state_str(c.state),
            c.reason,
            c.by,
            c.msg,
            c.at_ms as i64,
            c.always
        ])?;
    Ok(n == 1)
}

/// Records what the platform said when the question message went out.
pub fn set_sent(
    t: &Transaction<'_>,
    seq: i64,
    msg: Option<&str>,
    chat: Option<&str>,
) -> rusqlite::Result<()> {
    t.prepare_cached(
        "UPDATE confirm_questions SET platform_msg_id = ?2, platform_chat = ?3 WHERE seq = ?1",
    )?
    .execute(params![seq, msg, chat])
    .map(drop)
}

/// Points a pending question at the route its message moved to (`owner/mover.rs`): answers
/// count there from now on, and no longer in the chat it left. The platform's ids of the old
/// message are forgotten (it was never sent).
pub fn move_to(
    t: &Transaction<'_>,
    seq: i64,
    account: &str,
    chat: &str,
    message_key: &str,
) -> rusqlite::Result<bool> {
    let n = t
        .prepare_cached(
            "UPDATE confirm_questions SET account = ?2, chat = ?3, message_key = ?4,
             platform_msg_id = NULL, platform_chat = NULL WHERE seq = ?1 AND state = 'pending'",
        )?
        .execute(params![seq, account, chat, message_key])?;
    Ok(n == 1)
}

/// One question by its number.
pub fn get(t: &Transaction<'_>, seq: i64) -> rusqlite::Result<Option<Row>> {
    t.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM confirm_questions WHERE seq = ?1"
    ))?
    .query_row([seq], row)
    .optional()
}

/// Pending questions, and those closed at or after `closed_since_ms` (their codes are still in use).
pub fn open(t: &Transaction<'_>, closed_since_ms: u64) -> rusqlite::Result<Vec<Row>> {
    let mut st = t.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM confirm_questions
         WHERE state = 'pending' OR closed_unix_ms >= ?1 ORDER BY seq"
    ))?;
    let rows = st.query_map([closed_since_ms as i64], row)?;
    rows.collect()
}

/// Forgets questions closed before `before_ms` (nobody polls them any more).
pub fn purge(t: &Transaction<'_>, before_ms: u64) -> rusqlite::Result<usize> {
    t.execute(
        "DELETE FROM confirm_questions WHERE state != 'pending' AND closed_unix_ms < ?1",
        [before_ms as i64],
    )
}
