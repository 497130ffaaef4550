//! QQ as the daemon sees it without running an account (see `adapters::Platform`).

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::adapters::platform::Platform;
use crate::config::Channel;
use crate::port::AccountPort;
use crate::port::login_flow::LoginFlow;
use crate::probe::{Check, ProbeInput};
use crate::secrets::{BotIdentity, Credentials};
use crate::supervisor::{Capabilities, Component};

/// QQ official bots (API v2).
pub struct Qq;

/// The QQ platform.
pub static PLATFORM: Qq = Qq;

impl Platform for Qq {
    fn channel(&self) -> Channel {
        Channel::Qq
    }

    fn label(&self) -> &'static str {
        "QQ"
    }

    fn capabilities(&self) -> Capabilities {
        super::CAPABILITIES
    }

    fn pace(&self) -> crate::port::pace::Pace {
        super::sender::PACE
    }

    fn bot(&self, login: &Credentials) -> Option<BotIdentity> {
        BotIdentity::named_by(login, super::login::APP_ID_FIELD, self.label(), "AppID")
    }

    fn build(&self, port: AccountPort) -> Arc<dyn Component> {
        super::build(port)
    }

    fn login(&self) -> &'static dyn LoginFlow {
        &super::login::QqLogin
    }

    fn setup(&self) -> Option<&'static crate::port::setup::Setup> {
        Some(&super::settings::SETUP)
    }

    fn example(&self) -> &'static str {
        include_str!("example.toml")
    }

    fn check_ids(&self) -> &'static [&'static str] {
        &[super::probe::BOT, super::probe::GATEWAY]
    }

    fn probe<'a>(&'a self, input: ProbeInput<'a>) -> BoxFuture<'a, Vec<Check>> {
        async move {
            let s = &super::QqSettings::of(&input.spec.settings);
            let id = input.spec.key.to_string();
            super::probe::probe(&id, s, input.stored, input.login).await
        }
        .boxed()
    }
}
