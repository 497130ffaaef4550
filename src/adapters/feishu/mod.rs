//! The Feishu / Lark account component: the long connection (or HTTP callbacks) in, the IM API out.
//!
//! One run: load the credentials, fetch the bot's identity once (never polled), settle who the
//! owner is (config `owner`, `app_owner`, or the paired owner in the credentials), attach to the
//! conversation pipeline, then keep scv-feishu's long connection open. scv-feishu reconnects the
//! socket by itself (fresh endpoint, jitter); a fatal outcome (bad secret, forbidden, connection
//! limit) ends the run and is classified once, here, for the supervisor.
//!
//! Every event is journaled through [`Conversation::accept`](crate::conversation::Conversation)
//! before its ACK is written, and answered later by the pipeline's workers, so a slow agent never
//! makes Feishu re-push. `connected` comes only from pongs and frames.
//!
//! In callback mode (`mode = "webhook"`) a listener takes the events instead (`webhook`); both
//! transports hand the session the same `delivery` items.
//!
//! Layout: `session` (per-run event handling), `ingest` (the thread the long connection and
//! the session run on), `inbound` (event → `Inbound`), `sender`
//! (`ChatSender` and the error table), `pairing` (one-time owner codes), `cards` (yes/no clicks),
//! `confirm` (the confirm service as the click handler), `media` (received media as references,
//! fetched through the resource endpoint), `media_send` (workspace files uploaded and sent),
//! `stream` (long answers written into CardKit cards while the agent writes them).

mod address;
mod cards;
mod confirm;
mod delivery;
mod failure;
mod inbound;
mod ingest;
pub mod login;
mod markdown;
mod media;
mod media_send;
/// Owner pairing is the port's, for every platform whose login names no owner.
pub(crate) use crate::port::pairing;
mod pending_owner;
mod platform;
mod probe;
pub mod render;
mod scan;
mod sender;
mod session;
mod settings;
mod stream;
mod typing;
mod webhook;
pub use platform::PLATFORM;
pub use settings::{FeishuMode, FeishuSettings};

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_feishu::ws::{LongConnection, WsOptions};
use scv_feishu::{Client, ClientOptions, Domain};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use cards::{CardAnswerHandler, CardClick, ClickOutcome, HANDLER_DEADLINE};
pub use confirm::ConfirmCards;
pub use inbound::ReplyRef;
pub use sender::{CAPABILITIES, FeishuSender, MAX_CHARS, PACE};
pub use webhook::{DEFAULT_LISTEN as DEFAULT_WEBHOOK_LISTEN, ENCRYPT_KEY_FIELD, TOKEN_FIELD};

use crate::config::{AccountKey, AccountSpec};
use crate::failure::{Action, Command, general};
use crate::port::AccountPort;
use crate::secrets::Credentials;
use crate::supervisor::{Capabilities, Component, ComponentError, HealthHandle, unix_now};
use failure::failure;
use pairing::{CODE_FIELD, EXPIRES_FIELD, OWNER_FIELD, Pairing};
use session::{Session, SessionSetup};

/// `owner = "app_owner"`: take the owner from the application API.
pub const APP_OWNER: &str = "app_owner";

/// HTTP callbacks waiting for the session; when full, a callback is answered 500 (re-sent).
const DELIVERY_QUEUE: usize = 1024;
/// Long-connection events waiting for the session. Small on purpose: when it is full the
/// connection stops reading and the rest of a burst waits in the socket, so an event read from
/// it is ACKed within about this many events' work (its `biz_rt`), not behind a thousand.
const SOCKET_QUEUE: usize = 64;
/// Deliveries journaled in one store transaction.
const MAX_BATCH: usize = 64;

/// Up to [`MAX_BATCH`] deliveries: `first` and whatever else is already queued.
fn take_batch<T: Into<delivery::Incoming>>(
    first: T,
    rx: &mut mpsc::Receiver<T>,
) -> Vec<delivery::Incoming> {
    let mut batch = vec![first.into()];
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(d) => batch.push(d.into()),
            Err(_) => break,
        }
    }
    batch
}

/// The component for one Feishu account; the owner's yes/no clicks go to the port's answers.
pub fn build(port: AccountPort) -> Arc<dyn Component> {
    let cards = port
        .answers()
        .map(|a| Arc::new(ConfirmCards(a)) as Arc<dyn CardAnswerHandler>);
    build_with(port, cards)
}

/// The component for one Feishu account; `cards` receives the owner's yes/no clicks (tests
/// hand in their own handler).
pub fn build_with(
    port: AccountPort,
    cards: Option<Arc<dyn CardAnswerHandler>>,
) -> Arc<dyn Component> {
    let spec = port.spec().clone();
    let settings = FeishuSettings::of(&spec.settings);
    Arc::new(FeishuComponent {
        spec,
        port,
        settings,
        cards,
    })
}

/// One Feishu account.
struct FeishuComponent {
    spec: AccountSpec,
    port: AccountPort,
    settings: FeishuSettings,
    cards: Option<Arc<dyn CardAnswerHandler>>,
}

impl Component for FeishuComponent {
    fn capabilities(&self) -> Capabilities {
        sender::CAPABILITIES
    }

    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        async move {
            tokio::select! {
                // Setup does network IO (token, bot info); shutdown must not wait for it.
                _ = cancel.cancelled() => Ok(()),
                r = self.clone().run_inner(health, cancel.clone()) => r,
            }
        }
        .boxed()
    }
}

