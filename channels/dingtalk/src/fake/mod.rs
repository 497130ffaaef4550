//! A fake DingTalk for tests (feature `fake`), served on `127.0.0.1:0`: one server for the new
//! API, the old API, the Stream WebSocket, session webhooks and download URLs (spec §7).
//!
//! It refuses what the platform refuses: form-encoded token requests, wrong credentials,
//! `connections/open` without `Accept: application/json` (XML) or without subscriptions,
//! reused or expired tickets, calls without a live token, more than [`FakeConfig::qps`]
//! calls per second per API (403 `QpsLimitForApi`), unknown `msgKey`s and malformed
//! `msgParam`s, more than 20 recipients, group params over 15 000 bytes, expired session
//! webhooks (300001) and non-text webhook bodies, unknown robot codes, card templates, keys,
//! spaces and duplicate `outTrackId`s, card values that are not short strings, unknown
//! download codes, expired download URLs, and uploads of the wrong type or size.
//! Pushes go to one random live connection; a push with none is lost, as on the platform.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use scv_dingtalk::fake::{FakeConfig, FakeDingTalk};
//! let fake = FakeDingTalk::start(FakeConfig::default()).await?;
//! let client = scv_dingtalk::Client::new(fake.client_options()).expect("client");
//! // ... run a StreamConnection with `client`, wait for `fake.live_connections() == 1`, then:
//! let pushed = fake.push_text(&fake.config().staff[0], "hello");
//! assert!(fake.wait_until(std::time::Duration::from_secs(5), |f| !f.acks().is_empty()).await);
//! # Ok(()) }
//! ```
//!
//! Times are `tokio::time`, so tests pause the clock; defaults mirror the platform.

mod cards;
mod http;
mod inbound;
mod media;
mod records;
mod state;
mod ws;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post, put};
use axum::serve::ListenerExt;
use tokio::task::JoinHandle;

pub use inbound::{Inbound, InboundBody, Pushed};
pub use media::UPLOAD_TOO_LARGE;
pub use records::*;
use state::{ConnCmd, Shared};

use crate::call::Call;
use crate::client::ClientOptions;
use crate::media::MediaKind;
use crate::secret::Credentials;

/// The fake's settings; defaults mirror the platform (spec §6).
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// Accepted client id (also the robot code).
    pub client_id: String,
    /// Accepted client secret.
    pub client_secret: String,
    /// The org's corp id (robot and staff).
    pub corp_id: String,
    /// The robot's encrypted user id.
    pub bot_user_id: String,
    /// Known staff ids; the first is the owner in tests.
    pub staff: Vec<String>,
    /// Groups the robot is in (`openConversationId`s).
    pub groups: Vec<String>,
    /// Card templates and their variables.
    pub card_templates: Vec<(String, Vec<String>)>,
    /// Token lifetime (spec: 7200 s).
    pub token_lifetime: Duration,
    /// Ticket lifetime (spec: 90 s).
    pub ticket_lifetime: Duration,
    /// SYSTEM ping cadence (unconfirmed: 20–30 s); `None` sends none.
    pub ping_every: Option<Duration>,
    /// Close a connection whose previous SYSTEM ping is unanswered at the next one.
    pub drop_on_unanswered_ping: bool,
    /// Close after `disconnect` (spec: ≈ 10 s).
    pub disconnect_close_after: Duration,
    /// Duplicate mode: re-push an un-ACKed robot message after this long.
    pub duplicate_after: Option<Duration>,
    /// Session webhook lifetime (samples: ≈ 90 min).
    pub webhook_lifetime: Duration,
    /// Download URL lifetime (unconfirmed).
    pub download_url_lifetime: Duration,
    /// Calls per second per API (spec: ≈ 20).
    pub qps: u32,
    /// Upload size cap below the platform's (to test the refusal with small files).
    pub upload_cap: Option<u64>,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            client_id: "dingfake0client0id".into(),
            client_secret: "fake-client-secret".into(),
            corp_id: "dingcorp0fake".into(),
            bot_user_id: "$:LWCP_v1:$botFakeRobot==".into(),
            staff: vec!["manager4521".into(), "staff0002".into()],
            groups: vec!["cidGroupFake01==".into()],
            card_templates: vec![(
                "fake-ai-card.schema".into(),
                vec!["content".into(), "flowStatus".into()],
            )],
            token_lifetime: Duration::from_secs(7200),
            ticket_lifetime: Duration::from_secs(90),
            ping_every: Some(Duration::from_secs(20)),
            drop_on_unanswered_ping: false,
            disconnect_close_after: Duration::from_secs(10),
            duplicate_after: None,
            webhook_lifetime: Duration::from_secs(90 * 60),
            download_url_lifetime: Duration::from_secs(300),
            qps: 20,
            upload_cap: None,
        }
    }
}

