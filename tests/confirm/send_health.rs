//! Send-path trouble shows in the account's health while it lasts ("sends failing: HTTP 500;
//! 1 waiting; retry in 1 s") and clears on the next success. Paused clock: retries are instant.

use crate::confirm_support as support;

use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::conversation::{Conversation, SendError};
use scv_bridge::failure::{Code, general};
use scv_bridge::protocol::{ComponentState, Senders};
use scv_bridge::store::Store;
use scv_bridge::supervisor::{HealthCell, HealthHandle};
use support::{EchoAgent, OWNER, account, link, msg, spec};

/// Waits on health changes until the error satisfies `f`. Each change wakes this task before
/// any timer can fire (the paused clock only jumps when every task is idle), so no note is
/// skipped on the way.
async fn error_until(cell: &HealthCell, f: impl Fn(Option<&str>) -> bool) -> Option<String> {
    loop {
        let mut changed = cell.subscribe();
        let e = cell.get().error.clone();
        if f(e.as_deref()) {
            return e;
        }
        let _ = changed.changed().await;
    }
}

#[tokio::test(start_paused = true)]
async fn failing_sends_are_shown_while_they_last_and_cleared_by_the_next_success() {
    let (store, _guard) = Store::open_in_memory().expect("store");
    let conv = Conversation::new(store, Arc::new(EchoAgent::default()));
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let cell = HealthCell::new(&spec(&account(), Senders::Owner));
    let health = HealthHandle::new(cell.clone());
    channel.fail_next([
        SendError::transient(general::NETWORK, "HTTP 500"),
        SendError::slow_down(
            Code::new("test.throttled"),
            "throttled",
            Duration::from_secs(30),
        ),
    ]);
    let _attached = conv.attach(link(&account(), &channel, Senders::Owner, health.clone()));
    conv.accept(vec![msg("m1", OWNER, "a")])
        .await
        .expect("accept");

    let first = "sends failing: HTTP 500; 1 waiting; retry in 1 s";
    error_until(&cell, |e| e == Some(first)).await;
    assert_eq!(conv.stats().get(&account(), "send_failed_transient"), 1);
    assert_eq!(
        health.get().state,
        ComponentState::Starting,
        "the note changes no state"
    );
    let second = "sends failing: throttled; 1 waiting; retry in 30 s";
    error_until(&cell, |e| e == Some(second)).await;
    assert_eq!(conv.stats().get(&account(), "send_failed_slow_down"), 1);
    channel.wait_sent(1).await;
    assert_eq!(channel.texts(OWNER), ["echo: a"]);
    assert_eq!(error_until(&cell, |e| e.is_none()).await, None);
}
