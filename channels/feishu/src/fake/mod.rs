//! A fake Feishu open platform for tests (feature `fake`), served on `127.0.0.1:0`.
//!
//! It speaks the real wire formats: the token endpoint (expiry, revocation), endpoint
//! discovery with one-time tickets, a WebSocket server exchanging protobuf `pbbp2.Frame`s
//! (refusing frames missing fields 1-4, answering pings with pongs carrying ClientConfig,
//! re-pushing with a new `event_id` when an ACK does not come within `ack_timeout`), and the
//! IM, card, bot and application endpoints with size limits, `uuid` dedupe and a per-receiver
//! rate limit. A card patch is accepted only for a card the app sent, not recalled, at most 14
//! days old, declaring `update_multi`, at most 5 per second per message.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use scv_feishu::fake::{FakeConfig, FakeFeishu};
//! let fake = FakeFeishu::start(FakeConfig::default()).await?;
//! let client = scv_feishu::Client::new(scv_feishu::ClientOptions::new(fake.domain(), fake.credentials()))
//!     .expect("client");
//! // ... run a LongConnection with `client`, then:
//! let pushed = fake.push_p2p_text("ou_owner", "hello");
//! assert!(fake.wait_until(std::time::Duration::from_secs(5), |f| !f.acks().is_empty()).await);
//! assert_eq!(fake.acks()[0].event_id.as_deref(), Some(pushed.event_id.as_str()));
//! # Ok(()) }
//! ```
//!
//! Times are `tokio::time`, so a test may pause the clock; defaults mirror the platform
//! (3 s ACK deadline, 1 s rate window) and every one is a [`FakeConfig`] field.

mod callback;
mod cardkit;
#[cfg(test)]
mod cardkit_tests;
mod counts;
mod faults;
mod http;
mod media;
mod reaction;
mod records;
pub mod registration;
mod reply;
mod state;
mod ws;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{delete, get, patch, post};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

pub use callback::{callback_request, callback_request_for};
pub use cardkit::{CardRecord, ContentUpdate};
pub use media::{PushedMedia, SentMedia, Upload};
pub use reaction::ReactionRecord;
pub use records::*;
pub use registration::{FakeRegistration, PollFault, RegistrationConfig};
use state::{PendingPush, Shared, Stored, card_event, message_event};

use crate::domain::Domain;
use crate::frame::FrameType;
use crate::secret::{Credentials, Secret};

/// The fake's settings.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// Accepted app id.
    pub app_id: String,
    /// Accepted app secret.
    pub app_secret: String,
    /// The bot's open_id (bot info, mentions).
    pub bot_open_id: String,
    /// The bot's name.
    pub bot_name: String,
    /// The app owner's open_id (application API).
    pub owner_open_id: String,
    /// `service_id` in socket URLs.
    pub service_id: i32,
    /// Lifetime of a minted tenant token.
    pub token_expire: Duration,
    /// How long an ACK may take before the event is re-pushed.
    pub ack_timeout: Duration,
    /// `ClientConfig` returned by endpoint discovery and in pongs (seconds; fractions allowed).
    pub client_config: Value,
    /// Messages per `qps_window` per receiving chat.
    pub qps_per_receiver: usize,
    /// Rate window.
    pub qps_window: Duration,
    /// How a rate limit is signalled.
    pub rate_limit: RateLimitStyle,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            app_id: "cli_a1b2c3d4e5f60718".into(),
            app_secret: "fake-app-secret".into(),
            bot_open_id: "ou_bot".into(),
            bot_name: "Fake Bot".into(),
            owner_open_id: "ou_owner".into(),
            service_id: 33554678,
            token_expire: Duration::from_secs(7200),
            ack_timeout: Duration::from_secs(3),
            client_config: json!({"ReconnectCount": -1, "ReconnectInterval": 1, "ReconnectNonce": 1, "PingInterval": 90}),
            qps_per_receiver: 5,
            qps_window: Duration::from_secs(1),
            rate_limit: RateLimitStyle::Http429,
        }
    }
}

