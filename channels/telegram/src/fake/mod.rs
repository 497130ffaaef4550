//! A faithful fake Bot API server for tests (feature `fake`), on `127.0.0.1:0` over real HTTP.
//!
//! It reproduces spec §8: routing by `/bot<token>/<method>` (case-insensitive) with query, form,
//! JSON and multipart parameters; 401 for an unknown token and 404 for an unknown method; the
//! update queue (ids increase, an offset confirms, a negative offset forgets, `limit`, long
//! polls held until an update or the poll time, updates kept 24 h, sticky `allowed_updates`);
//! 409 for a second concurrent poll and while a webhook is set; `sendMessage` refusing empty,
//! over-long and badly marked-up text (HTML and MarkdownV2), unknown and blocked chats, missing reply targets
//! and long `callback_data`; edits refusing identical content; drafts only in private chats;
//! button answers once and within a deadline; files served by `getFile` under the 20 MB
//! limit and uploads under theirs (413); flood control per chat, per group and per bot with
//! `retry_after`; migrated groups; privacy mode in groups; anonymous admins; webhook mode
//! (`setWebhook` checks, deliveries with the secret header, retries, `getWebhookInfo`). Everything sent is recorded.
//!
//! Time is tokio's (`#[tokio::test(start_paused = true)]` drives holds, deadlines, buckets and
//! the 24 h expiry without real waiting).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use scv_telegram::fake::FakeServer;
//! use scv_telegram::{Client, Offset, OutgoingText};
//!
//! let fake = FakeServer::start().await?;
//! let handle = fake.handle();
//! let client = Client::new(&fake.base_url(), handle.token()).expect("valid URL");
//! let pushed = handle.push_text(handle.owner_chat(), "hello");
//! let batch = client.get_updates(Offset::START).await.expect("poll");
//! assert_eq!(batch.updates[0].message(), Some(&pushed));
//! client.send_text(&OutgoingText::plain(pushed.chat.id, "hi!")).await.expect("send");
//! assert_eq!(handle.sent()[0].text, "hi!");
//! # Ok(()) }
//! ```

mod answer;
mod files;
mod flood;
mod handle;
mod html;
mod http;
mod markdown;
mod params;
mod privacy;
mod records;
mod send;
pub(crate) mod state;
mod updates;
mod webhook;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use handle::FakeHandle;
pub use records::{ChatActionRecord, DraftFrame, SentFile, SentText};
pub use state::Fault;
pub use webhook::WEBHOOK_ATTEMPTS;

use crate::limits;
use state::State;

/// How the fake behaves; `FakeConfig::default()` suits most tests. Limits default to the
/// spec's values; a test may lower one to exercise it cheaply.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeConfig {
    /// The valid bot token.
    pub token: String,
    /// The bot's username.
    pub bot_username: String,
    /// Privacy mode off (`can_read_all_group_messages`).
    pub can_read_all_group_messages: bool,
    /// The owner's user id (a private chat with them exists from the start).
    pub owner_id: i64,
    /// How long a button press can be answered (the real deadline is unconfirmed).
    pub callback_deadline: Duration,
    /// Messages one chat takes at once before its 1/s pace applies.
    pub chat_burst: u32,
    /// `getFile` refuses files over this.
    pub max_download: u64,
    /// Uploads of photos over this get 413.
    pub max_upload_photo: u64,
    /// Uploads of other files over this get 413.
    pub max_upload_file: u64,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            // The bot id is above 2^32 to catch i32 bugs (spec §8.2).
            token: "5000000001:AAFakeTokenForTests_-0123456789abcdef".to_owned(),
            bot_username: "scv_fake_bot".to_owned(),
            can_read_all_group_messages: false,
            owner_id: 7_000_000_001,
            callback_deadline: Duration::from_secs(15),
            chat_burst: 3,
            max_download: limits::MAX_DOWNLOAD_BYTES,
            max_upload_photo: limits::MAX_UPLOAD_PHOTO_BYTES,
            max_upload_file: limits::MAX_UPLOAD_FILE_BYTES,
        }
    }
}

/// State shared by the server tasks and the test handle.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Bumped on every change, so held polls and test waits re-check.
    changed: watch::Sender<u64>,
    shutdown: watch::Sender<bool>,
}

impl Shared {
    /// Locks the state; a panic elsewhere must not wedge every other request.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// A running fake. Dropping it stops the server and releases held polls.
pub struct FakeServer {
    handle: FakeHandle,
    task: Option<JoinHandle<()>>,
    /// The webhook delivery loop.
    deliveries: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a fake with the default configuration.
    pub async fn start() -> std::io::Result<FakeServer> {
        FakeServer::start_with(FakeConfig::default()).await
    }

    /// Starts a fake on `127.0.0.1:0` with `config`.
    pub async fn start_with(config: FakeConfig) -> std::io::Result<FakeServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr: SocketAddr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(config, format!("http://{addr}/"))),
            changed: watch::channel(0).0,
            shutdown: watch::channel(false).0,
        });
        let app = axum::Router::new()
            .fallback(http::handle)
            // Uploads are read whole and refused by size in the handler, as the platform's
            // 413; the transport cap sits above the largest limit.
            .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
            .with_state(shared.clone());
        let mut stop = shared.shutdown.subscribe();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop.wait_for(|down| *down).await;
            });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "fake Bot API server stopped with an error");
            }
        });
        let deliveries = tokio::spawn(webhook::deliver(shared.clone()));
        Ok(FakeServer {
            handle: FakeHandle::new(shared),
            task: Some(task),
            deliveries: Some(deliveries),
        })
    }

    /// The base URL to give `Client::new`.
    pub fn base_url(&self) -> String {
        self.handle.base_url()
    }

    /// A handle for driving and inspecting the fake; cheap to clone.
    pub fn handle(&self) -> FakeHandle {
        self.handle.clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.handle.shared.shutdown.send_replace(true);
        for task in [self.task.take(), self.deliveries.take()]
            .into_iter()
            .flatten()
        {
            task.abort();
        }
    }
}
