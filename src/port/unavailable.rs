//! An account whose channel has no adapter in this build: it says so truthfully and stays
//! `failed`, with the command that fixes it.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::AccountPort;
use crate::config::Channel;
use crate::failure::{Action, Command, general};
use crate::supervisor::{Component, ComponentError, HealthHandle};

/// A component for an account whose channel has no adapter in this build.
pub fn unavailable(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(Unavailable { port })
}

/// An account whose channel has no adapter in this build: it says so truthfully and stays `failed`.
struct Unavailable {
    port: AccountPort,
}

impl Component for Unavailable {
    fn run(
        self: Arc<Self>,
        _health: HealthHandle,
        _cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        async move {
            let _login: crate::secrets::Credentials = self.port.login().await?;
            let key = &self.port.spec().key;
            Err(ComponentError::fatal(
                general::CHANNEL_UNAVAILABLE,
                format!(
                    "the {} channel is not available in this build",
                    channel_name(key.channel)
                ),
                Action::Otherwise {
                    first: "upgrade scv-bridge".into(),
                    or: "disable the account with",
                    command: Command::Disable(key.clone()),
                },
            ))
        }
        .boxed()
    }
}

fn channel_name(c: Channel) -> &'static str {
    match c {
        Channel::Wechat => "WeChat",
        Channel::Feishu => "Feishu",
        Channel::Mail => "mail",
    }
}
