//! A faithful fake QQ open platform for tests (feature `fake`), served on `127.0.0.1:0` over
//! real HTTP and WebSocket. It reproduces spec §8: the token endpoint (JSON only, `appId` a
//! string, `expires_in` a string, the same token until its last minute), `QQBot` auth with 401 +
//! `11244`, `gateway/bot` with the session start limit, the gateway (Hello first, 4003 before
//! Identify, 4004 bad token, 4014 intents, READY, increasing `s`, heartbeat ACKs, closed when
//! heartbeats stop, Resume replay or 4006/4007), the send rules (no trigger → `40034102`/
//! `40034105`; expired, foreign or overused trigger → `40034024`; repeated `msg_seq` →
//! `40054005`; URLs → `40054010`; markdown → `50056`; keyboards → `304037`; media scope),
//! uploads, click acks, served attachments, and faults (rate limits, typing errors, revoked
//! tokens, no session starts, op 7/9, close codes, dropped links, silent heartbeats), and the
//! webhook side: signed frames and the op 13 validation POSTed to a callback, resent on non-200.
//!
//! Time is `tokio::time`: windows and token lifetimes follow a paused clock. Everything the
//! fake accepts or refuses is recorded. Dropping the `FakeQq` stops it.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use scv_qq::fake::{FakeConfig, FakeQq};
//! let fake = FakeQq::start(FakeConfig::default()).await?;
//! let client = scv_qq::Client::new(fake.options()).expect("client");
//! let pushed = fake.push_c2c("USER1", "hello");
//! // ... run a Gateway with `client`, receive `pushed.id`, then:
//! let reply = scv_qq::Reply { trigger: scv_qq::Trigger::Message(pushed.id), msg_seq: 1 };
//! client.send(&scv_qq::Target::User("USER1".into()), Some(&reply), &scv_qq::Body::Text("hi".into())).await.ok();
//! assert_eq!(fake.sent()[0].content, "hi");
//! # Ok(()) }
//! ```

mod chunked;
mod http;
mod records;
mod rules;
mod state;
mod webhook;
mod ws;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post, put};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

pub use records::{
    FAKE_FILE_TOO_LARGE, FAKE_MEDIA_SCOPE, FAKE_TOO_LONG, InteractionAck, Pushed, Rejected,
    SentRecord, UploadRecord,
};
use state::{Scope, Shared};
pub use webhook::SignedRequest;

use crate::client::ClientOptions;
use crate::limits::{C2C_REPLY_WINDOW, DEFAULT_INTENTS, GROUP_REPLY_WINDOW, REPLIES_PER_MESSAGE};
use crate::secret::Credentials;

/// How the fake behaves; the defaults mirror the platform.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// Accepted AppID.
    pub app_id: String,
    /// Accepted AppSecret.
    pub app_secret: String,
    /// The bot's id (READY, `users/@me`).
    pub bot_id: String,
    /// The bot's name.
    pub bot_name: String,
    /// Lifetime of a minted token.
    pub token_lifetime: Duration,
    /// `heartbeat_interval` in Hello (tests use a few hundred ms).
    pub heartbeat_interval: Duration,
    /// Intents the bot is granted (more in Identify → 4014).
    pub granted_intents: u32,
    /// Reply window of a C2C message.
    pub c2c_window: Duration,
    /// Reply window of a group message.
    pub group_window: Duration,
    /// Replies per trigger.
    pub replies_per_message: u32,
    /// Longest text accepted, in characters (the real limit is unconfirmed).
    pub max_text_chars: usize,
    /// Largest inline upload accepted, in bytes (the real limit is unconfirmed).
    pub max_file_bytes: u64,
    /// Whether markdown (`msg_type` 2) is granted.
    pub markdown_allowed: bool,
    /// Whether keyboards are granted.
    pub keyboard_allowed: bool,
    /// Block size `upload_prepare` hands out.
    pub chunk_block_size: u64,
    /// Largest file the chunked upload accepts (the real limit is unconfirmed).
    pub max_chunked_bytes: u64,
    /// How long an uploaded `file_info` works (its `ttl`; real values vary, 0 = long-lived).
    pub media_ttl: Duration,
    /// Whether typing spends a reply of the trigger's budget (unconfirmed; yes is the safe guess).
    pub typing_spends_reply: bool,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            app_id: "102000001".into(),
            app_secret: "fake-app-secret-0123".into(),
            bot_id: "BOT0000000000000000000000000001".into(),
            bot_name: "Fake QQ Bot".into(),
            token_lifetime: Duration::from_secs(7200),
            heartbeat_interval: Duration::from_secs(45),
            granted_intents: DEFAULT_INTENTS,
            c2c_window: C2C_REPLY_WINDOW,
            group_window: GROUP_REPLY_WINDOW,
            replies_per_message: REPLIES_PER_MESSAGE,
            max_text_chars: crate::limits::MAX_TEXT_CHARS,
            max_file_bytes: crate::limits::MAX_INLINE_UPLOAD_BYTES,
            markdown_allowed: false,
            keyboard_allowed: false,
            chunk_block_size: 4 * 1024 * 1024,
            max_chunked_bytes: crate::limits::MAX_UPLOAD_BYTES,
            media_ttl: Duration::from_secs(3600),
            typing_spends_reply: true,
        }
    }
}

