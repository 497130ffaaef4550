//! The real client against the fake QQ platform, over real loopback sockets. Timing tests run on
//! a paused tokio clock or with heartbeat intervals of a few hundred milliseconds; no test
//! sleeps for whole seconds or waits to see that nothing happens.

mod chunked;
mod gateway;
mod gateway_faults;
mod login;
mod media;
mod privacy;
mod send;
mod webhook;

use std::sync::Arc;
use std::time::Duration;

use scv_qq::Client;
use scv_qq::fake::{FakeConfig, FakeQq};
use scv_qq::gateway::{Gateway, GatewayOptions, Inbound, LinkState};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Upper bound for anything that should happen at once; reached only on failure.
pub const WAIT: Duration = Duration::from_secs(5);

/// A fake and a client for it.
pub async fn start(config: FakeConfig) -> (FakeQq, Client) {
    let fake = FakeQq::start(config).await.expect("fake starts");
    let client = Client::new(fake.options()).expect("client");
    (fake, client)
}

/// A fake whose gateway wants a heartbeat every 200 ms.
pub fn fast() -> FakeConfig {
    FakeConfig {
        heartbeat_interval: Duration::from_millis(200),
        ..FakeConfig::default()
    }
}

/// Gateway options with short retry waits.
pub fn quick_options() -> GatewayOptions {
    GatewayOptions {
        first_retry: Duration::from_millis(10),
        max_retry: Duration::from_millis(50),
        ..GatewayOptions::default()
    }
}

/// A gateway running against a fake.
pub struct Running {
    pub fake: FakeQq,
    pub client: Client,
    pub gateway: Arc<Gateway>,
    pub rx: mpsc::Receiver<Inbound>,
    pub cancel: CancellationToken,
    pub task: JoinHandle<Result<(), scv_qq::Error>>,
}

impl Running {
    pub async fn start(config: FakeConfig, options: GatewayOptions) -> Self {
        let (fake, client) = start(config).await;
        Self::on(fake, client, options)
    }

    pub fn on(fake: FakeQq, client: Client, options: GatewayOptions) -> Self {
        Self::with_queue(fake, client, options, 64)
    }

    /// A gateway whose inbound queue holds `capacity` items.
    pub fn with_queue(
        fake: FakeQq,
        client: Client,
        options: GatewayOptions,
        capacity: usize,
    ) -> Self {
        let gateway = Arc::new(Gateway::new(client.clone(), options));
        let (tx, rx) = mpsc::channel(capacity);
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (g, c) = (gateway.clone(), cancel.clone());
            async move { g.run(tx, c).await }
        });
        Self {
            fake,
            client,
            gateway,
            rx,
            cancel,
            task,
        }
    }

    /// The next item, within [`WAIT`].
    pub async fn next(&mut self) -> Inbound {
        self.next_within(WAIT).await
    }

    /// The next item, within `within` (paused-clock tests wait for the platform's long waits).
    pub async fn next_within(&mut self, within: Duration) -> Inbound {
        tokio::time::timeout(within, self.rx.recv())
            .await
            .expect("an inbound item in time")
            .expect("gateway still running")
    }

    /// The next dispatch, skipping Ready items.
    pub async fn next_event(&mut self) -> scv_qq::gateway::Delivery {
        loop {
            if let Inbound::Event(d) = self.next().await {
                return d;
            }
        }
    }

    /// Waits for READY or RESUMED and returns `resumed`.
    pub async fn ready(&mut self) -> bool {
        self.ready_within(WAIT).await
    }

    /// Waits up to `within` for READY or RESUMED and returns `resumed`.
    pub async fn ready_within(&mut self, within: Duration) -> bool {
        loop {
            if let Inbound::Ready { resumed, .. } = self.next_within(within).await {
                return resumed;
            }
        }
    }

    pub async fn connected(&self) {
        let mut st = self.gateway.status();
        tokio::time::timeout(WAIT, st.wait_for(|s| s.state == LinkState::Connected))
            .await
            .expect("connected in time")
            .expect("status open");
    }

    /// Cancels and expects a clean stop.
    pub async fn stop(self) {
        self.cancel.cancel();
        let r = tokio::time::timeout(WAIT, self.task)
            .await
            .expect("stops in time");
        assert!(matches!(r, Ok(Ok(()))), "clean stop: {r:?}");
    }

    /// Waits for the run to end by itself and returns its error.
    pub async fn ended(self) -> scv_qq::Error {
        let r = tokio::time::timeout(WAIT, self.task)
            .await
            .expect("ends in time");
        r.expect("no panic").expect_err("ends with an error")
    }
}
