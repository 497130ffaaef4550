//! Which platform and which account: the names every layer shares.

use std::fmt;

/// A chat or mail platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Channel {
    /// WeChat through the iLink bot API.
    Wechat,
    /// Feishu / Lark open-platform bot.
    Feishu,
    /// A Telegram bot through the Bot API (long polling).
    Telegram,
    /// A WeCom (企业微信) AI bot over its long connection.
    Wecom,
    /// A DingTalk (钉钉) enterprise-internal robot over Stream mode (`[dingtalk.ACCOUNT]`).
    Dingtalk,
    /// A QQ official bot (API v2: one-to-one chats and group messages that @ it), the
    /// `[qq.ACCOUNT]` tables.
    Qq,
    /// A mailbox over IMAP and SMTP.
    Mail,
    /// A toy platform for tests (`adapters::echo`), never in a release build.
    #[cfg(feature = "testing")]
    Echo,
}

impl Channel {
    /// Every channel, in configuration order.
    #[cfg(not(feature = "testing"))]
    pub const ALL: [Channel; 7] = Self::REAL;

    /// Every channel, in configuration order; the toy one last.
    #[cfg(feature = "testing")]
    pub const ALL: [Channel; 8] = {
        let r = Self::REAL;
        [r[0], r[1], r[2], r[3], r[4], r[5], r[6], Channel::Echo]
    };

    /// The real platforms, in configuration order: what a release build has, and what the
    /// tests that pin the platforms' names, ids and figures pin (a toy platform is not pinned).
    pub const REAL: [Channel; 7] = [
        Channel::Wechat,
        Channel::Feishu,
        Channel::Telegram,
        Channel::Wecom,
        Channel::Dingtalk,
        Channel::Qq,
        Channel::Mail,
    ];

    /// The lowercase name used in configuration, ids and the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Wechat => "wechat",
            Channel::Feishu => "feishu",
            Channel::Mail => "mail",
            Channel::Telegram => "telegram",
            Channel::Wecom => "wecom",
            Channel::Dingtalk => "dingtalk",
            Channel::Qq => "qq",
            #[cfg(feature = "testing")]
            Channel::Echo => "echo",
        }
    }

    /// Parses a lowercase channel name.
    pub fn parse(s: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Names one configured account: `<channel>:<account>`. Created by configuration; stable for the account's life.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccountKey {
    /// The platform.
    pub channel: Channel,
    /// The account's name in the configuration.
    pub account: String,
}

impl AccountKey {
    /// A key from its parts.
    pub fn new(channel: Channel, account: impl Into<String>) -> Self {
        AccountKey {
            channel,
            account: account.into(),
        }
    }

    /// Parses `channel:account`.
    pub fn parse(s: &str) -> Option<AccountKey> {
        let (c, a) = s.split_once(':')?;
        let channel = Channel::parse(c)?;
        valid_account_name(a).then(|| AccountKey::new(channel, a))
    }
}

impl fmt::Display for AccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.channel, self.account)
    }
}

/// Whether `name` can name an account: letters, digits, `-` and `_`, at most 64 characters.
pub fn valid_account_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
