//! DingTalk as the daemon sees it without running an account (see `adapters::Platform`).

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

/// DingTalk enterprise-internal robots over Stream mode.
pub struct DingTalk;

/// The DingTalk platform.
pub static PLATFORM: DingTalk = DingTalk;

impl Platform for DingTalk {
    fn channel(&self) -> Channel {
        Channel::Dingtalk
    }

    fn label(&self) -> &'static str {
        "DingTalk"
    }

    fn capabilities(&self) -> Capabilities {
        super::CAPABILITIES
    }

    fn pace(&self) -> crate::port::pace::Pace {
        super::pace::PACE
    }

    fn bot(&self, login: &Credentials) -> Option<BotIdentity> {
        // Two accounts on one client id split the pushes between them (spec §1.8).
        BotIdentity::named_by(
            login,
            super::login::CLIENT_ID_FIELD,
            self.label(),
            "client id",
        )
    }

    fn build(&self, port: AccountPort) -> Arc<dyn Component> {
        super::build(port)
    }

    fn login(&self) -> &'static dyn LoginFlow {
        &super::login::DingTalkLogin
    }

    fn setup(&self) -> Option<&'static crate::port::setup::Setup> {
        Some(&super::settings::SETUP)
    }

    fn example(&self) -> &'static str {
        include_str!("example.toml")
    }

    fn check_ids(&self) -> &'static [&'static str] {
        &[super::probe::APP]
    }

    fn probe<'a>(&'a self, input: ProbeInput<'a>) -> BoxFuture<'a, Vec<Check>> {
        async move {
            let s = &super::DingtalkSettings::of(&input.spec.settings);
            let id = input.spec.key.to_string();
            super::probe::probe(&id, s, input.stored, input.login).await
        }
        .boxed()
    }
}
