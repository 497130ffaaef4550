//! Versioned schema migrations, one list per module, applied in order at open.
//!
//! Each module owns its tables and its list (in `schema/<module>.rs`); `schema_versions` records
//! how far each list has been applied. Append only; never edit a released step. Every table that
//! holds per-account rows has an `account` column, so `channel_logout` can remove them all.

use rusqlite::{Connection, OptionalExtension, params};

mod agent;
mod confirm;
mod conversation;
mod core;
mod feishu;
mod mail;
mod owner;
mod speech;
mod wechat;

/// Every module's migration list, in the order they are applied.
const MODULES: &[(&str, &[&str])] = &[
    ("core", core::STEPS),
    ("conversation", conversation::STEPS),
    ("agent", agent::STEPS),
    ("wechat", wechat::STEPS),
    ("feishu", feishu::STEPS),
    ("mail", mail::STEPS),
    ("confirm", confirm::STEPS),
    ("owner", owner::STEPS),
    ("speech", speech::STEPS),
];

/// The version each module's schema reaches with this build.
pub fn versions() -> Vec<(&'static str, usize)> {
    MODULES.iter().map(|(m, s)| (*m, s.len())).collect()
}

/// Brings every module's schema up to date; refuses a store written by a newer build.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_versions (module TEXT PRIMARY KEY, version INTEGER NOT NULL)",
    )?;
    for (module, steps) in MODULES {
        let current: i64 = conn
            .query_row(
                "SELECT version FROM schema_versions WHERE module = ?1",
                [module],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0);
        let current = usize::try_from(current).unwrap_or(usize::MAX);
        if current > steps.len() {
            return Err(rusqlite::Error::InvalidParameterName(format!(
                "the store's {module} schema is version {current}, newer than this build's {}; upgrade scv-bridge",
                steps.len()
            )));
        }
        for (i, step) in steps.iter().enumerate().skip(current) {
            let tx = conn.transaction()?;
            tx.execute_batch(step)?;
            tx.execute(
                "INSERT INTO schema_versions (module, version) VALUES (?1, ?2)
                 ON CONFLICT(module) DO UPDATE SET version = excluded.version",
                params![module, (i + 1) as i64],
            )?;
            tx.commit()?;
        }
    }
    Ok(())
}
