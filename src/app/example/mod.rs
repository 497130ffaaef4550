//! Texts built into the binary, so they work after `cargo install` without the source tree: the
//! documented example configuration (`config example`, the same file the configuration tests
//! parse) and the channel set-up guide (`guide`).

/// `config/example.toml`, every key documented.
pub const EXAMPLE: &str = include_str!("../../../config/example.toml");

/// `docs/setup.md`: creating the Feishu app, the Telegram bot, the DingTalk app and the QQ bot,
/// the WeChat and mail logins, the model key.
pub const GUIDE_EN: &str = include_str!("../../../docs/setup.md");

/// `docs/setup.zh-CN.md`, the same guide in Simplified Chinese.
pub const GUIDE_ZH_CN: &str = include_str!("../../../docs/setup.zh-CN.md");
