//! Tables of the owner's messages (`owner`): sends stored for later (`scv-bridge send --at`).

/// The owner module's migrations.
pub(super) const STEPS: &[&str] = &[
    // 1: one row per `send`. `due_unix_ms` is the UTC instant the `at` time named in the
    // configured zone, fixed when the send was asked. `state`: scheduled (not yet due), queued
    // (in the outbox under `owner-send/<id>`, which then says how it went), cancelled, failed
    // (no route; `reason`). `account` and `chat` are set once a route is chosen.
    "CREATE TABLE owner_sends (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        target TEXT,
        text TEXT NOT NULL,
        due_unix_ms INTEGER NOT NULL,
        state TEXT NOT NULL,
        account TEXT,
        chat TEXT,
        reason TEXT,
        created_unix INTEGER NOT NULL
     );
     CREATE INDEX owner_sends_due ON owner_sends (state, due_unix_ms);",
    // 2: the files of a `send --file` (JSON: the checked `MediaOut`s, in order), kept until the
    // send is queued (then the outbox holds them); NULL: none.
    "ALTER TABLE owner_sends ADD COLUMN files TEXT;",
];
