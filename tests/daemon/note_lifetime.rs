//! A health note lasts as long as its cause: "sends failing: HTTP 502; 1 waiting" goes once the
//! send succeeds and nothing waits, even when the account restarted during the outage.
//! Paused clock; waits are on health changes, never on timeouts.

use crate::wechat_support;

use std::time::Duration;

use scv_bridge::protocol::{ComponentHealth, ComponentState, NoteSource};
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, Fault};
use wechat_support::*;

/// Waits on the account's health changes until `ok` holds.
async fn health_until(h: &Harness, ok: impl Fn(&ComponentHealth) -> bool) {
    let registry = h.daemon().core.registry();
    let cell = registry.cell(ID).expect("cell");
    loop {
        let mut rx = cell.subscribe();
        if ok(&cell.get()) {
            return;
        }
        rx.changed().await.expect("cell alive");
    }
}

fn sends_note(s: &ComponentHealth) -> Option<&str> {
    s.notes
        .iter()
        .find(|n| n.source == NoteSource::Sends)
        .map(|n| n.text.as_str())
}

#[tokio::test(start_paused = true)]
async fn a_send_note_clears_when_the_send_succeeds_after_a_twenty_second_502() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.policy = quick_policy();
    h.start().await;
    health_until(&h, |s| s.last_success_unix_seconds.is_some()).await;
    let fake = h.fake.handle();
    // iLink's gateway answers 502 to everything for 20 s.
    fake.inject_n(Endpoint::SendMessage, Fault::Status(502), 100_000);
    fake.push_text(OWNER, "hello");
    health_until(&h, |s| {
        sends_note(s).is_some_and(|n| n.starts_with("sends failing: ") && n.contains("1 waiting"))
    })
    .await;
    fake.inject_n(Endpoint::GetUpdates, Fault::Status(502), 100_000);
    scv_bridge::testing::let_time_pass(Duration::from_secs(20)).await;
    assert!(
        h.status().await.restarts >= 1,
        "the account dropped meanwhile"
    );
    fake.clear_faults();
    wechat_support::until_sent(&fake, 1, Duration::from_secs(60)).await;
    assert_eq!(
        fake.sent().into_iter().map(|m| m.text).collect::<Vec<_>>(),
        ["echo: hello"]
    );
    // Nothing waits: the note goes (waiting on health changes, a minute of paused time at most).
    tokio::select! {
        () = health_until(&h, |s| {
            s.state == ComponentState::Connected && sends_note(s).is_none()
        }) => {}
        () = scv_bridge::testing::let_time_pass(Duration::from_secs(60)) => {}
    }
    let s = h.status().await;
    assert_eq!(sends_note(&s), None, "{s:?}");
    assert_eq!(s.error, None, "{s:?}");
    h.stop().await;
}
