//! The `[wechat.ACCOUNT]` table: WeChat's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;

use crate::config::{Channel, KeyRange, PLATFORM_TABLES, TableSchema, account_range};
use crate::port::setup::{Goes, Question, Said, Setup};

crate::platform_table!(
    /// WeChat-only settings.
    WechatSettings {
    /// The iLink base URL (default: the one the login returned).
    base_url: Option<String>,
    /// Hours after the peer's last message during which the bot may write.
    send_window_hours: Option<u64>,
    /// Sends allowed per inbound message.
    sends_per_message: Option<u32>,
    /// Least milliseconds between two sends of the account (default 1000).
    min_send_interval_ms: Option<u64>,
    /// The media CDN (default WeChat's `https://novac2c.cdn.weixin.qq.com/c2c`).
    cdn_base_url: Option<String>,
});

/// The least `min_send_interval_ms` accepted: below it a bot's burst is certain to be throttled.
pub const MIN_SEND_INTERVAL_FLOOR_MS: u64 = 100;

const RANGES: &[KeyRange] = &[
    account_range(Channel::Wechat, "send_window_hours", 1, 168, "hours"),
    account_range(Channel::Wechat, "sends_per_message", 1, 1_000, "sends"),
    account_range(
        Channel::Wechat,
        "min_send_interval_ms",
        MIN_SEND_INTERVAL_FLOOR_MS,
        60_000,
        "milliseconds",
    ),
];

/// WeChat's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Wechat,
    check: check_table,
    ranges: RANGES,
};

/// What `init` asks when it adds a WeChat account.
pub static SETUP: Setup = Setup {
    name: Said {
        en: "A name for the WeChat account",
        zh: "微信账号的名称",
    },
    default_name: "phone",
    questions: &[Question {
        key: "base_url",
        goes: Goes::Table,
        prompt: Said {
            en: "WeChat's iLink endpoint",
            zh: "微信 iLink 接口地址",
        },
        choices: &[],
        default: Some(scv_wechat::types::DEFAULT_BASE_URL),
    }],
};

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{AccountKey, ChannelSettings, Config, PlatformTable};

    #[test]
    fn a_platforms_table_is_checked_at_load_with_file_line_and_key() {
        let file = Path::new("/c.toml");
        let e = Config::parse(file, "[wechat.a]\nsenders = \"owner\"\nbase_ur = \"x\"\n")
            .expect_err("a typo");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(3), Some("wechat.a.base_ur"))
        );
        assert!(e.message.contains("did you mean `base_url`?"), "{e}");
        let e = Config::parse(file, "[feishu.b]\n\nmode = \"sideways\"\n").expect_err("a value");
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("expected websocket or webhook"), "{e}");
        let e = Config::parse(file, "wechat = 3\n").expect_err("not tables");
        assert!(e.message.contains("[wechat.NAME]"), "{e}");
        let c = Config::parse(
            file,
            "[wechat.a]\nsenders = \"anyone\"\nbase_url = \"http://h\"\n",
        )
        .expect("parses");
        let spec = &c.accounts[&AccountKey::new(Channel::Wechat, "a")];
        let w: WechatSettings = match &spec.settings {
            ChannelSettings::Own(t) => t.read(),
            ChannelSettings::Mail(_) => unreachable!("a wechat account"),
        };
        assert_eq!(w.base_url.as_deref(), Some("http://h"));
        assert_eq!(spec.senders, crate::protocol::Senders::Anyone);
        let own = PlatformTable::from_settings(&w);
        assert_eq!(spec.settings, ChannelSettings::Own(own));
    }
}
