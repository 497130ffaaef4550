//! A faithful fake iLink server for tests (feature `fake`), on `127.0.0.1:0` over real HTTP.
//!
//! It reproduces what spec §8 lists: HTTP 200 with errors in the body, -14 for a missing or
//! unknown token, long polls that hang until a message or the hold time, a cursor that only
//! moves forward (delivered messages are consumed; an old cursor replays nothing), the send
//! window (context token required, 24 h, 10 sends per inbound message, then `ret:-2`),
//! duplicate delivery, a QR login the test walks, typing tickets, and injectable faults
//! (5xx, hangs, resets, any body, a taken request whose answer is lost). Everything is
//! recorded for assertions.
//!
//! Time: hold times are real but short (default 400 ms); the send window uses tokio time
//! plus [`FakeHandle::advance_clock`], so tests never wait for real hours.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use scv_wechat::fake::FakeServer;
//! use scv_wechat::Client;
//!
//! let fake = FakeServer::start().await?;
//! let handle = fake.handle();
//! let client = Client::new(&fake.base_url(), handle.bot_token()).expect("valid URL");
//! let pushed = handle.push_text("owner@im.wechat", "hello");
//! let updates = client.get_updates("").await.expect("poll");
//! assert_eq!(updates.messages[0].message_id, pushed.message_id);
//! client
//!     .send_text("owner@im.wechat", pushed.context_token.as_deref(), "hi!", &scv_wechat::new_client_id())
//!     .await
//!     .expect("send");
//! assert_eq!(handle.sent()[0].text, "hi!");
//! # Ok(()) }
//! ```

mod cdn;
mod conns;
mod handle;
mod http;
mod qr;
mod random;
mod records;
mod state;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use cdn::{SentMedia, UploadFault};
pub use handle::FakeHandle;
pub use records::{Fault, RecordedRequest, RejectedSend, SentMessage, TypingCall};

use state::State;

/// How the fake behaves; `FakeConfig::default()` suits most tests.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeConfig {
    /// How long an idle `getupdates` is held before an empty answer (real server: ~35 s).
    pub hold: Duration,
    /// `longpolling_timeout_ms` to report; `None` reports `hold`.
    pub suggested_hold_ms: Option<u64>,
    /// How long an unchanged QR status poll is held.
    pub qr_hold: Duration,
    /// Path prefix the API is served under (the client must join paths correctly).
    pub prefix: String,
    /// The bot's id, the `to_user_id` of inbound messages.
    pub bot_id: String,
    /// A token valid from the start, so tests can skip QR login; `None` starts logged out.
    pub initial_token: Option<String>,
    /// Send window: how long after an inbound message its context token works.
    pub window: Duration,
    /// Sends allowed per inbound message (per context token).
    pub sends_per_inbound: u32,
    /// Longest text accepted, in characters (`None`: no cap). The plugin declares 4000.
    pub max_text_chars: Option<usize>,
    /// Optional burst limiter: at most `.0` sends per `.1`, else `-2 "prepare failed"`.
    pub burst: Option<(u32, Duration)>,
    /// `baseurl` returned by QR login; `None` returns the fake's own base URL.
    pub login_base_url: Option<String>,
    /// The first inbound `message_id`; above 2^53 by default, as on the real server.
    pub first_message_id: u64,
    /// Whether a QR login revokes earlier tokens (the real server does, issue #69).
    pub revoke_on_login: bool,
    /// How long the answers to sends, typing, its ticket and upload URLs take to come back, as
    /// from a server across the internet: the call is carried out (and recorded) on arrival,
    /// only its answer waits. Zero by default.
    pub answer_delay: Duration,
    /// Whether a `sendmessage` whose `client_id` was accepted before is refused (`-2`), as spec
    /// §8.7 asks. Whether the real server drops a repeated `FINISH` send is unconfirmed (it was
    /// seen refusing `GENERATING` → `FINISH` under one id), so tests of a resend after a crash
    /// also run with `false`: the repeat is accepted and shown twice, the unsafe case.
    pub refuse_reused_client_ids: bool,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            hold: Duration::from_millis(400),
            suggested_hold_ms: None,
            qr_hold: Duration::from_millis(200),
            prefix: "/bot-api/".to_owned(),
            bot_id: "fakebot0001@im.bot".to_owned(),
            initial_token: Some("fakebot0001@im.bot:initial-token".to_owned()),
            window: Duration::from_secs(24 * 3600),
            sends_per_inbound: 10,
            max_text_chars: Some(4000),
            burst: None,
            login_base_url: None,
            first_message_id: 7_492_913_259_736_648_968,
            revoke_on_login: true,
            answer_delay: Duration::ZERO,
            refuse_reused_client_ids: true,
        }
    }
}

/// State shared by the server tasks and the test handle.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Bumped on every change, so held requests and test waits re-check.
    changed: watch::Sender<u64>,
    shutdown: watch::Sender<bool>,
    prefix: String,
    /// `getupdates` requests whose handler is still running (held, or answering).
    polls_in_flight: std::sync::atomic::AtomicUsize,
    /// Client connections the server has open (see `conns`).
    connections: std::sync::atomic::AtomicUsize,
    /// Where the server listens (`conns` connects to it to flush the accept queue).
    addr: SocketAddr,
    /// Lets the answers `answer_delay` holds back go at once.
    release: tokio::sync::Notify,
}

impl Shared {
    /// Locks the state. A panic elsewhere while holding the lock must not wedge every
    /// other request, so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// A running fake. Dropping it stops the server and releases held requests.
pub struct FakeServer {
    handle: FakeHandle,
    addr: SocketAddr,
    task: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a fake with the default configuration.
    pub async fn start() -> std::io::Result<FakeServer> {
        FakeServer::start_with(FakeConfig::default()).await
    }

    /// Starts a fake on `127.0.0.1:0` with `config`.
    pub async fn start_with(mut config: FakeConfig) -> std::io::Result<FakeServer> {
        config.prefix = normalize_prefix(&config.prefix);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let base_url = format!("http://{addr}{}", config.prefix);
        let shared = Arc::new(Shared {
            prefix: config.prefix.clone(),
            state: Mutex::new(State::new(config, base_url)),
            changed: watch::channel(0).0,
            shutdown: watch::channel(false).0,
            polls_in_flight: std::sync::atomic::AtomicUsize::new(0),
            connections: std::sync::atomic::AtomicUsize::new(0),
            addr,
            release: tokio::sync::Notify::new(),
        });
        let app = axum::Router::new()
            .fallback(http::handle)
            .with_state(shared.clone());
        let mut stop = shared.shutdown.subscribe();
        let listener = conns::Counted {
            listener,
            shared: shared.clone(),
        };
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop.wait_for(|down| *down).await;
            });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "fake iLink server stopped with an error");
            }
        });
        Ok(FakeServer {
            handle: FakeHandle::new(shared),
            addr,
            task: Some(task),
        })
    }

    /// The base URL to give `Client::new`, e.g. `http://127.0.0.1:PORT/bot-api/`.
    pub fn base_url(&self) -> String {
        self.handle.base_url()
    }

    /// The socket address the fake listens on (e.g. for a QR redirect host).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle for driving and inspecting the fake; cheap to clone, usable after a move.
    pub fn handle(&self) -> FakeHandle {
        self.handle.clone()
    }

    /// Stops accepting, releases held polls and hangs, and waits (up to 2 s) for the server.
    pub async fn shutdown(mut self) {
        self.handle.shared.shutdown.send_replace(true);
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(2), &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.handle.shared.shutdown.send_replace(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn normalize_prefix(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else {
        format!("/{trimmed}/")
    }
}
