//! A chat platform's own keys in its `[<channel>.<account>]` tables.
//!
//! The configuration knows the keys every account shares (`enabled`, `senders`, ...); the keys
//! only one platform has are that platform's. Each platform declares its table in its adapter
//! folder (`adapters/<platform>/settings.rs`) with [`platform_table!`](crate::platform_table)
//! and adds one [`TableSchema`] to [`PLATFORM_TABLES`]; `Config::parse` checks every platform's
//! tables through it at load (unknown keys, types and numeric ranges, each with file, line and
//! key), and the platform reads its settings back from the account's [`PlatformTable`] when it
//! builds, logs in or probes. The registration is link-time (`linkme`) so the configuration,
//! which every layer reads, never imports the platforms above it.
//!
//! Stable: a schema per chat channel (mail's table is the configuration's own); the table holds
//! only the platform's keys, with the shared ones taken out.

use linkme::distributed_slice;
use serde::de::DeserializeOwned;
use toml::de::ValueDeserializer;

use super::Channel;
use super::key_range::KeyRange;

/// Every chat platform's table, one entry each (a test checks there is exactly one per chat
/// channel).
#[distributed_slice]
pub static PLATFORM_TABLES: [TableSchema];

/// What the configuration needs of one platform's account tables.
pub struct TableSchema {
    /// The platform; its tables are `[<channel>.<account>]`.
    pub channel: Channel,
    /// Reads one account table as written (shared keys included) and refuses what the platform
    /// does not take; the error carries the span of the offending key or value.
    pub check: fn(ValueDeserializer<'_>) -> Result<(), toml::de::Error>,
    /// The platform's numeric keys and the whole numbers each accepts.
    pub ranges: &'static [KeyRange],
}

/// The schema of `channel`'s tables; `None` for mail, whose table the configuration reads itself.
pub fn schema(channel: Channel) -> Option<&'static TableSchema> {
    PLATFORM_TABLES.iter().find(|s| s.channel == channel)
}

/// One account's platform keys as written, checked at load by its platform's schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlatformTable(toml::Table);

// A table never holds NaN from a checked file the platforms read as a number, and a reload only
// compares it to decide whether to restart the account: equality as PartialEq says is enough.
impl Eq for PlatformTable {}

impl PlatformTable {
    /// The table of the platform keys in `table` (the shared ones removed).
    pub(super) fn own_keys(mut table: toml::Table, shared: &[&str]) -> Self {
        table.retain(|k, _| !shared.contains(&k));
        PlatformTable(table)
    }

    /// A table holding `settings`' keys (tests and set-up code that build an account by hand).
    pub fn from_settings<T: serde::Serialize>(settings: &T) -> Self {
        let table = toml::Table::try_from(settings).unwrap_or_default();
        PlatformTable(table)
    }

    /// The platform's settings. A table from `Config::parse` was checked by the platform's
    /// schema, so this reads; a hand-built table that does not gives the defaults.
    pub fn read<T: DeserializeOwned + Default>(&self) -> T {
        self.0.clone().try_into().unwrap_or_default()
    }
}

/// Declares a platform's settings struct (its own keys, what the adapter reads) and the table as
/// written (the shared keys plus its own, unknown keys refused), with `check_table` for its
/// [`TableSchema`]. The shared keys' types are the configuration's; their rules are checked by
/// the configuration itself.
#[macro_export]
macro_rules! platform_table {
    ($(#[$sm:meta])* $settings:ident { $($(#[$m:meta])* $f:ident : $t:ty),* $(,)? }) => {
        $(#[$sm])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
        pub struct $settings {
            $($(#[$m])* pub $f: $t,)*
        }

        impl $settings {
            /// The account's settings, from its configuration table.
            pub fn of(settings: &$crate::config::ChannelSettings) -> Self {
                match settings {
                    $crate::config::ChannelSettings::Own(t) => t.read(),
                    $crate::config::ChannelSettings::Mail(_) => Self::default(),
                }
            }
        }

        /// Reads one account table as written, refusing a key neither shared nor this
        /// platform's.
        pub(crate) fn check_table(
            de: toml::de::ValueDeserializer<'_>,
        ) -> Result<(), toml::de::Error> {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            #[allow(dead_code)] // read only to be checked
            struct AsWritten {
                enabled: Option<bool>,
                workspace: Option<String>,
                senders: Option<$crate::protocol::Senders>,
                remote_tools: Option<$crate::protocol::RemoteTools>,
                approvals: Option<$crate::config::Approvals>,
                purpose: Option<$crate::protocol::Purpose>,
                language: Option<$crate::words::Language>,
                media: Option<$crate::config::MediaConfig>,
                agent: Option<String>,
                stranger_agent: Option<String>,
                $($(#[$m])* $f: $t,)*
            }
            <AsWritten as serde::Deserialize>::deserialize(de).map(drop)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chat_channel_declares_one_table_and_mail_none() {
        for c in Channel::ALL {
            let n = PLATFORM_TABLES.iter().filter(|s| s.channel == c).count();
            let expected = usize::from(c != Channel::Mail);
            assert_eq!(n, expected, "{c}: tables declared");
        }
    }
}