/// How the rate-limit fault answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimitStyle {
    /// HTTP 429.
    Http429,
    /// HTTP 400 with `22009` "msg limit exceed".
    Code22009,
}

/// A running fake.
#[derive(Debug)]
pub struct FakeQq {
    shared: Arc<Shared>,
    base_url: String,
    task: JoinHandle<()>,
}

impl Drop for FakeQq {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeQq {
    /// Binds `127.0.0.1:0` and serves.
    pub async fn start(config: FakeConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let shared = Shared::new(config, base_url.clone());
        let app = Router::new()
            .route("/app/getAppAccessToken", post(http::token))
            .route("/users/@me", get(http::me))
            .route("/gateway", get(http::gateway))
            .route("/gateway/bot", get(http::gateway))
            .route("/websocket", get(ws::upgrade))
            .route("/v2/users/{id}/messages", post(rules::send_user))
            .route("/v2/groups/{id}/messages", post(rules::send_group))
            .route("/v2/users/{id}/files", post(rules::upload_user))
            .route("/v2/groups/{id}/files", post(rules::upload_group))
            .route("/v2/users/{id}/upload_prepare", post(chunked::prepare_user))
            .route(
                "/v2/groups/{id}/upload_prepare",
                post(chunked::prepare_group),
            )
            .route(
                "/v2/users/{id}/upload_part_finish",
                post(chunked::finish_user),
            )
            .route(
                "/v2/groups/{id}/upload_part_finish",
                post(chunked::finish_group),
            )
            .route("/fake-blocks/{id}/{index}", put(chunked::put_block))
            .route("/interactions/{id}", put(http::interaction))
            .route("/media/{name}", get(http::media))
            // Inline uploads are base64 (10 MB of file is ~14 MB of body) and blocks are 4 MB:
            // axum's 2 MB default would refuse what the platform takes.
            .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            shared,
            base_url,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The accepted credentials.
    pub fn credentials(&self) -> Credentials {
        let st = self.shared.lock();
        Credentials::new(st.cfg.app_id.clone(), st.cfg.app_secret.as_str())
    }

    /// Client options pointing every host at the fake (attachments over plain HTTP).
    pub fn options(&self) -> ClientOptions {
        ClientOptions {
            api_base: self.base_url.clone(),
            token_base: self.base_url.clone(),
            credentials: self.credentials(),
            attachment_scheme: "http".into(),
        }
    }

    fn push(&self, t: &str, d: Value, trigger: Option<(Scope, bool)>) -> Pushed {
        let mut st = self.shared.lock();
        let frame_id = format!("{t}:FAKE_EVENT_{}", st.next());
        let id = d
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| frame_id.clone(), str::to_owned);
        if let Some((scope, is_event)) = trigger {
            st.add_trigger(&id, scope, is_event);
        }
        st.dispatch(t, d, frame_id.clone());
        Pushed {
            id,
            frame_id,
            kind: t.to_owned(),
        }
    }

    fn message_id(&self) -> String {
        format!("ROBOT1.0_fake{}", self.shared.lock().next())
    }

    /// Pushes a C2C message from `user` with `attachments` (`{content_type, url, …}` objects).
    pub fn push_c2c_with(&self, user: &str, content: &str, attachments: Vec<Value>) -> Pushed {
        let d = json!({"id": self.message_id(), "content": content,
            "timestamp": "2026-01-01T00:00:00+08:00",
            "author": {"id": user, "user_openid": user, "union_openid": ""},
            "attachments": attachments});
        self.push(
            "C2C_MESSAGE_CREATE",
            d,
            Some((Scope::User(user.into()), false)),
        )
    }

