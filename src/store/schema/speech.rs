//! The speech module's tables: how each chat wants its answers (`/voice on|off|auto`).

/// Append only.
pub const STEPS: &[&str] = &[
    // 1: a chat's `/voice` choice (`on`, `off`); no row is `auto`, the default.
    "CREATE TABLE chat_voice (
        account TEXT NOT NULL,
        chat TEXT NOT NULL,
        mode TEXT NOT NULL,
        PRIMARY KEY (account, chat)
     );",
];
