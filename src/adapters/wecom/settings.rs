//! The `[wecom.ACCOUNT]` table: WeCom's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;

use crate::config::{Channel, KeyRange, PLATFORM_TABLES, TableSchema};
use crate::port::setup::{Said, Setup};

crate::platform_table!(
    /// WeCom-only settings.
    WecomSettings {
    /// The owner's WeCom userid, exactly as the admin console shows it (ids are
    /// case-sensitive); unset: the owner pairs with the code `login` shows.
    owner: Option<String>,
    /// The long-connection URL (default `wss://openws.work.weixin.qq.com`; a privately
    /// deployed WeCom shows its own in the admin console; tests point it at the fake).
    url: Option<String>,
});

/// WeCom's table has no numeric keys.
const RANGES: &[KeyRange] = &[];

/// WeCom's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Wecom,
    check: check_table,
    ranges: RANGES,
};

/// What `init` asks when it adds a WeCom AI bot: only its name (the bot id and secret are the
/// login's).
pub static SETUP: Setup = Setup {
    name: Said {
        en: "A name for the WeCom AI bot",
        zh: "企业微信智能机器人的名称",
    },
    default_name: "work",
    questions: &[],
};
