//! Mail as the daemon sees it without running an account (see `adapters::Platform`). It lives
//! here, beside the registry, so the mail area (its own area beside the pipeline) never imports
//! the adapters that build it.

mod login;

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::port::login_flow::LoginFlow;
use crate::probe::{Check, ProbeInput};

use crate::adapters::platform::Platform;
use crate::config::Channel;
use crate::port::AccountPort;
use crate::secrets::{BotIdentity, Credentials};
use crate::supervisor::{Capabilities, Component};

/// A mailbox over IMAP and SMTP.
pub struct Mail;

/// The mail platform.
pub static PLATFORM: Mail = Mail;

impl Platform for Mail {
    fn channel(&self) -> Channel {
        Channel::Mail
    }

    fn label(&self) -> &'static str {
        crate::mail::LABEL
    }

    /// Nothing beyond the default: a mailbox is no chat to ask questions in.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    fn pace(&self) -> crate::port::pace::Pace {
        // Digests are sent through another account, which keeps its own pace.
        crate::port::pace::Pace::NONE
    }

    /// A mailbox is no bot: two accounts may read one box (each claims its own mail).
    fn bot(&self, _login: &Credentials) -> Option<BotIdentity> {
        None
    }

    fn build(&self, port: AccountPort) -> Arc<dyn Component> {
        crate::mail::build(port)
    }

    fn login(&self) -> &'static dyn LoginFlow {
        &login::MailLogin
    }

    /// Mail's questions are the wizard's own: its digests name another account.
    fn setup(&self) -> Option<&'static crate::port::setup::Setup> {
        None
    }

    fn example(&self) -> &'static str {
        include_str!("example.toml")
    }

    fn check_ids(&self) -> &'static [&'static str] {
        &[crate::mail::probe::IMAP, crate::mail::probe::SMTP]
    }

    fn probe<'a>(&'a self, input: ProbeInput<'a>) -> BoxFuture<'a, Vec<Check>> {
        async move {
            let crate::config::ChannelSettings::Mail(m) = &input.spec.settings else {
                return Vec::new();
            };
            let (id, account) = (input.spec.key.to_string(), &input.spec.key.account);
            crate::mail::probe::checks(&id, account, m, input.stored, input.login).await
        }
        .boxed()
    }
}
