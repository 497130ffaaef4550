//! Feishu / Lark as the daemon sees it without running an account (see `adapters::Platform`).

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::port::login_flow::LoginFlow;
use crate::probe::{Check, ProbeInput};

use super::login::APP_ID_FIELD;
use crate::adapters::platform::Platform;
use crate::config::Channel;
use crate::port::AccountPort;
use crate::secrets::{BotIdentity, Credentials};
use crate::supervisor::{Capabilities, Component};

/// Feishu / Lark open-platform bots.
pub struct Feishu;

/// The Feishu platform.
pub static PLATFORM: Feishu = Feishu;

impl Platform for Feishu {
    fn channel(&self) -> Channel {
        Channel::Feishu
    }

    fn label(&self) -> &'static str {
        "Feishu"
    }

    fn capabilities(&self) -> Capabilities {
        super::CAPABILITIES
    }

    fn pace(&self) -> crate::port::pace::Pace {
        super::PACE
    }

    fn bot(&self, login: &Credentials) -> Option<BotIdentity> {
        BotIdentity::named_by(login, APP_ID_FIELD, self.label(), "app id")
    }

    fn build(&self, port: AccountPort) -> Arc<dyn Component> {
        super::build(port)
    }

    fn login(&self) -> &'static dyn LoginFlow {
        &super::login::FeishuLogin
    }

    fn setup(&self) -> Option<&'static crate::port::setup::Setup> {
        Some(&super::settings::SETUP)
    }

    fn example(&self) -> &'static str {
        include_str!("example.toml")
    }

    fn check_ids(&self) -> &'static [&'static str] {
        &[super::probe::ENDPOINT, super::probe::APP]
    }

    fn probe<'a>(&'a self, input: ProbeInput<'a>) -> BoxFuture<'a, Vec<Check>> {
        async move {
            let s = &super::FeishuSettings::of(&input.spec.settings);
            let id = input.spec.key.to_string();
            super::probe::probe(&id, s, input.stored, input.login).await
        }
        .boxed()
    }
}
