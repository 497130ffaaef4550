//! Two accounts logged in to the same bot: the platform hands each message to one connection
//! only (WeChat's `getupdates` cursor, Feishu's long connection), so both would miss messages.
//! Found from the stored logins through each platform's own reading of them
//! (`adapters::Platform::bot`); said in `doctor`, the daemon's log and each account's status.

use std::collections::BTreeMap;

use super::Credentials;
use crate::config::{AccountKey, Channel, CommandLine};

/// The bot a stored login names, as its platform reads it (made by `adapters::Platform::bot`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BotIdentity {
    /// The platform's name for people ("WeChat").
    pub platform: &'static str,
    /// What the platform calls the id ("bot id", "app id").
    pub called: &'static str,
    /// The id itself (not a secret).
    pub id: String,
}

impl BotIdentity {
    /// The bot `login`'s `field` names, as `platform` calls it (`called`); `None` when the
    /// field is missing or blank. What a platform's reading of its login is made of.
    pub fn named_by(
        login: &Credentials,
        field: &str,
        platform: &'static str,
        called: &'static str,
    ) -> Option<BotIdentity> {
        let id = login.get(field)?.expose().trim().to_string();
        (!id.is_empty()).then_some(BotIdentity {
            platform,
            called,
            id,
        })
    }
}

/// Accounts of one channel that share one bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedBot {
    /// The channel.
    pub channel: Channel,
    /// The bot they share.
    pub bot: BotIdentity,
    /// The accounts, sorted (two or more).
    pub accounts: Vec<AccountKey>,
}

impl SharedBot {
    /// What is wrong and why it matters, for people.
    pub fn problem(&self) -> String {
        let BotIdentity {
            platform,
            called,
            id,
        } = &self.bot;
        let names: Vec<String> = self.accounts.iter().map(ToString::to_string).collect();
        format!(
            "{} are logged in to the same {platform} bot ({called} {id}): {platform} gives each \
             message to only one of them, so each misses some",
            names.join(" and "),
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
}

/// The groups of accounts whose stored logins name the same bot; `identify` is the platforms'
/// reading of a login (`None`: a login that names no bot, a blank id included, or a platform
/// without one; see [`BotIdentity::named_by`]).
pub fn shared_bots<'a>(
    logins: impl IntoIterator<Item = (&'a AccountKey, &'a Credentials)>,
    identify: impl Fn(&AccountKey, &Credentials) -> Option<BotIdentity>,
) -> Vec<SharedBot> {
    let mut by_bot: BTreeMap<(Channel, BotIdentity), Vec<AccountKey>> = BTreeMap::new();
    for (key, creds) in logins {
        if let Some(bot) = identify(key, creds) {
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

    /// A reading of logins like a platform's: the `bot` field names the bot; mail has none.
    fn identify(k: &AccountKey, c: &Credentials) -> Option<BotIdentity> {
        (k.channel != Channel::Mail)
            .then(|| BotIdentity::named_by(c, "bot", "Chatapp", "bot id"))
            .flatten()
    }

    fn login(bot: &str) -> Credentials {
        Credentials::default().with("bot", bot)
    }

    #[test]
    fn accounts_of_one_channel_naming_one_bot_are_found_and_others_are_not() {
        let logins = [
            (key("wechat:a"), login("b1@im.bot")),
            (key("wechat:b"), login("b1@im.bot")),
            (key("wechat:c"), login("b2@im.bot")),
            // A blank id names no bot.
            (key("wechat:d"), login("  ")),
            (key("wechat:e"), login("  ")),
            // The same id under another channel is another bot.
            (key("feishu:x"), login("b1@im.bot")),
            (key("mail:m"), login("b1@im.bot")),
        ];
        let found = shared_bots(logins.iter().map(|(k, c)| (k, c)), identify);
        assert_eq!(
            found,
            vec![SharedBot {
                channel: Channel::Wechat,
                bot: BotIdentity {
                    platform: "Chatapp",
                    called: "bot id",
                    id: "b1@im.bot".into(),
                },
                accounts: vec![key("wechat:a"), key("wechat:b")],
            }]
        );
        let w = found[0].warning(&CommandLine::default());
        assert!(
            w.starts_with(
                "wechat:a and wechat:b are logged in to the same Chatapp bot (bot id b1@im.bot)"
            ),
            "{w}"
        );
        assert!(w.contains("scv-bridge login wechat b"), "{w}");
        assert!(w.contains("scv-bridge channel disable wechat b"), "{w}");
    }
}
