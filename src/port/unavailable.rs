//! An account whose channel has no adapter in this build: it says so truthfully and stays
//! `failed`, with the command that fixes it.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::AccountPort;
use crate::failure::{Action, Command, general};
use crate::supervisor::{Component, ComponentError, HealthHandle};

/// A component for an account whose channel (`label`, its platform's name for people) has no
/// adapter in this build.
pub fn unavailable(port: AccountPort, label: &'static str) -> Arc<dyn Component> {
    Arc::new(Unavailable { port, label })
}

/// An account whose channel has no adapter in this build: it says so truthfully and stays `failed`.
struct Unavailable {
    port: AccountPort,
    label: &'static str,
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
                format!("the {} channel is not available in this build", self.label),
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
