//! Texts built into the binary, so they work after `cargo install` without the source tree: the
//! documented example configuration (`config example`) and the channel set-up guide (`guide`).
//!
//! The example is put together here from the core's part (`core.toml`: the global keys and the
//! agent, chats, media and speech tables), each platform's own part (its `example.toml`, through
//! [`Platform::example`](crate::adapters::platform::Platform::example)) and the owner's routes
//! (`owner.toml`). `config/example.toml` is the same text for the platforms a release build has;
//! a test keeps the file equal to it.

use crate::config::Channel;

/// The global keys and the agent, chats, media and speech tables.
const CORE: &str = include_str!("core.toml");

/// The line that opens the account tables.
const ACCOUNTS: &str = include_str!("accounts.toml");

/// `[owner]`: the chats that reach the owner.
const OWNER: &str = include_str!("owner.toml");

/// The documented example configuration of `channels`' platforms, each part once, in order.
pub fn example(channels: &[Channel]) -> String {
    let mut text = String::with_capacity(16 * 1024);
    text.push_str(CORE);
    text.push_str(ACCOUNTS);
    for (i, channel) in channels.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(crate::adapters::platform(*channel).example());
    }
    text.push('\n');
    text.push_str(OWNER);
    text
}

/// `docs/setup.md`: creating the Feishu app, the Telegram bot, the DingTalk app and the QQ bot,
/// the WeChat and mail logins, the model key.
pub const GUIDE_EN: &str = include_str!("../../../docs/setup.md");

/// `docs/setup.zh-CN.md`, the same guide in Simplified Chinese.
pub const GUIDE_ZH_CN: &str = include_str!("../../../docs/setup.zh-CN.md");

#[cfg(test)]
mod tests {
    use super::*;

    /// `config/example.toml` is what users open and what the README links: it must stay the
    /// assembled example of the released platforms.
    #[test]
    fn the_shipped_file_is_the_assembled_example() {
        let shipped = include_str!("../../../config/example.toml");
        let assembled = example(&Channel::REAL);
        assert!(
            shipped == assembled,
            "config/example.toml differs from the platforms' parts put together; refresh it with \
             `cargo run -q -- config example > config/example.toml` (in a build without the \
             `testing` feature)"
        );
    }

    #[test]
    fn each_platform_documents_its_own_tables_only() {
        for channel in Channel::ALL {
            let part = crate::adapters::platform(channel).example();
            let opens = format!("[{}.", channel.as_str());
            assert!(
                part.contains(&opens),
                "{channel:?}'s example has no {opens}…] table"
            );
            for other in Channel::ALL.into_iter().filter(|c| *c != channel) {
                let foreign = format!("\n[{}.", other.as_str());
                let foreign_commented = format!("\n# [{}.", other.as_str());
                assert!(
                    !part.contains(&foreign) && !part.contains(&foreign_commented),
                    "{channel:?}'s example opens a table of {other:?}"
                );
            }
        }
    }
}
