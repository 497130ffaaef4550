//! The allowed range of every numeric key, checked at load so no number in the file can reach
//! arithmetic that overflows or a date out of range at run time.

use serde_json::Value;

use super::key_range::{KeyRange, Scope, range};

/// Every numeric key of the configuration's own tables; a chat platform's are in its
/// `TableSchema`. `config/example.toml` shows each range; the tests fail when a numeric key
/// exists without an entry.
const RANGES: &[KeyRange] = &[
    range(Scope::Agent, "timeout_seconds", 1, 86_400, "seconds"),
    range(
        Scope::Agent,
        "max_message_bytes",
        1024,
        4 * 1024 * 1024,
        "bytes",
    ),
    range(Scope::Agent, "max_answer_kib", 4, 65_536, "KiB"),
    range(Scope::Agent, "max_image_mb", 1, 100, "MB"),
    range(Scope::Agents, "timeout_seconds", 1, 86_400, "seconds"),
    range(
        Scope::Agents,
        "max_message_bytes",
        1024,
        4 * 1024 * 1024,
        "bytes",
    ),
    range(Scope::Agents, "max_answer_kib", 4, 65_536, "KiB"),
    range(Scope::Agents, "max_image_mb", 1, 100, "MB"),
    range(Scope::Chats, "merge_ms", 0, 60_000, "milliseconds"),
    range(Scope::Chats, "away_minutes", 1, 10_080, "minutes"),
    range(Scope::Media, "max_item_mb", 1, 1_024, "MB"),
    range(Scope::Media, "max_workspace_mb", 1, 1_048_576, "MB"),
    range(Scope::Speech, "timeout_seconds", 1, 600, "seconds"),
    range(Scope::Speech, "max_audio_mb", 1, 100, "MB"),
    range(Scope::Speech, "max_audio_seconds", 1, 3_600, "seconds"),
    range(Scope::Speech, "voice_max_chars", 50, 4_096, "characters"),
    range(Scope::Mail, "imap_port", 1, 65_535, ""),
    range(Scope::Mail, "smtp_port", 1, 65_535, ""),
    range(Scope::Mail, "token_budget", 1, 1_000_000_000, "tokens"),
    range(Scope::Mail, "triage_batch", 1, 50, "mails"),
    range(Scope::Mail, "triage_parallel", 1, 16, "calls"),
    range(Scope::Mail, "digest_interval_minutes", 1, 10_080, "minutes"),
    range(Scope::Mail, "max_digests_per_day", 1, 1_440, "digests"),
    range(Scope::Mail, "backfill_days", 0, 3_650, "days"),
    range(Scope::Owner, "move_after_seconds", 10, 86_400, "seconds"),
    range(Scope::Owner, "alert_after_seconds", 60, 86_400, "seconds"),
];

/// Every numeric key: the configuration's own, then each platform's.
pub(crate) fn all() -> impl Iterator<Item = &'static KeyRange> {
    let platforms = super::platform_table::PLATFORM_TABLES
        .iter()
        .flat_map(|s| s.ranges);
    RANGES.iter().chain(platforms)
}

/// The range of the key at dotted `path` (`mail.home.backfill_days`), if it is a numeric key.
pub(crate) fn range_of(path: &str) -> Option<&'static KeyRange> {
    let parts: Vec<&str> = path.split('.').collect();
    all().find(|r| match (r.scope.per_account(), parts.as_slice()) {
        (false, [t, k]) => *t == r.scope.table() && *k == r.key,
        (true, [t, _, k]) => *t == r.scope.table() && *k == r.key,
        // An account's own media caps (`wechat.phone.media.max_item_mb`).
        (false, [_, _, "media", k]) => r.scope == Scope::Media && *k == r.key,
        _ => false,
    })
}

/// A number outside its range: the table (`mail.home`), the key and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutOfRange {
    /// The dotted table.
    pub table: String,
    /// The key.
    pub key: &'static str,
    /// What is allowed and what was found.
    pub message: String,
}

/// Checks every numeric key present in the parsed file; values of another type are left to the
/// typed parse, which names the type expected.
pub(crate) fn check(tree: &Value) -> Result<(), OutOfRange> {
    for r in all() {
        let table = tree.get(r.scope.table());
        let tables: Vec<(String, &Value)> = match table {
            None => Vec::new(),
            Some(table) if r.scope.per_account() => match table.as_object() {
                Some(accounts) => accounts
                    .iter()
                    .map(|(name, t)| (format!("{}.{name}", r.scope.table()), t))
                    .collect(),
                None => continue,
            },
            Some(table) => vec![(r.scope.table().to_string(), table)],
        };
        // An account's own `[<channel>.<account>.media]` caps take the same ranges.
        let own_media: Vec<(String, &Value)> = if r.scope == Scope::Media {
            crate::ids::Channel::ALL
                .into_iter()
                .map(crate::ids::Channel::as_str)
                .filter_map(|c| tree.get(c).and_then(Value::as_object).map(|a| (c, a)))
                .flat_map(|(c, accounts)| {
                    accounts.iter().filter_map(move |(name, t)| {
                        t.get("media").map(|m| (format!("{c}.{name}.media"), m))
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let tables = tables.into_iter().chain(own_media);
        for (name, t) in tables {
            let Some(Value::Number(n)) = t.get(r.key) else {
                continue;
            };
            let inside = n.as_u64().is_some_and(|v| (r.min..=r.max).contains(&v));
            if !inside {
                return Err(OutOfRange {
                    table: name,
                    key: r.key,
                    message: format!("expected {}, found {n}", r.expected()),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_find_their_range() {
        assert_eq!(
            range_of("mail.home.backfill_days").map(|r| r.max),
            Some(3_650)
        );
        assert_eq!(range_of("agent.timeout_seconds").map(|r| r.min), Some(1));
        assert!(range_of("mail.backfill_days").is_none());
        assert!(range_of("agent.x.timeout_seconds").is_none());
        assert!(range_of("wechat.a.base_url").is_none());
    }
}