impl FakeConfig {
    /// The upload limit of `kind` in force.
    pub fn upload_limit(&self, kind: MediaKind) -> u64 {
        self.upload_cap
            .map_or(kind.max_bytes(), |c| c.min(kind.max_bytes()))
    }
}

/// A running fake; dropping it stops the server.
pub struct FakeDingTalk {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeDingTalk {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl FakeDingTalk {
    /// Binds `127.0.0.1:0` and serves.
    pub async fn start(config: FakeConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let duplicate_after = config.duplicate_after;
        let shared = Arc::new(Shared::new(config, base_url));
        let app = Router::new()
            .route("/v1.0/oauth2/accessToken", post(http::token))
            .route("/v1.0/gateway/connections/open", post(http::open))
            .route("/connect", get(ws::upgrade))
            .route("/v1.0/robot/oToMessages/batchSend", post(http::batch_send))
            .route("/v1.0/robot/groupMessages/send", post(http::group_send))
            .route("/robot/sendBySession", post(http::webhook))
            .route("/v1.0/robot/emotion/reply", post(http::emotion_reply))
            .route("/v1.0/robot/emotion/recall", post(http::emotion_recall))
            .route("/v1.0/card/instances/createAndDeliver", post(cards::create))
            .route("/v1.0/card/streaming", put(cards::stream))
            .route("/v1.0/card/instances", put(cards::update))
            .route("/v1.0/robot/messageFiles/download", post(media::download))
            .route("/files/{key}", get(media::file))
            .route("/media/upload", post(media::upload))
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            // No Nagle: the fake's small frames (pings, pushes) leave at once.
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "fake dingtalk server stopped");
            }
        });
        let mut tasks = vec![server];
        if let Some(after) = duplicate_after {
            tasks.push(tokio::spawn(ws::repush_watcher(shared.clone(), after)));
        }
        Ok(Self { shared, tasks })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// The settings in force.
    pub fn config(&self) -> &FakeConfig {
        &self.shared.config
    }

    /// The credentials the fake accepts.
    pub fn credentials(&self) -> Credentials {
        let c = &self.shared.config;
        Credentials::new(c.client_id.clone(), c.client_secret.clone())
    }

    /// Client options with both bases on the fake.
    pub fn client_options(&self) -> ClientOptions {
        let mut o = ClientOptions::new(self.credentials());
        o.api_base = self.shared.base_url.clone();
        o.oapi_base = self.shared.base_url.clone();
        o
    }

    /// Waits until `cond` holds (true) or `timeout` passes (false), checking again after each
    /// change to the fake's state rather than on a clock.
    pub async fn wait_until(&self, timeout: Duration, cond: impl Fn(&Self) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if cond(self) {
                return true;
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(deadline) => return cond(self),
            }
        }
    }

    /// Makes the next call of `call` fail with `fault` (several queue up in order).
    pub fn fail_next(&self, call: Call, fault: Fault) {
        self.shared
            .lock()
            .faults
            .entry(call)
            .or_default()
            .push_back(fault);
    }

    /// Invalidates every issued token (API calls then answer 401 `InvalidAuthentication`).
    pub fn revoke_tokens(&self) {
        let mut st = self.shared.lock();
        st.tokens.clear();
        st.current_token = None;
    }

    /// Paid calls left this month (robot sends and card calls); `None` = unlimited.
    pub fn set_quota(&self, left: Option<usize>) {
        self.shared.lock().quota_left = left;
    }

    /// Sends SYSTEM `disconnect` on every live connection; they stop delivering at once and
    /// close after [`FakeConfig::disconnect_close_after`].
    pub fn disconnect_all(&self) {
        let mut st = self.shared.lock();
        for c in st.conns.values_mut() {
            c.retiring = true;
            let _ = c.tx.send(ConnCmd::Disconnect);
        }
    }

    /// Every live connection becomes a zombie: open, WebSocket pings answered, nothing sent.
    pub fn zombie_all(&self) {
        let mut st = self.shared.lock();
        for c in st.conns.values_mut() {
            c.zombie = true;
            let _ = c.tx.send(ConnCmd::Zombie);
        }
    }

    /// Every live connection hangs: nothing is read or written (WebSocket pings go unanswered),
    /// and pushes to it are lost.
    pub fn freeze_all(&self) {
        let mut st = self.shared.lock();
        for c in st.conns.values_mut() {
            c.zombie = true;
            let _ = c.tx.send(ConnCmd::Freeze);
        }
    }

    /// Pushes sent that no ACK has answered yet.
    pub fn unacked(&self) -> usize {
        self.shared.lock().inflight.len()
    }

    /// Drops every connection without a close frame.
    pub fn reset_all(&self) {
        self.control(|| ConnCmd::Reset);
    }

    /// Closes every connection with a close frame.
    pub fn close_all(&self) {
        self.control(|| ConnCmd::Close);
    }

    /// Sends `text` as a frame on every live connection (hostile-input tests).
    pub fn send_raw(&self, text: &str) {
        self.control(|| ConnCmd::Raw(text.to_string()));
    }

    fn control(&self, cmd: impl Fn() -> ConnCmd) {
        let st = self.shared.lock();
        for c in st.conns.values() {
            let _ = c.tx.send(cmd());
        }
    }

    /// `connections/open` requests that got a ticket.
    pub fn opens(&self) -> Vec<OpenRecord> {
        self.shared.lock().opens.clone()
    }

    /// Accepted WebSocket connections, in order.
    pub fn connections(&self) -> Vec<ConnectionRecord> {
        self.shared.lock().connections.clone()
    }

    /// Connections open now (retiring and zombie ones included).
    pub fn live_connections(&self) -> usize {
        self.shared.lock().conns.len()
    }

    /// Connections open now that would take a push.
    pub fn deliverable_connections(&self) -> usize {
        let st = self.shared.lock();
        st.conns.values().filter(|c| c.takes_pushes()).count()
    }

    /// Pushes sent (re-pushes and lost ones included), in order.
    pub fn pushes(&self) -> Vec<PushRecord> {
        self.shared.lock().pushes.clone()
    }

    /// ACK frames received, in order.
    pub fn acks(&self) -> Vec<AckRecord> {
        self.shared.lock().acks.clone()
    }

    /// Robot sends and webhook replies accepted, in order.
    pub fn sent(&self) -> Vec<SentRecord> {
        self.shared.lock().sent.clone()
    }

    /// A card by `outTrackId`.
    pub fn card(&self, out_track_id: &str) -> Option<CardRecord> {
        self.shared.lock().cards.get(out_track_id).cloned()
    }

    /// Every card.
    pub fn cards(&self) -> Vec<CardRecord> {
        self.shared.lock().cards.values().cloned().collect()
    }

    /// Reactions put and recalled, in order.
    pub fn emotions(&self) -> Vec<EmotionRecord> {
        self.shared.lock().emotions.clone()
    }

    /// Accepted uploads.
    pub fn uploads(&self) -> Vec<UploadRecord> {
        self.shared.lock().uploads.clone()
    }

    /// Token endpoint requests.
    pub fn token_requests(&self) -> usize {
        self.shared.lock().token_requests
    }

    /// Calls that reached the route of `call` (refused ones included).
    pub fn calls(&self, call: Call) -> usize {
        self.shared.lock().calls.get(&call).copied().unwrap_or(0)
    }

    /// Handshakes refused (unknown, reused or expired ticket).
    pub fn refused_handshakes(&self) -> usize {
        self.shared.lock().refused_handshakes
    }

    /// SYSTEM pings answered correctly / wrongly.
    pub fn ping_replies(&self) -> (usize, usize) {
        let st = self.shared.lock();
        (st.ping_replies, st.bad_ping_replies)
    }

    /// Client frames that were not text JSON.
    pub fn protocol_errors(&self) -> usize {
        self.shared.lock().protocol_errors
    }

    /// The `data` of an earlier push by its key (`msgId` / `outTrackId`).
    pub fn payload_of(&self, key: &str) -> Option<String> {
        self.shared.lock().payloads.get(key).map(|(_, d)| d.clone())
    }

    /// The access token issued last, if it is still valid.
    pub fn current_token(&self) -> Option<String> {
        let st = self.shared.lock();
        st.current_token
            .as_ref()
            .filter(|(_, exp)| tokio::time::Instant::now() < *exp)
            .map(|(t, _)| t.clone())
    }

    /// Registers media behind a new download code (as a user's upload would).
    pub fn add_media(&self, bytes: &[u8], name: &str) -> String {
        let mut st = self.shared.lock();
        let code = format!("dc-added-{}", st.next());
        st.media
            .insert(code.clone(), (bytes.to_vec(), name.to_string()));
        code
    }
}
