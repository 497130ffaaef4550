//! The real client against the fake iLink server, over real loopback sockets.
//! No test sleeps for whole seconds: holds are a few hundred milliseconds at most.

mod cdn;
mod headers;
mod login;
mod login_flow;
mod poll;
mod send;

use std::time::Duration;

use scv_wechat::Client;
use scv_wechat::fake::{FakeConfig, FakeHandle, FakeServer};

/// Generous bound for things that should happen at once; only reached on failure.
pub const PROMPTLY: Duration = Duration::from_secs(5);

/// A fake with `config` and a logged-in client for it.
pub async fn start_with(config: FakeConfig) -> (FakeServer, FakeHandle, Client) {
    let fake = FakeServer::start_with(config).await.expect("fake starts");
    let handle = fake.handle();
    let client = Client::new(&fake.base_url(), handle.bot_token()).expect("valid base URL");
    (fake, handle, client)
}

/// A default fake and a logged-in client.
pub async fn start() -> (FakeServer, FakeHandle, Client) {
    start_with(FakeConfig::default()).await
}
