//! Takes the chat platforms' account tables out of the parsed document before the configuration
//! reads the rest: each account table gives the shared keys (read here) and the platform's own
//! (checked by its schema, kept as a [`PlatformTable`]). Every error keeps the span of the key
//! or value it is about, so it names file, line and key like any other.

use std::path::Path;

use serde::Deserialize;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::raw::{SHARED_KEYS, Shared};
use super::{Channel, ConfigError, PlatformTable, located, schema};

/// One account table of a chat platform as read.
pub(super) struct PlatformAccount {
    /// Its platform.
    pub channel: Channel,
    /// Its name (`[<channel>.<name>]`).
    pub name: String,
    /// The keys every account may set.
    pub shared: Shared,
    /// The platform's own keys.
    pub table: PlatformTable,
}

/// Removes every chat platform's tables from `doc` and reads them; mail's stays (the
/// configuration reads it with the rest).
pub(super) fn take_platform_tables(
    doc: &mut DeTable<'_>,
    path: &Path,
    text: &str,
    toml_error: &dyn Fn(toml::de::Error) -> ConfigError,
) -> Result<Vec<PlatformAccount>, ConfigError> {
    let mut accounts = Vec::new();
    for channel in Channel::ALL {
        let Some(schema) = schema(channel) else {
            continue;
        };
        let Some(tables) = doc.remove(channel.as_str()) else {
            continue;
        };
        let DeValue::Table(tables) = tables.into_inner() else {
            let msg = format!("expected tables [{channel}.NAME], one per account");
            return Err(located(path, text, "", Some(channel.as_str()), msg));
        };
        for (name, value) in tables {
            let name = name.into_inner().into_owned();
            if !matches!(value.get_ref(), DeValue::Table(_)) {
                let msg = format!("expected a table [{channel}.{name}]");
                return Err(located(path, text, channel.as_str(), Some(&name), msg));
            }
            let read = || ValueDeserializer::from(value.clone());
            let shared = Shared::deserialize(read()).map_err(toml_error)?;
            (schema.check)(read()).map_err(toml_error)?;
            let table = toml::Table::deserialize(read()).map_err(toml_error)?;
            accounts.push(PlatformAccount {
                channel,
                name,
                shared,
                table: PlatformTable::own_keys(table, &SHARED_KEYS),
            });
        }
    }
    Ok(accounts)
}
