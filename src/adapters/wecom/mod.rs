//! The WeCom (企业微信) AI bot account component: the official long connection feeding the
//! conversation pipeline, and a sender that keeps to WeCom's reply handles and send pace.
//!
//! One run: load the stored login (bot id and secret), settle the owner (`owner` in the
//! configuration, else the paired one), attach to the pipeline, then run the link
//! (`scv_wecom::Connection`: dial, subscribe, heartbeat, reconnect with backoff) and read its
//! callbacks. WeCom neither acknowledges nor redelivers a callback (spec §2.1), so each is
//! journaled before anything else is done with it, and deduplicated on its `msgid` by the
//! journal. The link stops for good on `disconnected_event` (another program took the bot:
//! the account fails with that fix and never reconnects, §1.5) and on refused credentials.
//!
//! - [`inbound`]: callbacks → `Inbound`, clicks, drop reasons.
//! - [`intake`]: one run's loop.
//! - [`sender`]: the `ChatSender` (replies on handles, proactive markdown, cards, files).
//! - [`stream`]: answers shown while written, in WeCom's `stream` bubbles.
//! - [`failure`]: the one table from the crate's errors to `Failure`.

mod buttons;
mod early;
mod failure;
mod handles;
mod inbound;
mod intake;
pub mod login;
mod pace;
mod platform;
mod probe;
mod sender;
mod settings;
mod stream;
pub use platform::PLATFORM;
pub use sender::{CAPABILITIES, WecomSender};
pub use settings::WecomSettings;

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_wecom::{Connection, Options};
use tokio_util::sync::CancellationToken;

use crate::config::AccountSpec;
use crate::port::pairing::{CODE_FIELD, EXPIRES_FIELD, OWNER_FIELD, Pairing};
use crate::port::{AccountPort, LoginError, StoredLogin};
use crate::secrets::Credentials;
use crate::supervisor::{Capabilities, Component, ComponentError, HealthHandle, unix_now};

/// The component for one WeCom account.
pub fn build(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(WecomComponent::new(port))
}

/// One WeCom account: the long connection in, the sender out.
pub struct WecomComponent {
    spec: AccountSpec,
    settings: WecomSettings,
    port: AccountPort,
}

/// What the login stored (see `scv-bridge login wecom`).
struct Login {
    bot_id: String,
    secret: String,
    owner: Option<String>,
    pairing: Option<(String, u64)>,
    /// Everything stored, rewritten once when someone pairs.
    credentials: Credentials,
}

impl StoredLogin for Login {
    fn from_credentials(creds: Credentials) -> Result<Self, LoginError> {
        // Ids are case-sensitive (§3): trimmed of stray whitespace, never case-folded.
        let field = |n: &str| {
            creds
                .get(n)
                .map(|s| s.expose().trim().to_string())
                .filter(|s| !s.is_empty())
        };
        let Some(bot_id) = field(login::BOT_ID_FIELD) else {
            return Err(LoginError("the stored login has no bot id"));
        };
        // The secret is kept exactly as typed.
        let Some(secret) = creds
            .get(login::SECRET_FIELD)
            .map(|s| s.expose().to_string())
            .filter(|s| !s.is_empty())
        else {
            return Err(LoginError("the stored login has no secret"));
        };
        let pairing = field(CODE_FIELD).zip(field(EXPIRES_FIELD).and_then(|e| e.parse().ok()));
        Ok(Login {
            bot_id,
            secret,
            owner: field(OWNER_FIELD),
            pairing,
            credentials: creds,
        })
    }
}

impl WecomComponent {
    /// The component for the port's account.
    pub fn new(port: AccountPort) -> Self {
        let spec = port.spec().clone();
        let settings = WecomSettings::of(&spec.settings);
        WecomComponent {
            spec,
            settings,
            port,
        }
    }

    async fn run_inner(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        let login: Login = self.port.login().await?;
        let creds = scv_wecom::Credentials::new(&login.bot_id, &login.secret);
        let options = Options {
            ack_timer: ack_timer(self.port.clock().clone()),
            ..Options::with_url(login::url(&self.settings))
        };
        let conn = Connection::new(creds, options);
        let (owner, pairing) = self.owner(&login);
        let handles = Arc::new(handles::Handles::default());
        let held = crate::port::held::HeldSends::new(self.port.state().clone());
        held.prune().await;
        let sender = Arc::new(WecomSender::new(
            conn.clone(),
            self.spec.key.clone(),
            handles.clone(),
            held.clone(),
            self.spec.language,
            health.clone(),
        ));
        let mut run = intake::Run::start(intake::Setup {
            port: self.port.clone(),
            conn,
            owner,
            pairing,
            credentials: login.credentials,
            sender,
            handles,
            held,
            health,
        });
        run.run(cancel).await
    }

    /// The owner (configured, else paired) and the code that may pair one, when none is
    /// configured.
    fn owner(&self, login: &Login) -> (Option<String>, Option<Pairing>) {
        if let Some(id) = self
            .settings
            .owner
            .as_deref()
            .map(str::trim)
            .filter(|o| !o.is_empty())
        {
            return (Some(id.to_string()), None);
        }
        let pairing = login
            .pairing
            .as_ref()
            .map(|(code, exp)| Pairing::new(code.clone(), *exp))
            .filter(|p| p.is_open(unix_now()));
        (login.owner.clone(), pairing)
    }
}

/// Times the wait for WeCom's answer to a frame (5 s, §5) on the daemon's clock, so a test can
/// move it by hand: an answer that never comes then leaves a frame in doubt at a step the test
/// chooses, not at a jump of a paused clock.
fn ack_timer(clock: crate::clock::Clock) -> scv_wecom::Timer {
    scv_wecom::Timer::new(move |d| {
        let clock = clock.clone();
        Box::pin(async move {
            let until = clock.now_ms().saturating_add(d.as_millis() as u64);
            clock.sleep_until(until).await;
        })
    })
}

impl Component for WecomComponent {
    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        self.run_inner(health, cancel).boxed()
    }
}
