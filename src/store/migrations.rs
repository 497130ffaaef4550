//! Versioned schema migrations, applied in order; `PRAGMA user_version` records the last one.

use rusqlite::Connection;

/// Each entry upgrades the schema by one version. Append only; never edit a released step.
const STEPS: &[&str] = &[
    // 1: account settings changed at runtime, and per-account named values (cursors, tokens' metadata).
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

/// The schema version this build writes.
pub const SCHEMA_VERSION: usize = STEPS.len();

/// Brings the schema up to [`SCHEMA_VERSION`]; refuses a store written by a newer build.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let current = usize::try_from(current).unwrap_or(usize::MAX);
    if current > STEPS.len() {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "the store has schema version {current}, newer than this build's {}; upgrade scv-bridge",
            STEPS.len()
        )));
    }
    for (i, step) in STEPS.iter().enumerate().skip(current) {
        let tx = conn.transaction()?;
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}
