//! The mail tables: every function runs inside one `Store::call` transaction.

use rusqlite::{OptionalExtension, Transaction, params};

use super::Outcome;

/// A mailbox position: which mailbox, which UIDVALIDITY.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Place {
    /// The mailbox name.
    pub mailbox: String,
    /// Its UIDVALIDITY.
    pub validity: u32,
}

/// The stored cursor of `mailbox`: (UIDVALIDITY, highest UID claimed or baselined).
pub fn cursor(
    t: &Transaction<'_>,
    account: &str,
    mailbox: &str,
) -> rusqlite::Result<Option<(u32, u32)>> {
    t.query_row(
        "SELECT uid_validity, last_uid FROM mail_cursor WHERE account = ?1 AND mailbox = ?2",
        params![account, mailbox],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// Sets the cursor (a baseline or re-baseline); open claims of other UIDVALIDITYs become `void`.
pub fn baseline(
    t: &Transaction<'_>,
    account: &str,
    place: &Place,
    last_uid: u32,
    now: i64,
) -> rusqlite::Result<()> {
    t.execute(
        "INSERT INTO mail_cursor (account, mailbox, uid_validity, last_uid) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(account, mailbox) DO UPDATE SET uid_validity = excluded.uid_validity, last_uid = excluded.last_uid",
        params![account, place.mailbox, place.validity, last_uid],
    )?;
    t.execute(
        "UPDATE mail_claims SET state = 'decided', outcome = 'void', decided_unix = ?4
         WHERE account = ?1 AND mailbox = ?2 AND uid_validity <> ?3 AND state = 'claimed'",
        params![account, place.mailbox, place.validity, now],
    )?;
    Ok(())
}

/// Claims `uids` and moves the cursor past them, in one transaction. Returns how many were new.
pub fn claim(
    t: &Transaction<'_>,
    account: &str,
    place: &Place,
    uids: &[u32],
    now: i64,
) -> rusqlite::Result<usize> {
    let mut st = t.prepare_cached(
        "INSERT OR IGNORE INTO mail_claims (account, mailbox, uid_validity, uid, state, claimed_unix)
         VALUES (?1, ?2, ?3, ?4, 'claimed', ?5)",
    )?;
    let mut n = 0;
    for uid in uids {
        n += st.execute(params![account, place.mailbox, place.validity, uid, now])?;
    }
    if let Some(max) = uids.iter().max() {
        t.execute(
            "UPDATE mail_cursor SET last_uid = MAX(last_uid, ?4)
             WHERE account = ?1 AND mailbox = ?2 AND uid_validity = ?3",
            params![account, place.mailbox, place.validity, max],
        )?;
    }
    Ok(n)
}

/// UIDs claimed and not yet decided in `place`, ascending.
pub fn open_claims(
    t: &Transaction<'_>,
    account: &str,
    place: &Place,
) -> rusqlite::Result<Vec<u32>> {
    let mut st = t.prepare_cached(
        "SELECT uid FROM mail_claims WHERE account = ?1 AND mailbox = ?2 AND uid_validity = ?3
         AND state = 'claimed' ORDER BY uid",
    )?;
    let rows = st.query_map(params![account, place.mailbox, place.validity], |r| {
        r.get(0)
    })?;
    rows.collect()
}

/// One decision to store.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The message.
    pub uid: u32,
    /// What was decided.
    pub outcome: Outcome,
    /// Tokens the model spent on it.
    pub tokens: u64,
    /// The report item's line (for `Outcome::Report`).
    pub line: Option<String>,
}

/// Stores decisions; a UID already decided is left alone (decided exactly once), though the
/// tokens spent are still counted. Returns how many were newly decided.
pub fn decide(
    t: &Transaction<'_>,
    account: &str,
    place: &Place,
    day: &str,
    now: i64,
    decisions: &[Decided],
) -> rusqlite::Result<usize> {
    let mut upd = t.prepare_cached(
        "UPDATE mail_claims SET state = 'decided', outcome = ?5, decided_unix = ?6
         WHERE account = ?1 AND mailbox = ?2 AND uid_validity = ?3 AND uid = ?4 AND state = 'claimed'",
    )?;
    let mut rep = t.prepare_cached(
        "INSERT INTO mail_reports (account, mailbox, uid_validity, uid, urgent, line, created_unix)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let (mut seen, mut triaged, mut reported, mut tokens, mut untriaged) =
        (0i64, 0i64, 0i64, 0i64, 0i64);
    for d in decisions {
        tokens += d.tokens as i64;
        let changed = upd.execute(params![
            account,
            place.mailbox,
            place.validity,
            d.uid,
            d.outcome.as_str(),
            now
        ])?;
        if changed == 0 {
            continue;
        }
        if matches!(d.outcome, Outcome::Gone) {
            continue;
        }
        seen += 1;
        triaged += i64::from(d.outcome.triaged());
        if matches!(d.outcome, Outcome::Budget) {
            untriaged += 1;
        }
        if let Outcome::Report { urgency, .. } = &d.outcome {
            reported += 1;
            let urgent = *urgency == super::Urgency::Urgent;
            let line = d.line.clone().unwrap_or_default();
            rep.execute(params![
                account,
                place.mailbox,
                place.validity,
                d.uid,
                urgent,
                line,
                now
            ])?;
        }
    }
    t.execute(
        "INSERT INTO mail_counters (account, local_day, seen, triaged, reported, tokens, untriaged)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(account, local_day) DO UPDATE SET seen = seen + ?3, triaged = triaged + ?4,
           reported = reported + ?5, tokens = tokens + ?6, untriaged = untriaged + ?7",
        params![account, day, seen, triaged, reported, tokens, untriaged],
    )?;
    Ok(seen as usize)
}

/// The day's counters: (seen, triaged, reported, tokens, untriaged, untriaged already told).
pub fn day_counters(t: &Transaction<'_>, account: &str, day: &str) -> rusqlite::Result<[u64; 6]> {
    let row = t
        .query_row(
            "SELECT seen, triaged, reported, tokens, untriaged, untriaged_told FROM mail_counters
             WHERE account = ?1 AND local_day = ?2",
            params![account, day],
            |r| {
                let mut a = [0u64; 6];
                for (i, v) in a.iter_mut().enumerate() {
                    *v = r.get::<_, i64>(i)?.max(0) as u64;
                }
                Ok(a)
            },
        )
        .optional()?;
    Ok(row.unwrap_or_default())
}

/// Counts for health: (claimed, queued items, digests sent since `since_unix`).
pub fn live_counts(
    t: &Transaction<'_>,
    account: &str,
    since_unix: i64,
) -> rusqlite::Result<(u64, u64, u64)> {
    let claimed: i64 = t.query_row(
        "SELECT COUNT(*) FROM mail_claims WHERE account = ?1 AND state = 'claimed'",
        [account],
        |r| r.get(0),
    )?;
    let queued: i64 = t.query_row(
        "SELECT COUNT(*) FROM mail_reports r LEFT JOIN mail_digests d ON d.id = r.digest_id
         WHERE r.account = ?1 AND (r.digest_id IS NULL OR d.state <> 'delivered')",
        [account],
        |r| r.get(0),
    )?;
    let sent: i64 = t.query_row(
        "SELECT COUNT(*) FROM mail_digests WHERE account = ?1 AND state <> 'built' AND created_unix > ?2",
        params![account, since_unix],
        |r| r.get(0),
    )?;
    Ok((
        claimed.max(0) as u64,
        queued.max(0) as u64,
        sent.max(0) as u64,
    ))
}

/// Report items waiting for a digest: (any urgent, oldest created_unix, count).
pub fn waiting(t: &Transaction<'_>, account: &str) -> rusqlite::Result<(bool, Option<i64>, u64)> {
    t.query_row(
        "SELECT COALESCE(MAX(urgent), 0), MIN(created_unix), COUNT(*) FROM mail_reports
         WHERE account = ?1 AND digest_id IS NULL",
        [account],
        |r| {
            Ok((
                r.get::<_, i64>(0)? != 0,
                r.get(1)?,
                r.get::<_, i64>(2)?.max(0) as u64,
            ))
        },
    )
}

/// Digests built on `day` (sent or about to be): what the daily cap counts.
pub fn digests_on(t: &Transaction<'_>, account: &str, day: &str) -> rusqlite::Result<u32> {
    t.query_row(
        "SELECT COUNT(*) FROM mail_digests WHERE account = ?1 AND local_day = ?2",
        params![account, day],
        |r| r.get(0),
    )
}

/// A digest stored but not yet handed to the outbox.
#[derive(Debug, Clone)]
pub struct Unsent {
    /// Its id (part of the outbox key).
    pub id: i64,
    /// Its text.
    pub text: String,
    /// The chat it goes to.
    pub chat: String,
    /// The account (`<channel>:<account>`) that sends it.
    pub report_to: String,
}

/// Builds a digest from every waiting item (numbered in order) and stores it as `built`.
/// `render` makes the text from the lines and the untold budget count.
pub fn build_digest(
    t: &Transaction<'_>,
    account: &str,
    day: &str,
    now: i64,
    chat: &str,
    report_to: &str,
    render: impl Fn(&[String], u64) -> String,
) -> rusqlite::Result<Option<Unsent>> {
    let items: Vec<(i64, String)> = {
        let mut st = t.prepare_cached(
            "SELECT id, COALESCE(line, '') FROM mail_reports WHERE account = ?1 AND digest_id IS NULL ORDER BY id",
        )?;
        let rows = st.query_map([account], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let c = day_counters(t, account, day)?;
    let untold = c[4].saturating_sub(c[5]);
    if items.is_empty() && untold == 0 {
        return Ok(None);
    }
    let lines: Vec<String> = items.iter().map(|(_, l)| l.clone()).collect();
    let text = render(&lines, if untold > 0 { c[4] } else { 0 });
    t.execute(
        "INSERT INTO mail_digests (account, text, state, local_day, created_unix, chat, report_to)
         VALUES (?1, ?2, 'built', ?3, ?4, ?5, ?6)",
        params![account, text, day, now, chat, report_to],
    )?;
    let id = t.last_insert_rowid();
    let mut st =
        t.prepare_cached("UPDATE mail_reports SET digest_id = ?1, number = ?2 WHERE id = ?3")?;
    for (n, (item, _)) in items.iter().enumerate() {
        st.execute(params![id, (n + 1) as i64, item])?;
    }
    t.execute(
        "UPDATE mail_counters SET untriaged_told = untriaged WHERE account = ?1 AND local_day = ?2",
        params![account, day],
    )?;
    Ok(Some(Unsent {
        id,
        text,
        chat: chat.to_string(),
        report_to: report_to.to_string(),
    }))
}

/// Digests built but not yet in the outbox (left by a crash or a failed enqueue).
pub fn unsent(t: &Transaction<'_>, account: &str) -> rusqlite::Result<Vec<Unsent>> {
    let mut st = t.prepare_cached(
        "SELECT id, COALESCE(text, ''), chat, report_to FROM mail_digests
         WHERE account = ?1 AND state = 'built' ORDER BY id",
    )?;
    let rows = st.query_map([account], |r| {
        Ok(Unsent {
            id: r.get(0)?,
            text: r.get(1)?,
            chat: r.get(2)?,
            report_to: r.get(3)?,
        })
    })?;
    rows.collect()
}

/// The digest is in the outbox: its text and its items' text leave the store.
pub fn mark_queued(t: &Transaction<'_>, id: i64) -> rusqlite::Result<()> {
    t.execute(
        "UPDATE mail_digests SET state = 'queued', text = NULL WHERE id = ?1",
        [id],
    )?;
    t.execute(
        "UPDATE mail_reports SET line = NULL WHERE digest_id = ?1",
        [id],
    )?;
    Ok(())
}

/// Digests in the outbox not yet known to be delivered: (id).
pub fn queued_digests(t: &Transaction<'_>, account: &str) -> rusqlite::Result<Vec<i64>> {
    let mut st = t.prepare_cached(
        "SELECT id FROM mail_digests WHERE account = ?1 AND state = 'queued' ORDER BY id",
    )?;
    let rows = st.query_map([account], |r| r.get(0))?;
    rows.collect()
}

/// The chat confirmed delivery of digest `id`.
pub fn mark_delivered(t: &Transaction<'_>, id: i64) -> rusqlite::Result<()> {
    t.execute(
        "UPDATE mail_digests SET state = 'delivered' WHERE id = ?1",
        [id],
    )?;
    Ok(())
}

/// The newest digest sent to `report_to`: (id, created_unix).
pub fn latest_digest(
    t: &Transaction<'_>,
    account: &str,
    report_to: &str,
) -> rusqlite::Result<Option<(i64, i64)>> {
    t.query_row(
        "SELECT id, created_unix FROM mail_digests WHERE account = ?1 AND report_to = ?2 AND state <> 'built'
         ORDER BY id DESC LIMIT 1",
        params![account, report_to],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// Item `number` of digest `digest`: where the mail is.
pub fn digest_item(
    t: &Transaction<'_>,
    digest: i64,
    number: u32,
) -> rusqlite::Result<Option<(Place, u32)>> {
    t.query_row(
        "SELECT mailbox, uid_validity, uid FROM mail_reports WHERE digest_id = ?1 AND number = ?2",
        params![digest, number],
        |r| {
            Ok((
                Place {
                    mailbox: r.get(0)?,
                    validity: r.get(1)?,
                },
                r.get(2)?,
            ))
        },
    )
    .optional()
}

/// A reply drafted and waiting for the owner's yes.
#[derive(Debug, Clone)]
pub struct PendingReply {
    /// Its Message-ID (kept across a crash, so a resend is the same message).
    pub message_id: String,
    /// The whole message.
    pub raw: Vec<u8>,
    /// Envelope sender.
    pub envelope_from: String,
    /// Envelope recipients, one per line.
    pub envelope_to: String,
}

/// Stores (replacing) the pending reply of `chat`.
pub fn put_pending(
    t: &Transaction<'_>,
    account: &str,
    chat: &str,
    p: &PendingReply,
    now: i64,
) -> rusqlite::Result<()> {
    t.execute(
        "INSERT INTO mail_pending_replies (account, chat, message_id, raw, envelope_from, envelope_to, created_unix)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(account, chat) DO UPDATE SET message_id = excluded.message_id, raw = excluded.raw,
           envelope_from = excluded.envelope_from, envelope_to = excluded.envelope_to, created_unix = excluded.created_unix",
        params![account, chat, p.message_id, p.raw, p.envelope_from, p.envelope_to, now],
    )?;
    Ok(())
}

/// The pending reply of `chat`, if any.
pub fn pending(
    t: &Transaction<'_>,
    account: &str,
    chat: &str,
) -> rusqlite::Result<Option<PendingReply>> {
    t.query_row(
        "SELECT message_id, raw, envelope_from, envelope_to FROM mail_pending_replies WHERE account = ?1 AND chat = ?2",
        params![account, chat],
        |r| {
            Ok(PendingReply {
                message_id: r.get(0)?,
                raw: r.get(1)?,
                envelope_from: r.get(2)?,
                envelope_to: r.get(3)?,
            })
        },
    )
    .optional()
}

/// The chats where `account` holds a drafted reply waiting for yes or no.
pub fn pending_chats(t: &Transaction<'_>, account: &str) -> rusqlite::Result<Vec<String>> {
    let mut q = t.prepare("SELECT chat FROM mail_pending_replies WHERE account = ?1")?;
    let rows = q.query_map(params![account], |r| r.get(0))?;
    rows.collect()
}

/// Forgets the pending reply of `chat`; when `sent`, remembers its Message-ID as ours.
pub fn finish_pending(
    t: &Transaction<'_>,
    account: &str,
    chat: &str,
    sent: Option<&str>,
    now: i64,
) -> rusqlite::Result<()> {
    t.execute(
        "DELETE FROM mail_pending_replies WHERE account = ?1 AND chat = ?2",
        params![account, chat],
    )?;
    if let Some(id) = sent {
        t.execute(
            "INSERT OR IGNORE INTO mail_sent_ids (account, message_id, sent_unix) VALUES (?1, ?2, ?3)",
            params![account, id, now],
        )?;
    }
    Ok(())
}

/// Message-IDs of mail the bridge sent for `account`.
pub fn sent_ids(t: &Transaction<'_>, account: &str) -> rusqlite::Result<Vec<String>> {
    let mut st = t.prepare_cached(
        "SELECT message_id FROM mail_sent_ids WHERE account = ?1 ORDER BY sent_unix DESC LIMIT 10000",
    )?;
    let rows = st.query_map([account], |r| r.get(0))?;
    rows.collect()
}

/// Forgets decided claims, digests and counters older than `before_unix` (the store stays small).
pub fn purge(t: &Transaction<'_>, account: &str, before_unix: i64) -> rusqlite::Result<()> {
    t.execute(
        "DELETE FROM mail_claims WHERE account = ?1 AND state = 'decided' AND decided_unix < ?2",
        params![account, before_unix],
    )?;
    t.execute(
        "DELETE FROM mail_reports WHERE account = ?1 AND line IS NULL AND created_unix < ?2",
        params![account, before_unix],
    )?;
    t.execute(
        "DELETE FROM mail_digests WHERE account = ?1 AND state = 'delivered' AND created_unix < ?2",
        params![account, before_unix],
    )?;
    Ok(())
}
