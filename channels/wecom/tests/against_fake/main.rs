//! The real client against the fake WeCom, over real loopback sockets, on a paused clock:
//! heartbeats, windows and backoffs pass in virtual time, exactly, and no test sleeps.

mod connect;
mod media;
mod privacy;
mod receive;
mod reply;
mod send;

use std::time::Duration;

use scv_wecom::fake::{FakeConfig, FakeWeCom};
use scv_wecom::{Connection, Credentials, Delivery, Error, LinkState, Options, ReplyHandle};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Bound for what should happen at once; reached only on failure (virtual time).
pub const PROMPTLY: Duration = Duration::from_secs(20);

/// The owner's userid in the tests.
pub const OWNER: &str = "ZhangSan";

/// Options for the fake: its URL, no jitter (exact backoff figures).
pub fn options(fake: &FakeWeCom) -> Options {
    Options {
        jitter: 0.0,
        ..Options::with_url(fake.ws_url())
    }
}

/// Moves the paused clock in 10 ms steps, each after a little real time, while it lives.
///
/// On a paused clock tokio jumps to the next timer whenever no task is ready, and a frame
/// still on its way through the loopback socket does not count as ready: a 5 s ack timeout
/// would fire in the same instant the answer is read. With a timer every 10 ms, time moves at
/// most one step at once; and each step first waits ~100 µs of real time in a blocking task
/// (which holds the clock still while it runs), so a frame the kernel is slow to hand over
/// on a loaded machine arrives before much virtual time has passed.
pub struct Ticker(JoinHandle<()>);

impl Drop for Ticker {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts a [`Ticker`].
pub fn ticker() -> Ticker {
    Ticker(tokio::spawn(async {
        loop {
            let real = || std::thread::sleep(Duration::from_micros(100));
            let _ = tokio::task::spawn_blocking(real).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }))
}

/// Whether `d` is `want` give or take the steps a few socket hops take on the ticking clock.
pub fn about(d: Duration, want: Duration) -> bool {
    d >= want && d < want + Duration::from_millis(300)
}

/// A fake, a connection running against it, and the deliveries.
pub struct Running {
    pub fake: FakeWeCom,
    pub conn: Connection,
    pub rx: mpsc::Receiver<Delivery>,
    pub cancel: CancellationToken,
    pub task: JoinHandle<Result<(), Error>>,
    pub ticker: Ticker,
}

impl Running {
    /// Starts the fake and a connection with the fake's credentials; waits until subscribed.
    pub async fn start(config: FakeConfig) -> Self {
        let fake = FakeWeCom::start(config).await.expect("fake starts");
        let creds = fake.credentials();
        let r = Self::with(fake, creds).await;
        r.connected().await;
        r
    }

    /// A connection with `creds` against `fake`, running, not waited for.
    pub async fn with(fake: FakeWeCom, creds: Credentials) -> Self {
        Self::with_queue(fake, creds, 64).await
    }

    /// [`Running::with`] with a delivery queue of `capacity`.
    pub async fn with_queue(fake: FakeWeCom, creds: Credentials, capacity: usize) -> Self {
        let ticker = ticker();
        let conn = Connection::new(creds, options(&fake));
        let (tx, rx) = mpsc::channel(capacity);
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (conn, cancel) = (conn.clone(), cancel.clone());
            async move { conn.run(tx, cancel).await }
        });
        Self {
            fake,
            conn,
            rx,
            cancel,
            task,
            ticker,
        }
    }

    /// Waits until the link is subscribed.
    pub async fn connected(&self) {
        let mut status = self.conn.status();
        tokio::time::timeout(
            PROMPTLY,
            status.wait_for(|s| s.state == LinkState::Connected),
        )
        .await
        .expect("subscribed in time")
        .expect("status alive");
    }

    /// The next delivery.
    pub async fn next(&mut self) -> Delivery {
        tokio::time::timeout(PROMPTLY, self.rx.recv())
            .await
            .expect("a delivery in time")
            .expect("connection running")
    }

    /// The next delivery, journaled (here: nothing to write), with its handle.
    pub async fn next_handle(&mut self) -> (scv_wecom::Callback, ReplyHandle) {
        let (cb, handle) = self.next().await.journaled();
        (cb.expect("parses"), handle.expect("takes a reply"))
    }

    /// Cancels and joins the connection.
    pub async fn stop(self) -> Result<(), Error> {
        self.cancel.cancel();
        self.task.await.expect("joins")
    }
}
