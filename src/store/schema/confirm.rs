//! Tables of the confirm module (append steps; every per-account table has an `account` column).

/// The confirm module's migrations.
pub(super) const STEPS: &[&str] = &[
    // 1: owner questions. `account` is '' for a question that had no chat to go to (it is
    // stored failed, so `confirm_status` can still report it).
    "CREATE TABLE confirm_questions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        account TEXT NOT NULL,
        chat TEXT NOT NULL,
        code TEXT NOT NULL,
        question TEXT NOT NULL,
        -- pending | yes | no | expired | withdrawn | failed
        state TEXT NOT NULL,
        reason TEXT,
        created_unix_ms INTEGER NOT NULL,
        deadline_unix INTEGER NOT NULL,
        -- the outbox key of the question message (idempotent re-send after a crash)
        message_key TEXT NOT NULL,
        answered_by TEXT,
        answer_msg TEXT,
        closed_unix_ms INTEGER
     );
     CREATE INDEX confirm_questions_open ON confirm_questions (state, closed_unix_ms);",
    // 2: what the platform said when the question went out: its message id (the card to update
    // when the question closes) and the chat it landed in (where the owner's answers come from).
    "ALTER TABLE confirm_questions ADD COLUMN platform_msg_id TEXT;
     ALTER TABLE confirm_questions ADD COLUMN platform_chat TEXT;",
    // 3: "always" for an agent's tool question: whether the question offers it, and whether
    // the owner's yes was one.
    "ALTER TABLE confirm_questions ADD COLUMN offers_always INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE confirm_questions ADD COLUMN always INTEGER NOT NULL DEFAULT 0;",
];
