//! Tables of the core daemon: settings changed at runtime, and per-account named values.

/// The core daemon's migrations.
pub(super) const STEPS: &[&str] = &[
    // 1: `channel_set` overrides, and per-account named values (cursors, owner ids, ...).
    "CREATE TABLE account_settings (
        account TEXT PRIMARY KEY,
        enabled INTEGER NOT NULL,
        workspace TEXT,
        senders TEXT,
        remote_tools TEXT,
        purpose TEXT
     );
     CREATE TABLE account_state (
        account TEXT NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (account, name)
     );",
];
