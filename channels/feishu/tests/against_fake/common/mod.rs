//! Helpers shared by the integration tests: a fake, a client, a running long connection.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use scv_feishu::fake::{FakeConfig, FakeFeishu};
use scv_feishu::ws::{ClientConfig, Delivery, LinkState, LongConnection, WsOptions};
use scv_feishu::{Client, ClientOptions, Credentials, Error};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Upper bound for any wait; tests finish far sooner when they pass.
pub const WAIT: Duration = Duration::from_secs(5);

/// Options whose pre-server reconnect delays are short, so failure tests do not wait 30 s.
pub fn fast_options() -> WsOptions {
    WsOptions {
        initial_config: ClientConfig {
            reconnect_nonce: Duration::from_millis(20),
            reconnect_interval: Duration::from_millis(20),
            ..ClientConfig::default()
        },
        ..WsOptions::default()
    }
}

pub fn client_for(fake: &FakeFeishu) -> Client {
    Client::new(ClientOptions::new(fake.domain(), fake.credentials())).expect("client")
}

pub fn client_with(fake: &FakeFeishu, creds: Credentials) -> Client {
    Client::new(ClientOptions::new(fake.domain(), creds)).expect("client")
}

/// A long connection running against a fake.
pub struct Running {
    pub fake: FakeFeishu,
    pub conn: Arc<LongConnection>,
    pub rx: mpsc::Receiver<Delivery>,
    pub cancel: CancellationToken,
    pub task: JoinHandle<Result<(), Error>>,
}

impl Running {
    pub async fn start(config: FakeConfig) -> Self {
        let fake = FakeFeishu::start(config).await.expect("fake");
        let conn = Arc::new(LongConnection::new(client_for(&fake), fast_options()));
        let (tx, rx) = mpsc::channel(64);
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let conn = conn.clone();
            let cancel = cancel.clone();
            async move { conn.run(tx, cancel).await }
        });
        Self {
            fake,
            conn,
            rx,
            cancel,
            task,
        }
    }

    /// Waits until a pong or frame proved the link alive.
    pub async fn connected(&self) {
        let mut st = self.conn.status();
        tokio::time::timeout(WAIT, st.wait_for(|s| s.state == LinkState::Connected))
            .await
            .expect("connected in time")
            .expect("status channel open");
    }

    pub async fn next(&mut self) -> Delivery {
        tokio::time::timeout(WAIT, self.rx.recv())
            .await
            .expect("a delivery in time")
            .expect("connection still running")
    }

    pub async fn stop(self) {
        self.cancel.cancel();
        let r = tokio::time::timeout(WAIT, self.task)
            .await
            .expect("stops in time");
        assert!(matches!(r, Ok(Ok(()))), "clean stop: {r:?}");
    }
}
