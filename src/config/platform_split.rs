//! Takes the chat platforms' account tables out of the parsed document before the configuration
//! reads the rest: each account table's platform keys are checked by its schema and kept as a
//! [`PlatformTable`]; the table as written goes back to the configuration for the shared keys. Every error keeps the span of the key
//! or value it is about, so it names file, line and key like any other.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::{Channel, ConfigError, PlatformTable, located, schema};

/// One account table of a chat platform as written, its platform's keys checked.
pub(super) struct Written<'i> {
    /// Its platform.
    pub channel: Channel,
    /// Its name (`[<channel>.<name>]`).
    pub name: String,
    /// The table as written, spans kept: the configuration reads the shared keys from it.
    pub value: Spanned<DeValue<'i>>,
    /// The platform's own keys.
    pub table: PlatformTable,
}

/// Removes every chat platform's tables from `doc` and reads them; mail's stays (the
/// configuration reads it with the rest).
pub(super) fn take_platform_tables<'i>(
    doc: &mut DeTable<'i>,
    path: &Path,
    text: &str,
    toml_error: &dyn Fn(toml::de::Error) -> ConfigError,
    shared_keys: &[&str],
) -> Result<Vec<Written<'i>>, ConfigError> {
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
            (schema.check)(read()).map_err(toml_error)?;
            let table = toml::Table::deserialize(read()).map_err(toml_error)?;
            accounts.push(Written {
                channel,
                name,
                table: PlatformTable::own_keys(table, shared_keys),
                value,
            });
        }
    }
    Ok(accounts)
}
