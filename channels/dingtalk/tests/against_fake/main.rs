//! The real client against the fake DingTalk, over real loopback sockets. Everything with
//! timing runs on a paused tokio clock: waits of seconds pass at once, and exactly.

mod cards;
mod login;
mod media;
mod messages;
mod privacy;
mod send;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use scv_dingtalk::Client;
use scv_dingtalk::fake::{FakeConfig, FakeDingTalk};
use scv_dingtalk::stream::{Delivery, StreamConnection, StreamOptions};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Bound for things that should happen at once; only reached on failure.
pub const PROMPTLY: Duration = Duration::from_secs(5);

/// The owner's staff id in the default fake.
pub const OWNER: &str = "manager4521";

/// A fake with `config` and a client for it, on a clock that moves in steps.
pub async fn start_with(config: FakeConfig) -> (FakeDingTalk, Client) {
    metronome();
    let fake = FakeDingTalk::start(config).await.expect("fake starts");
    let client = Client::new(fake.client_options()).expect("valid options");
    (fake, client)
}

/// Keeps a timer 10 ms ahead, so the paused clock moves at most 10 ms each time the runtime
/// waits (without it the clock jumps straight to the next deadline, e.g. a pong deadline,
/// while a loopback round trip is still under way).
fn metronome() {
    tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
}

/// A default fake and a client.
pub async fn start() -> (FakeDingTalk, Client) {
    start_with(FakeConfig::default()).await
}

/// A Stream connection running against a fake.
pub struct Running {
    pub fake: FakeDingTalk,
    pub client: Client,
    pub conn: Arc<StreamConnection>,
    pub rx: mpsc::Receiver<Delivery>,
    pub cancel: CancellationToken,
    pub task: JoinHandle<Result<(), scv_dingtalk::Error>>,
}

impl Running {
    /// Starts a fake and a connection with default options; waits for the first socket.
    pub async fn start(config: FakeConfig) -> Self {
        Self::start_with(config, StreamOptions::default()).await
    }

    /// The same with `options`.
    pub async fn start_with(config: FakeConfig, options: StreamOptions) -> Self {
        let (fake, client) = start_with(config).await;
        let conn = Arc::new(StreamConnection::new(client.clone(), options));
        let (tx, rx) = mpsc::channel(64);
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (conn, cancel) = (conn.clone(), cancel.clone());
            async move { conn.run(tx, cancel).await }
        });
        let r = Self {
            fake,
            client,
            conn,
            rx,
            cancel,
            task,
        };
        r.sockets(1).await;
        r
    }

    /// Waits until the fake has accepted `n` connections in all and one takes pushes (on the
    /// paused clock, reconnect backoffs of a few seconds pass at once).
    pub async fn sockets(&self, n: usize) {
        let within = Duration::from_secs(300);
        assert!(
            self.fake
                .wait_until(within, |f| f.connections().len() >= n
                    && f.deliverable_connections() >= 1)
                .await,
            "connection {n} in time ({} so far; {:?})",
            self.fake.connections().len(),
            self.conn.status().borrow()
        );
    }

    /// The next delivery.
    pub async fn next(&mut self) -> Delivery {
        tokio::time::timeout(PROMPTLY, self.rx.recv())
            .await
            .expect("a delivery in time")
            .expect("the connection is still running")
    }

    /// Stops the connection; returns how `run` ended.
    pub async fn stop(self) -> Result<(), scv_dingtalk::Error> {
        self.cancel.cancel();
        tokio::time::timeout(PROMPTLY, self.task)
            .await
            .expect("stops in time")
            .expect("joins")
    }
}