impl FakeConfig {
    /// Settings for fast tests: 500 ms ACK deadline, 200 ms pings, 50 ms reconnect jitter.
    pub fn fast() -> Self {
        Self {
            ack_timeout: Duration::from_millis(500),
            client_config: json!({"ReconnectCount": -1, "ReconnectInterval": 0.05, "ReconnectNonce": 0.05, "PingInterval": 0.2}),
            ..Self::default()
        }
    }
}

/// A running fake; dropping it stops the server.
#[derive(Debug)]
pub struct FakeFeishu {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeFeishu {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl FakeFeishu {
    /// Binds `127.0.0.1:0` and serves.
    pub async fn start(config: FakeConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let shared = Shared::new(config, base_url);
        let app = Router::new()
            .route(
                "/open-apis/auth/v3/tenant_access_token/internal",
                post(http::token),
            )
            .route("/callback/ws/endpoint", post(http::endpoint))
            .route("/ws/v2", get(ws::upgrade))
            .route("/open-apis/im/v1/messages", post(http::send))
            .route("/open-apis/im/v1/messages/{id}/reply", post(http::reply_to))
            .route("/open-apis/im/v1/messages/{id}", patch(http::patch))
            .route("/open-apis/bot/v3/info", get(http::bot_info))
            .route(
                "/open-apis/im/v1/messages/{id}/reactions",
                post(reaction::add),
            )
            .route(
                "/open-apis/im/v1/messages/{id}/reactions/{rid}",
                delete(reaction::remove),
            )
            .route(
                "/open-apis/application/v6/applications/{id}",
                get(http::app_info),
            )
            .route(
                "/open-apis/interactive/v1/card/update",
                post(http::card_update),
            )
            .merge(media::routes())
            .merge(cardkit::routes())
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "fake feishu server stopped");
            }
        });
        let watcher = tokio::spawn(ws::ack_watcher(shared.clone()));
        Ok(Self {
            shared,
            tasks: vec![server, watcher],
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// A [`Domain::Custom`] pointing at the fake.
    pub fn domain(&self) -> Domain {
        Domain::Custom(self.shared.base_url.clone())
    }

    /// The credentials the fake accepts.
    pub fn credentials(&self) -> Credentials {
        Credentials::new(
            self.shared.config.app_id.clone(),
            self.shared.config.app_secret.clone(),
        )
    }

    /// The settings in force.
    pub fn config(&self) -> &FakeConfig {
        &self.shared.config
    }

    /// Pushes a p2p text message from `from_open_id`.
    pub fn push_p2p_text(&self, from_open_id: &str, text: &str) -> Pushed {
        let chat = format!("oc_p2p_{from_open_id}");
        self.push_message(
            from_open_id,
            &chat,
            "p2p",
            text,
            false,
            PushOptions::default(),
        )
    }

    /// Pushes a group text message; `mention_bot` prefixes `@_user_1` resolving to the bot.
    pub fn push_group_text(
        &self,
        chat_id: &str,
        from_open_id: &str,
        text: &str,
        mention_bot: bool,
    ) -> Pushed {
        self.push_message(
            from_open_id,
            chat_id,
            "group",
            text,
            mention_bot,
            PushOptions::default(),
        )
    }

    /// Pushes a text message with full control over chat type and delivery.
    pub fn push_message(
        &self,
        from_open_id: &str,
        chat_id: &str,
        chat_type: &str,
        text: &str,
        mention_bot: bool,
        options: PushOptions,
    ) -> Pushed {
        let (text, mentions) = if mention_bot {
            let m = json!([{"key": "@_user_1", "id": {"open_id": self.shared.config.bot_open_id, "union_id": "on_bot"},
                            "name": self.shared.config.bot_name, "tenant_key": "fake-tenant"}]);
            (format!("@_user_1 {text}"), m)
        } else {
            (text.to_string(), json!([]))
        };
        let (message_id, event_id) = self.record_text(chat_id, &text);
        let event = message_event(
            from_open_id,
            &message_id,
            chat_id,
            chat_type,
            &text,
            mentions,
        );
        self.shared.enqueue(PendingPush {
            event_id: event_id.clone(),
            event_type: crate::event::MESSAGE_RECEIVE.into(),
            event,
            im_message_id: Some(message_id.clone()),
            options,
            attempt: 0,
        });
        Pushed {
            event_id,
            message_id,
        }
    }

    /// A private text from `from_open_id` as the HTTP callback the platform would POST in
    /// callback mode (signed and encrypted with `encrypt_key`, carrying `token`): the message is
    /// recorded like [`FakeFeishu::push_p2p_text`]'s, nothing is pushed on a socket.
    pub fn p2p_text_callback(
        &self,
        from_open_id: &str,
        text: &str,
        encrypt_key: Option<&Secret>,
        token: &str,
    ) -> CallbackDelivery {
        let chat = format!("oc_p2p_{from_open_id}");
        let (message_id, event_id) = self.record_text(&chat, text);
        let event = message_event(from_open_id, &message_id, &chat, "p2p", text, json!([]));
        let pushed = Pushed {
            event_id,
            message_id,
        };
        self.as_callback(
            pushed,
            crate::event::MESSAGE_RECEIVE,
            event,
            encrypt_key,
            token,
        )
    }

    /// A click on card `message_id` by `operator_open_id` as the platform's HTTP callback.
    pub fn card_click_callback(
        &self,
        operator_open_id: &str,
        message_id: &str,
        value: Value,
        encrypt_key: Option<&Secret>,
        token: &str,
    ) -> CallbackDelivery {
        let (chat, click_token, event_id) = self.record_click(message_id);
        let event = card_event(operator_open_id, &click_token, message_id, &chat, &value);
        let pushed = Pushed {
            event_id,
            message_id: message_id.to_string(),
        };
        self.as_callback(pushed, crate::event::CARD_ACTION, event, encrypt_key, token)
    }

    /// Pushes a click on card `message_id` by `operator_open_id`, delivered as `kind`.
    pub fn push_card_click(
        &self,
        operator_open_id: &str,
        message_id: &str,
        value: Value,
        kind: FrameType,
    ) -> Pushed {
        let (chat, token, event_id) = self.record_click(message_id);
        self.shared.enqueue(PendingPush {
            event_id: event_id.clone(),
            event_type: crate::event::CARD_ACTION.into(),
            event: card_event(operator_open_id, &token, message_id, &chat, &value),
            im_message_id: None,
            options: PushOptions {
                kind,
                ..PushOptions::default()
            },
            attempt: 0,
        });
        Pushed {
            event_id,
            message_id: message_id.to_string(),
        }
    }

    /// Stores an incoming text message in `chat_id`; returns its IM id and a fresh event id.
    fn record_text(&self, chat_id: &str, text: &str) -> (String, String) {
        let mut st = self.shared.lock();
        let message_id = format!("om_in{}", st.next());
        st.messages.insert(
            message_id.clone(),
            Stored {
                chat_id: chat_id.to_string(),
                msg_type: "text".into(),
                content: json!({"text": text}),
                by_bot: false,
                created: tokio::time::Instant::now(),
                aged: Duration::ZERO,
                recalled: false,
            },
        );
        let event_id = format!("ev_{}", st.next());
        (message_id, event_id)
    }

    /// Issues the click token for a click on card `message_id`: (its chat, the token, an event id).
    fn record_click(&self, message_id: &str) -> (String, String, String) {
        let mut st = self.shared.lock();
        let chat = st
            .messages
            .get(message_id)
            .map(|m| m.chat_id.clone())
            .unwrap_or_default();
        let token = format!("c-fake{}", st.next());
        st.click_tokens
            .insert(token.clone(), message_id.to_string());
        let event_id = format!("ev_{}", st.next());
        (chat, token, event_id)
    }

    /// `event` as the HTTP callback request the platform would POST for this app.
    fn as_callback(
        &self,
        pushed: Pushed,
        event_type: &str,
        event: Value,
        encrypt_key: Option<&Secret>,
        token: &str,
    ) -> CallbackDelivery {
        let (headers, body) = callback_request_for(
            &self.shared.config.app_id,
            encrypt_key,
            token,
            &pushed.event_id,
            event_type,
            event,
        );
        CallbackDelivery {
            pushed,
            headers,
            body,
        }
    }

    /// Pushes any event body under `event_type`.
    pub fn push_event(&self, event_type: &str, event: Value, options: PushOptions) -> Pushed {
        let event_id = format!("ev_{}", self.shared.lock().next());
        self.shared.enqueue(PendingPush {
            event_id: event_id.clone(),
            event_type: event_type.into(),
            event,
            im_message_id: None,
            options,
            attempt: 0,
        });
        Pushed {
            event_id,
            message_id: String::new(),
        }
    }

    /// Resolves at the first change to the fake's state after this call, for a test to check
    /// its condition again then. Armed (enabled) when it returns: get it before checking.
    pub fn changed(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        let mut changed = Box::pin(self.shared.changed());
        changed.as_mut().enable();
        changed
    }

    /// Waits until `cond` holds (true) or `timeout` passes (false), checking it again after
    /// each change to the fake's state rather than on a clock.
    pub async fn wait_until(&self, timeout: Duration, cond: impl Fn(&Self) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Armed before the check, so a change between the check and the wait wakes it.
            let changed = self.changed();
            if cond(self) {
                return true;
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(deadline) => return cond(self),
            }
        }
    }

    /// Messages sent or replied.
    pub fn sent(&self) -> Vec<SentRecord> {
        self.shared.lock().sent.clone()
    }

    /// Card patches applied (PATCH, card/update, or a click response card).
    pub fn patches(&self) -> Vec<PatchRecord> {
        self.shared.lock().patches.clone()
    }

    /// ACK frames received, in order.
    pub fn acks(&self) -> Vec<AckRecord> {
        self.shared.lock().acks.clone()
    }

    /// Events pushed (re-pushes included), in order.
    pub fn pushes(&self) -> Vec<PushRecord> {
        self.shared.lock().pushes.clone()
    }

    /// Accepted WebSocket connections, in order.
    pub fn connections(&self) -> Vec<ConnectionRecord> {
        self.shared.lock().connections.clone()
    }

    /// Connections currently open.
    pub fn live_connections(&self) -> usize {
        self.shared.lock().conns.len()
    }

    /// Pushed events still waiting for their ACK (0 = nothing will be re-pushed).
    pub fn in_flight(&self) -> usize {
        let st = self.shared.lock();
        st.inflight.len() + st.queue.len()
    }

    /// Token endpoint calls.
    pub fn token_requests(&self) -> usize {
        self.shared.lock().token_requests
    }

    /// Endpoint discovery calls.
    pub fn endpoint_requests(&self) -> usize {
        self.shared.lock().endpoint_requests
    }

    /// Handshakes refused (used or unknown ticket, or a set failure).
    pub fn refused_handshakes(&self) -> usize {
        self.shared.lock().refused_handshakes
    }

    /// Pings received.
    pub fn pings(&self) -> usize {
        self.shared.lock().pings
    }

    /// Frames refused for missing fields 1-4 or a wrong service id.
    pub fn rejected_frames(&self) -> usize {
        self.shared.lock().rejected_frames
    }

    /// The current content of a stored message (e.g. a card after a click).
    pub fn message_content(&self, message_id: &str) -> Option<Value> {
        self.shared
            .lock()
            .messages
            .get(message_id)
            .map(|m| m.content.clone())
    }
}
