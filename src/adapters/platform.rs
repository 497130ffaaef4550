//! What a platform is to the daemon: one value per channel, owning the facts about it that the
//! rest of the bridge needs without running an account (its name for people, what its accounts
//! can do, how its stored login names its bot) and how an account of it is built.
//!
//! Each platform makes its own value (`wechat::PLATFORM`, `feishu::PLATFORM`,
//! `telegram::PLATFORM`, `wecom::PLATFORM`, `dingtalk::PLATFORM`, `qq::PLATFORM`, and mail's in
//! `adapters/mail_platform/`); `adapters::platform` is the one place that maps a [`Channel`]
//! to it. Callers
//! iterate `Channel::ALL` and ask the value; none matches on a channel themselves, so a new
//! platform is its folder, its `Channel` variant and one line in [`platform`].

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::config::Channel;
use crate::port::AccountPort;
use crate::port::login_flow::LoginFlow;
use crate::probe::{Check, ProbeInput};
use crate::secrets::{BotIdentity, Credentials};
use crate::supervisor::{Capabilities, Component};

/// One platform. Implementations are stateless values; every method is cheap.
pub trait Platform: Send + Sync + 'static {
    /// The channel it serves.
    fn channel(&self) -> Channel;

    /// Its name for people ("WeChat", "Feishu", "mail"); stable, used in texts.
    fn label(&self) -> &'static str;

    /// What its accounts can do, known without running one (pure: no IO, no locks).
    fn capabilities(&self) -> Capabilities;

    /// How fast it may be sent to, from its documented limits (pure): the core keeps the chat's
    /// gap, the adapter's pacer the bot's and the groups' from this same value.
    fn pace(&self) -> crate::port::pace::Pace;

    /// The bot a stored login names, for the same-bot check; `None` for a login that names
    /// none, or a platform without bots (mail).
    fn bot(&self, login: &Credentials) -> Option<BotIdentity>;

    /// The component for one account of this platform, from its port (the account's spec is
    /// `port.spec()`); every platform, mail included, is built from the port alone.
    fn build(&self, port: AccountPort) -> Arc<dyn Component>;

    /// Its login, as steps `login`, `init` (and the console) walk with any UI.
    fn login(&self) -> &'static dyn LoginFlow;

    /// What `init` asks when it adds an account of it; `None` for mail, whose questions are
    /// the wizard's own (digests name another account).
    fn setup(&self) -> Option<&'static crate::port::setup::Setup>;

    /// Its part of `config example`: its account tables with every key it takes, documented
    /// (`example.toml` in its folder). `config/example.toml` is these parts put together.
    fn example(&self) -> &'static str;

    /// The ids of its doctor probes (`wechat.endpoint`), pinned like the core's.
    fn check_ids(&self) -> &'static [&'static str];

    /// Its doctor probes for one enabled account, run when no daemon answers: network checks
    /// that spend no platform quota, each with its fix.
    fn probe<'a>(&'a self, input: ProbeInput<'a>) -> BoxFuture<'a, Vec<Check>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::platform;

    /// The real platforms: what these pins are about (the toy one of the tests is not pinned).
    fn all() -> impl Iterator<Item = &'static dyn Platform> {
        Channel::REAL.into_iter().map(platform)
    }

    #[test]
    fn each_channel_has_its_own_platform() {
        for c in Channel::ALL {
            assert_eq!(platform(c).channel(), c);
        }
        let labels: Vec<&str> = all().map(|p| p.label()).collect();
        assert_eq!(
            labels,
            [
                "WeChat", "Feishu", "Telegram", "WeCom", "DingTalk", "QQ", "mail"
            ]
        );
    }

    #[test]
    fn each_platform_declares_its_own_pace() {
        // Least gaps in ms (per chat, over the bot, into one group), in the registry's order:
        // only WeChat paces the whole account at 1 s; the others keep their own documented rates.
        let paces: Vec<[u128; 3]> = all()
            .map(|p| p.pace())
            .map(|p| [p.per_chat, p.per_bot, p.per_group].map(|d| d.as_millis()))
            .collect();
        assert_eq!(
            paces,
            [
                [1000, 1000, 0],
                [220, 22, 0],
                [1000, 33, 3000],
                [0, 2000, 0],
                [50, 50, 3000],
                [300, 0, 0],
                [0, 0, 0],
            ]
        );
    }

    #[test]
    fn a_login_names_its_bot_only_where_the_platform_has_one() {
        let both = Credentials::default()
            .with("bot_id", "b@im.bot")
            .with("app_id", "cli_1");
        let bots: Vec<Option<BotIdentity>> = all().map(|p| p.bot(&both)).collect();
        assert_eq!(
            bots,
            [
                Some(BotIdentity {
                    platform: "WeChat",
                    called: "bot id",
                    id: "b@im.bot".into()
                }),
                Some(BotIdentity {
                    platform: "Feishu",
                    called: "app id",
                    id: "cli_1".into()
                }),
                // Telegram's login names its bot under the same field name as WeChat's.
                Some(BotIdentity {
                    platform: "Telegram",
                    called: "bot id",
                    id: "b@im.bot".into()
                }),
                // So does WeCom's (the AI bot's id).
                Some(BotIdentity {
                    platform: "WeCom",
                    called: "bot id",
                    id: "b@im.bot".into()
                }),
                // DingTalk names its app by `client_id`, which this login lacks.
                None,
                // QQ's login names its bot by AppID, under the same field name as Feishu's.
                Some(BotIdentity {
                    platform: "QQ",
                    called: "AppID",
                    id: "cli_1".into()
                }),
                None,
            ]
        );
        assert!(
            all().all(|p| p.bot(&Credentials::default()).is_none()),
            "an empty login names no bot"
        );
    }
}
