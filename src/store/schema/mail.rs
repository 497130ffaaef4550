//! Tables of the mail module (append steps; every per-account table has an `account` column).

/// The mail module's migrations.
pub(super) const STEPS: &[&str] = &[
    // 1: cursor, claims, report items, digests, daily counters, pending replies, sent ids.
    "CREATE TABLE mail_cursor (
        account TEXT NOT NULL,
        mailbox TEXT NOT NULL,
        uid_validity INTEGER NOT NULL,
        -- the highest UID claimed (or the baseline: UIDNEXT - 1)
        last_uid INTEGER NOT NULL,
        PRIMARY KEY (account, mailbox)
     );
     CREATE TABLE mail_claims (
        account TEXT NOT NULL,
        mailbox TEXT NOT NULL,
        uid_validity INTEGER NOT NULL,
        uid INTEGER NOT NULL,
        -- claimed: not decided yet; decided: final (never decided again)
        state TEXT NOT NULL,
        -- rule | model_no | report | budget | gone | void
        outcome TEXT,
        claimed_unix INTEGER NOT NULL,
        decided_unix INTEGER,
        PRIMARY KEY (account, mailbox, uid_validity, uid)
     );
     CREATE INDEX mail_claims_open ON mail_claims (account, state);
     CREATE TABLE mail_reports (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account TEXT NOT NULL,
        mailbox TEXT NOT NULL,
        uid_validity INTEGER NOT NULL,
        uid INTEGER NOT NULL,
        urgent INTEGER NOT NULL,
        -- the item text; NULL once its digest went to the outbox
        line TEXT,
        created_unix INTEGER NOT NULL,
        digest_id INTEGER,
        number INTEGER
     );
     CREATE INDEX mail_reports_open ON mail_reports (account, digest_id);
     CREATE TABLE mail_digests (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account TEXT NOT NULL,
        -- the digest text until it is in the outbox, then NULL
        text TEXT,
        -- built: stored, not yet in the outbox; queued: in the outbox; delivered: sent by the chat
        state TEXT NOT NULL,
        local_day TEXT NOT NULL,
        created_unix INTEGER NOT NULL,
        chat TEXT NOT NULL,
        report_to TEXT NOT NULL
     );
     CREATE INDEX mail_digests_day ON mail_digests (account, local_day);
     CREATE TABLE mail_counters (
        account TEXT NOT NULL,
        local_day TEXT NOT NULL,
        seen INTEGER NOT NULL DEFAULT 0,
        triaged INTEGER NOT NULL DEFAULT 0,
        reported INTEGER NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0,
        untriaged INTEGER NOT NULL DEFAULT 0,
        -- untriaged count the last digest already told the owner about
        untriaged_told INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (account, local_day)
     );
     CREATE TABLE mail_pending_replies (
        account TEXT NOT NULL,
        chat TEXT NOT NULL,
        message_id TEXT NOT NULL,
        raw BLOB NOT NULL,
        envelope_from TEXT NOT NULL,
        envelope_to TEXT NOT NULL,
        created_unix INTEGER NOT NULL,
        PRIMARY KEY (account, chat)
     );
     CREATE TABLE mail_sent_ids (
        account TEXT NOT NULL,
        message_id TEXT NOT NULL,
        sent_unix INTEGER NOT NULL,
        PRIMARY KEY (account, message_id)
     );",
];
