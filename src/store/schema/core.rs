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
    // 2: `enabled` may be unset: a `channel_set` that does not name it follows the file.
    "CREATE TABLE account_settings_v2 (
        account TEXT PRIMARY KEY,
        enabled INTEGER,
        workspace TEXT,
        senders TEXT,
        remote_tools TEXT,
        purpose TEXT
     );
     INSERT INTO account_settings_v2 SELECT account, enabled, workspace, senders, remote_tools, purpose
        FROM account_settings;
     DROP TABLE account_settings;
     ALTER TABLE account_settings_v2 RENAME TO account_settings;",
];
