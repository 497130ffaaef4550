//! Tables of the conversation pipeline: the inbound journal, each chat's latest reply context, the outbox.

/// The conversation module's migrations.
pub(super) const STEPS: &[&str] = &[
    // 1: journal (dedupe + crash replay), chat state, outbox (idempotent sends).
    "CREATE TABLE inbound_journal (
        account TEXT NOT NULL,
        msg_id TEXT NOT NULL,
        chat TEXT NOT NULL,
        sender TEXT NOT NULL,
        text TEXT NOT NULL,
        at_unix_ms INTEGER NOT NULL,
        reply TEXT NOT NULL,
        -- new: waits for an agent turn; fast: a command or answer to handle at once;
        -- done / dropped: finished (text cleared).
        state TEXT NOT NULL,
        tools INTEGER NOT NULL DEFAULT 0,
        journaled_unix INTEGER NOT NULL,
        PRIMARY KEY (account, msg_id)
     );
     CREATE INDEX inbound_journal_open ON inbound_journal (account, chat, state);
     CREATE INDEX inbound_journal_age ON inbound_journal (journaled_unix);
     CREATE TABLE chat_state (
        account TEXT NOT NULL,
        chat TEXT NOT NULL,
        reply TEXT NOT NULL,
        last_inbound_unix INTEGER NOT NULL,
        PRIMARY KEY (account, chat)
     );
     CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account TEXT NOT NULL,
        chat TEXT NOT NULL,
        idem_key TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        rich TEXT,
        reply TEXT NOT NULL,
        kind TEXT NOT NULL,
        -- pending | sent | failed
        state TEXT NOT NULL,
        -- unused (nothing read it); kept so stores written earlier need no migration
        attempts INTEGER NOT NULL DEFAULT 0,
        created_unix INTEGER NOT NULL,
        sent_unix INTEGER,
        error TEXT
     );
     CREATE INDEX outbox_open ON outbox (account, chat, state, id);",
    // 2: what the platform said about a sent item (its message id, the chat it landed in), and
    // update items: `kind` may be 'update', naming the item whose message it replaces by key.
    "ALTER TABLE outbox ADD COLUMN platform_msg_id TEXT;
     ALTER TABLE outbox ADD COLUMN platform_chat TEXT;
     ALTER TABLE outbox ADD COLUMN target_key TEXT;",
    // 3: the fast lane's route of a `fast` message (answer, command, mail_chat), decided once
    // when it is journaled; NULL on rows journaled before (decided again when handled).
    "ALTER TABLE inbound_journal ADD COLUMN fast_route TEXT;",
    // 4: the language a chat's owner writes in (`language = "auto"`), so a restart keeps it.
    "CREATE TABLE chat_language (
        account TEXT NOT NULL,
        chat TEXT NOT NULL,
        lang TEXT NOT NULL,
        PRIMARY KEY (account, chat)
     );",
    // 5: media of inbound messages: the references a message carries (JSON, cleared with its
    // text when it is done) and one row per item once the pipeline chose where it goes
    // (`reserved`: the file name is taken, the download may not have finished; `saved`; or
    // `refused` with the reason), so a re-run after a crash reuses the name and never stores a
    // file twice.
    "ALTER TABLE inbound_journal ADD COLUMN media TEXT;
     CREATE TABLE media_fetched (
        account TEXT NOT NULL,
        msg_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        state TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL DEFAULT 0,
        note TEXT,
        at_unix INTEGER NOT NULL,
        PRIMARY KEY (account, msg_id, idx)
     );",
    // 6: delivery states of proactive items (`conversation/deliveries.rs`): why a pending item
    // waits (`protocol::WaitWhy`'s spelling, NULL while it is merely queued) and since when;
    // `sent_unix` is from now on also set when an item fails or moves, so settled items count
    // by age; `state` may be 'moved' (a copy went to `moved_to`, the owner's next route).
    "ALTER TABLE outbox ADD COLUMN wait_why TEXT;
     ALTER TABLE outbox ADD COLUMN wait_since INTEGER;
     ALTER TABLE outbox ADD COLUMN moved_to TEXT;
     CREATE INDEX outbox_kind_state ON outbox (kind, state, sent_unix);",
];
