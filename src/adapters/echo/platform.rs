//! Echo as the daemon sees it without running an account (see `adapters::Platform`).

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::login::{BOT_FIELD, EchoLogin, TOKEN_FIELD, address};
use super::wire::{WireError, whoami};
use crate::adapters::platform::Platform;
use crate::config::Channel;
use crate::port::AccountPort;
use crate::port::login_flow::LoginFlow;
use crate::probe::{Check, CheckId, ProbeInput};
use crate::secrets::{BotIdentity, Credentials};
use crate::supervisor::{Capabilities, Component};

/// The doctor probe's id.
const SERVER: &str = "echo.server";

/// The toy platform.
pub struct Echo;

/// The Echo platform.
pub static PLATFORM: Echo = Echo;

impl Platform for Echo {
    fn channel(&self) -> Channel {
        Channel::Echo
    }

    fn label(&self) -> &'static str {
        "Echo"
    }

    fn capabilities(&self) -> Capabilities {
        super::run::CAPABILITIES
    }

    fn pace(&self) -> crate::port::pace::Pace {
        crate::port::pace::Pace::NONE
    }

    fn bot(&self, login: &Credentials) -> Option<BotIdentity> {
        BotIdentity::named_by(login, BOT_FIELD, self.label(), "bot")
    }

    fn build(&self, port: AccountPort) -> Arc<dyn Component> {
        super::run::build(port)
    }

    fn login(&self) -> &'static dyn LoginFlow {
        &EchoLogin
    }

    fn setup(&self) -> Option<&'static crate::port::setup::Setup> {
        Some(&super::settings::SETUP)
    }

    fn example(&self) -> &'static str {
        include_str!("example.toml")
    }

    fn check_ids(&self) -> &'static [&'static str] {
        &[SERVER]
    }

    fn probe<'a>(&'a self, input: ProbeInput<'a>) -> BoxFuture<'a, Vec<Check>> {
        async move {
            let id = input.spec.key.to_string();
            let address = address(&super::EchoSettings::of(&input.spec.settings));
            let token = input.stored.and_then(|c| c.get(TOKEN_FIELD));
            let token = token.map(|t| t.expose().to_string()).unwrap_or_default();
            let check = match whoami(&address, &token).await {
                Ok(bot) => Check::pass(
                    CheckId::Platform(SERVER),
                    format!("{id}: {address} knows the token of {bot}"),
                ),
                Err(e @ WireError::Refused(_)) => Check::fail(
                    CheckId::Platform(SERVER),
                    format!("{id}: {e}"),
                    format!("run `{}`", input.login),
                ),
                Err(e) => Check::fail(
                    CheckId::Platform(SERVER),
                    format!("{id}: {e}"),
                    format!("check address under [{}]", id.replace(':', ".")),
                ),
            };
            vec![check]
        }
        .boxed()
    }
}
