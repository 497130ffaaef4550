//! WeChat as the daemon sees it without running an account (see `adapters::Platform`).

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::port::login_flow::LoginFlow;
use crate::probe::{Check, ProbeInput};

use super::login::BOT_ID_FIELD;
use crate::adapters::platform::Platform;
use crate::config::Channel;
use crate::port::AccountPort;
use crate::secrets::{BotIdentity, Credentials};
use crate::supervisor::{Capabilities, Component};

/// WeChat through the iLink bot API.
pub struct Wechat;

/// The WeChat platform.
pub static PLATFORM: Wechat = Wechat;

impl Platform for Wechat {
    fn channel(&self) -> Channel {
        Channel::Wechat
    }

    fn label(&self) -> &'static str {
        "WeChat"
    }

    fn capabilities(&self) -> Capabilities {
        super::CAPABILITIES
    }

    fn pace(&self) -> crate::port::pace::Pace {
        super::PACE
    }

    fn bot(&self, login: &Credentials) -> Option<BotIdentity> {
        BotIdentity::named_by(login, BOT_ID_FIELD, self.label(), "bot id")
    }

    fn build(&self, port: AccountPort) -> Arc<dyn Component> {
        super::build(port)
    }

    fn login(&self) -> &'static dyn LoginFlow {
        &super::login::WechatLogin
    }

    fn setup(&self) -> Option<&'static crate::port::setup::Setup> {
        Some(&super::settings::SETUP)
    }

    fn example(&self) -> &'static str {
        include_str!("example.toml")
    }

    fn check_ids(&self) -> &'static [&'static str] {
        &[super::probe::ENDPOINT]
    }

    fn probe<'a>(&'a self, input: ProbeInput<'a>) -> BoxFuture<'a, Vec<Check>> {
        async move {
            let s = &super::WechatSettings::of(&input.spec.settings);
            let id = input.spec.key.to_string();
            vec![super::probe::probe(&id, s, input.stored).await]
        }
        .boxed()
    }
}
