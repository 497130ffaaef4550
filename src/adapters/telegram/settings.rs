//! The `[telegram.ACCOUNT]` table: Telegram's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;

use crate::config::{Channel, KeyRange, PLATFORM_TABLES, TableSchema, account_range};
use crate::port::setup::{Said, Setup};

crate::platform_table!(
    /// Telegram-only settings.
    TelegramSettings {
    /// The owner's numeric Telegram user id; unset: the owner pairs with the code `login` shows.
    owner: Option<i64>,
    /// The Bot API base URL (default `https://api.telegram.org/`; a self-hosted Bot API server
    /// or a test's fake).
    base_url: Option<String>,
});

const RANGES: &[KeyRange] = &[
    // Telegram user ids have at most 52 significant bits and are positive (spec §1.1).
    account_range(Channel::Telegram, "owner", 1, 1 << 52, ""),
];

/// Telegram's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Telegram,
    check: check_table,
    ranges: RANGES,
};

/// What `init` asks when it adds a Telegram bot: only its name (the token is the login's).
pub static SETUP: Setup = Setup {
    name: Said {
        en: "A name for the Telegram bot",
        zh: "Telegram 机器人的名称",
    },
    default_name: "bot",
    questions: &[],
};
