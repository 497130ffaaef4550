//! What a numeric key's range is: the table it lives in and the whole numbers it accepts. The
//! configuration's own ranges are in `ranges.rs`; a chat platform's in its `TableSchema`.

/// Where a numeric key lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The `[agent]` table.
    Agent,
    /// Every `[agents.NAME]` table (the same keys as `[agent]`).
    Agents,
    /// The `[chats]` table.
    Chats,
    /// Every account table of a chat platform (its ranges are in its `TableSchema`).
    Account(crate::ids::Channel),
    /// Every `[mail.ACCOUNT]` table.
    Mail,
    /// The `[media]` table.
    Media,
    /// The `[owner]` table.
    Owner,
    /// The `[speech]` table.
    Speech,
}

impl Scope {
    /// The dotted table name (`agent`), or the channel whose account tables hold the key (`mail`).
    pub(crate) fn table(self) -> &'static str {
        match self {
            Scope::Agent => "agent",
            Scope::Agents => "agents",
            Scope::Chats => "chats",
            Scope::Account(channel) => channel.as_str(),
            Scope::Mail => "mail",
            Scope::Media => "media",
            Scope::Owner => "owner",
            Scope::Speech => "speech",
        }
    }

    /// Whether the key sits one level down, in each account's table.
    pub(crate) fn per_account(self) -> bool {
        !matches!(
            self,
            Scope::Agent | Scope::Chats | Scope::Media | Scope::Owner | Scope::Speech
        )
    }
}

/// One numeric key and the whole numbers it accepts (both ends included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRange {
    /// The table.
    pub scope: Scope,
    /// The key.
    pub key: &'static str,
    /// The smallest value allowed.
    pub min: u64,
    /// The largest value allowed.
    pub max: u64,
    /// What the number counts, for the message ("days").
    pub unit: &'static str,
}

impl KeyRange {
    /// "a whole number of days from 0 to 3650".
    pub(crate) fn expected(&self) -> String {
        let what = if self.unit.is_empty() {
            "a whole number".to_string()
        } else {
            format!("a whole number of {}", self.unit)
        };
        format!("{what} from {} to {}", self.min, self.max)
    }
}

/// A numeric key of `channel`'s account tables, for the platform's `TableSchema`.
pub const fn account_range(
    channel: crate::ids::Channel,
    key: &'static str,
    min: u64,
    max: u64,
    unit: &'static str,
) -> KeyRange {
    range(Scope::Account(channel), key, min, max, unit)
}

pub(crate) const fn range(
    scope: Scope,
    key: &'static str,
    min: u64,
    max: u64,
    unit: &'static str,
) -> KeyRange {
    KeyRange {
        scope,
        key,
        min,
        max,
        unit,
    }
}