    /// Pushes a C2C text message from `user`.
    pub fn push_c2c(&self, user: &str, content: &str) -> Pushed {
        self.push_c2c_with(user, content, Vec::new())
    }

    /// Pushes a group message that @s the bot (`content` gets the platform's leading space).
    pub fn push_group_at(&self, group: &str, member: &str, content: &str) -> Pushed {
        let d = json!({"id": self.message_id(), "content": format!(" {content}"),
            "group_openid": group, "timestamp": "2026-01-01T00:00:00+08:00",
            "author": {"member_openid": member, "bot": false, "member_role": "member"},
            "mentions": [{"scope": "single", "is_you": true, "bot": true}]});
        self.push(
            "GROUP_AT_MESSAGE_CREATE",
            d,
            Some((Scope::Group(group.into()), false)),
        )
    }

    /// Pushes a full group message (`GROUP_MESSAGE_CREATE`) that does or does not mention the bot.
    pub fn push_group_all(
        &self,
        group: &str,
        member: &str,
        content: &str,
        mentions_bot: bool,
    ) -> Pushed {
        let d = json!({"id": self.message_id(), "content": content, "group_openid": group,
            "author": {"member_openid": member, "bot": false},
            "mentions": [{"scope": "single", "is_you": mentions_bot}]});
        self.push(
            "GROUP_MESSAGE_CREATE",
            d,
            Some((Scope::Group(group.into()), false)),
        )
    }

    /// Pushes a button click in the C2C chat of `user`.
    pub fn push_click_c2c(&self, user: &str, button_data: &str) -> Pushed {
        let id = format!("FAKE_INTERACTION_{}", self.shared.lock().next());
        let d = json!({"id": id, "type": 11, "scene": "c2c", "chat_type": 2, "user_openid": user,
            "data": {"resolved": {"button_data": button_data, "button_id": "b"}}, "version": 1});
        self.push(
            "INTERACTION_CREATE",
            d,
            Some((Scope::User(user.into()), true)),
        )
    }

    /// Pushes a button click by `member` in `group`.
    pub fn push_click_group(&self, group: &str, member: &str, button_data: &str) -> Pushed {
        let id = format!("FAKE_INTERACTION_{}", self.shared.lock().next());
        let d = json!({"id": id, "type": 11, "scene": "group", "chat_type": 1,
            "group_openid": group, "group_member_openid": member,
            "data": {"resolved": {"button_data": button_data, "button_id": "b"}}, "version": 1});
        self.push(
            "INTERACTION_CREATE",
            d,
            Some((Scope::Group(group.into()), true)),
        )
    }

    /// Pushes `FRIEND_ADD` from `user`; its frame id may carry one passive reply (§4.1).
    pub fn push_friend_add(&self, user: &str) -> Pushed {
        let pushed = self.push("FRIEND_ADD", json!({"openid": user, "timestamp": 0}), None);
        self.shared
            .lock()
            .add_trigger(&pushed.frame_id, Scope::User(user.into()), true);
        pushed
    }

    /// Pushes any dispatch as given (hostile payloads included); no reply trigger.
    pub fn push_raw(&self, t: &str, d: Value) -> Pushed {
        self.push(t, d, None)
    }

    /// Pushes `pushed`'s payload again with a new `s` and frame id (the platform's double push).
    pub fn push_again(&self, pushed: &Pushed) {
        let mut st = self.shared.lock();
        let found = st
            .sessions
            .values()
            .flat_map(|s| s.buffer.iter())
            .find_map(|(_, f)| {
                (f.get("id").and_then(Value::as_str) == Some(pushed.frame_id.as_str()))
                    .then(|| f["d"].clone())
            });
        if let Some(d) = found {
            let frame_id = format!("{}:again{}", pushed.frame_id, st.next());
            st.dispatch(&pushed.kind, d, frame_id);
        }
    }

    /// Serves `bytes` as an attachment; returns its URL **without a scheme**, as the platform
    /// sometimes sends it (§2.1).
    pub fn add_media(&self, name: &str, bytes: Vec<u8>) -> String {
        self.shared.lock().media.insert(name.to_owned(), bytes);
        format!(
            "{}/media/{name}",
            self.base_url.trim_start_matches("http://")
        )
    }
}

mod knobs;