impl FeishuComponent {
    async fn run_inner(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        let account = self.spec.key.clone();
        let (client, setup) = self.setup(&account).await?;
        let callbacks = match self.settings.mode {
            FeishuMode::Webhook => Some(webhook::config(&setup.credentials, &account)?),
            FeishuMode::Websocket => None,
        };
        let mut session = Session::start(
            setup,
            client.clone(),
            &self.port,
            health,
            self.cards.clone(),
        );
        match callbacks {
            Some(config) => {
                let listen = self.settings.webhook_listen.as_deref();
                webhook::run(&mut session, config, listen, &self.spec.key, cancel).await
            }
            None => {
                ingest::on_own_thread(async move {
                    Self::run_socket(&mut session, client, &account, cancel).await
                })
                .await?
            }
        }
    }

    /// Keeps the long connection open and hands its deliveries to the session (on the ingest
    /// thread, `ingest`).
    async fn run_socket(
        session: &mut Session,
        client: Client,
        account: &AccountKey,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        let conn = Arc::new(LongConnection::new(client, WsOptions::default()));
        let (tx, mut rx) = mpsc::channel(SOCKET_QUEUE);
        let stop = cancel.child_token();
        let mut runner = tokio::spawn({
            let (conn, stop) = (conn.clone(), stop.clone());
            async move { conn.run(tx, stop).await }
        });
        let mut status = conn.status();
        let mut runner_done = false;
        let result = loop {
            tokio::select! {
                _ = cancel.cancelled() => break Ok(()),
                ended = &mut runner => {
                    runner_done = true;
                    break match ended {
                        Ok(Ok(())) => Err(ComponentError::transient(failure::CONNECTION_CLOSED, "the long connection stopped")),
                        Ok(Err(e)) => Err(failure(&e, account)),
                        Err(e) => Err(ComponentError::transient(general::TASK_FAILED, format!("the long connection task failed: {e}"))),
                    };
                }
                changed = status.changed() => {
                    if changed.is_ok() {
                        let s = status.borrow_and_update().clone();
                        session.link_status(&s);
                    }
                }
                Some(first) = rx.recv() => {
                    let batch = take_batch(first, &mut rx);
                    session.handle(batch).await;
                }
            }
        };
        stop.cancel();
        if !runner_done {
            let _ = runner.await;
        }
        result
    }

    /// Loads credentials, checks settings, fetches the bot's identity and settles the owner.
    async fn setup(&self, account: &AccountKey) -> Result<(Client, SessionSetup), ComponentError> {
        let creds: Credentials = self.port.login().await?;
        let field = |k: &str| creds.get(k).map(|s| s.expose().to_string());
        let (Some(app_id), Some(app_secret)) = (field("app_id"), field("app_secret")) else {
            return Err(ComponentError::fatal(
                general::CREDENTIALS_INCOMPLETE,
                "the stored credentials lack the app ID or secret",
                Action::Relogin(account.clone()),
            ));
        };
        let domain: Domain = self
            .settings
            .domain
            .as_deref()
            .unwrap_or("feishu")
            .parse()
            .map_err(|e: scv_feishu::domain::DomainError| {
                ComponentError::fatal(
                    failure::BAD_DOMAIN,
                    e.to_string(),
                    Action::Reload {
                        first: "fix `domain` in the configuration".into(),
                    },
                )
            })?;
        let options = ClientOptions::new(
            domain,
            scv_feishu::Credentials::new(app_id.clone(), app_secret),
        );
        let client = Client::new(options).map_err(|e| failure(&e, account))?;
        // Once per start, never polled: the free API quota is small.
        let bot = client.bot_info().await.map_err(|e| failure(&e, account))?;
        let (owner, owner_from_config) = self.owner(&client, &creds, account).await?;
        let now = unix_now();
        let pairing = match (owner_from_config, field(CODE_FIELD), field(EXPIRES_FIELD)) {
            (false, Some(code), Some(exp)) => exp
                .parse::<u64>()
                .ok()
                .map(|exp| Pairing::new(code, exp))
                .filter(|p| p.is_open(now)),
            _ => None,
        };
        // A scan's candidate binds only while nobody owns the account (A1.8).
        let pending_owner = match (owner_from_config, &owner) {
            (false, None) => pending_owner::candidate(&creds, &bot.open_id, now),
            _ => None,
        };
        Ok((
            client,
            SessionSetup {
                app_id,
                bot_open_id: bot.open_id,
                owner,
                pairing,
                pending_owner,
                credentials: creds,
            },
        ))
    }

    /// The owner's open_id and whether the configuration fixed it (then pairing is off).
    async fn owner(
        &self,
        client: &Client,
        creds: &Credentials,
        account: &AccountKey,
    ) -> Result<(Option<String>, bool), ComponentError> {
        match self.settings.owner.as_deref().map(str::trim) {
            Some(APP_OWNER) => {
                let app = client.app_owner().await.map_err(|e| failure(&e, account))?;
                match app.open_id() {
                    Some(id) => Ok((Some(id.to_string()), true)),
                    None => Err(ComponentError::fatal(
                        failure::NO_APP_OWNER,
                        "the application API names no owner for this app",
                        Action::Otherwise {
                            first: "set owner = \"ou_…\" in the configuration".into(),
                            or: "remove it and pair with",
                            command: Command::Login(account.clone()),
                        },
                    )),
                }
            }
            Some(id) if !id.is_empty() => Ok((Some(id.to_string()), true)),
            _ => Ok((
                creds
                    .get(OWNER_FIELD)
                    .map(|s| s.expose().to_string())
                    .filter(|s| !s.is_empty()),
                false,
            )),
        }
    }
}
