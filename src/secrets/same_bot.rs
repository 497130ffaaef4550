//! Two accounts logged in to the same bot: the platform hands each message to one connection
//! only (WeChat's `getupdates` cursor, Feishu's long connection), so both would miss messages.
//! Found from the stored logins (WeChat `bot_id`, Feishu `app_id`); said in `doctor`, the
//! daemon's log and each account's status.

use std::collections::BTreeMap;

use super::Credentials;
use crate::config::{AccountKey, Channel, CommandLine};

/// Accounts of one channel that share one bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedBot {
    /// The channel.
    pub channel: Channel,
    /// The bot's id as the platform names it (a WeChat bot id, a Feishu app id; not a secret).
    pub bot: String,
    /// The accounts, sorted (two or more).
    pub accounts: Vec<AccountKey>,
}

impl SharedBot {
    /// What is wrong and why it matters, for people.
    pub fn problem(&self) -> String {
        let (platform, what) = self.platform();
        let names: Vec<String> = self.accounts.iter().map(ToString::to_string).collect();
        format!(
            "{} are logged in to the same {platform} bot ({what} {}): {platform} gives each \
             message to only one of them, so each misses some",
            names.join(" and "),
            self.bot,
        )
    }

    /// The commands that fix it (for the last account; any one of them would do).
    pub fn fix(&self, commands: &CommandLine) -> String {
        let last = self
            .accounts
            .last()
            .map(|k| k.account.as_str())
            .unwrap_or_default();
        format!(
            "log one of them in to another bot (`{}`) or turn it off (`{}`)",
            commands.command(&format!("login {} {last}", self.channel)),
            commands.command(&format!("channel disable {} {last}", self.channel)),
        )
    }

    /// The problem and its fix in one line (the daemon's log and status).
    pub fn warning(&self, commands: &CommandLine) -> String {
        format!("{}; {}", self.problem(), self.fix(commands))
    }

    fn platform(&self) -> (&'static str, &'static str) {
        match self.channel {
            Channel::Feishu => ("Feishu", "app id"),
            _ => ("WeChat", "bot id"),
        }
    }
}

/// The groups of accounts whose stored logins name the same bot.
pub fn shared_bots<'a>(
    logins: impl IntoIterator<Item = (&'a AccountKey, &'a Credentials)>,
) -> Vec<SharedBot> {
    let mut by_bot: BTreeMap<(Channel, String), Vec<AccountKey>> = BTreeMap::new();
    for (key, creds) in logins {
        let field = match key.channel {
            Channel::Wechat => "bot_id",
            Channel::Feishu => "app_id",
            Channel::Mail => continue,
        };
        if let Some(bot) = creds.get(field).map(|b| b.expose().trim().to_string())
            && !bot.is_empty()
        {
            by_bot
                .entry((key.channel, bot))
                .or_default()
                .push(key.clone());
        }
    }
    by_bot
        .into_iter()
        .filter(|(_, a)| a.len() > 1)
        .map(|((channel, bot), mut accounts)| {
            accounts.sort();
            SharedBot {
                channel,
                bot,
                accounts,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> AccountKey {
        AccountKey::parse(s).expect("key")
    }

    #[test]
    fn same_bot_id_or_app_id_is_found_and_other_bots_are_not() {
        let logins = [
            (
                key("wechat:a"),
                Credentials::default().with("bot_id", "b1@im.bot"),
            ),
            (
                key("wechat:b"),
                Credentials::default().with("bot_id", "b1@im.bot"),
            ),
            (
                key("wechat:c"),
                Credentials::default().with("bot_id", "b2@im.bot"),
            ),
            (
                key("feishu:x"),
                Credentials::default().with("app_id", "cli_1"),
            ),
            (
                key("feishu:y"),
                Credentials::default().with("app_id", "cli_2"),
            ),
            (
                key("mail:m"),
                Credentials::default().with("bot_id", "b1@im.bot"),
            ),
        ];
        let found = shared_bots(logins.iter().map(|(k, c)| (k, c)));
        assert_eq!(
            found,
            vec![SharedBot {
                channel: Channel::Wechat,
                bot: "b1@im.bot".into(),
                accounts: vec![key("wechat:a"), key("wechat:b")],
            }]
        );
        let w = found[0].warning(&CommandLine::default());
        assert!(
            w.starts_with("wechat:a and wechat:b are logged in to the same WeChat bot"),
            "{w}"
        );
        assert!(w.contains("scv-bridge login wechat b"), "{w}");
        assert!(w.contains("scv-bridge channel disable wechat b"), "{w}");
    }

    #[test]
    fn one_feishu_app_in_two_accounts_is_found() {
        let logins = [
            (
                key("feishu:x"),
                Credentials::default().with("app_id", "cli_1"),
            ),
            (
                key("feishu:y"),
                Credentials::default().with("app_id", "cli_1"),
            ),
        ];
        let found = shared_bots(logins.iter().map(|(k, c)| (k, c)));
        assert_eq!(found.len(), 1);
        assert!(
            found[0]
                .warning(&CommandLine::default())
                .contains("same Feishu bot (app id cli_1)")
        );
    }
}
