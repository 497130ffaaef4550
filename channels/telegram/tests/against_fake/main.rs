//! The real client against the fake Bot API server, over real loopback sockets. Anything with
//! timing runs on paused tokio time: holds, deadlines, buckets and expiry pass at once.

mod callbacks;
mod edits;
mod groups;
mod login;
mod media;
mod poll;
mod privacy;
mod routing;
mod send;
mod webhook;

use std::time::Duration;

use scv_telegram::fake::{FakeConfig, FakeHandle, FakeServer};
use scv_telegram::{Client, Error, ErrorClass, Rejection};

/// Generous bound for things that should happen at once; only reached on failure.
pub const PROMPTLY: Duration = Duration::from_secs(5);

/// A fake with `config` and a client for it that long-polls for `poll` seconds.
pub async fn start_with(config: FakeConfig, poll: u64) -> (FakeServer, FakeHandle, Client) {
    let fake = FakeServer::start_with(config).await.expect("fake starts");
    let handle = fake.handle();
    let client = Client::new(&fake.base_url(), handle.token())
        .expect("valid base URL")
        .with_poll_timeout(Duration::from_secs(poll));
    (fake, handle, client)
}

/// A default fake and a client that long-polls for 1 s.
pub async fn start() -> (FakeServer, FakeHandle, Client) {
    start_with(FakeConfig::default(), 1).await
}

/// Asserts `result` failed with rejection `want`, and returns the error for more checks.
#[track_caller]
pub fn rejected<T: std::fmt::Debug>(result: Result<T, Error>, want: Rejection) -> Error {
    let e = result.expect_err("the fake refuses this");
    assert_eq!(e.class(), ErrorClass::Rejected(want), "{e}");
    e
}
