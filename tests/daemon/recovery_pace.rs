//! Recovery at the platform's pace, through the real WeChat adapter and the fake iLink server:
//! however many outages came before, the account is connected again within 15 s of the heal.

use crate::wechat_support;

use std::time::Duration;

use scv_bridge::protocol::ComponentState;
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, Fault};
use tokio::time::Instant;

/// Waits until the account is connected (no timeout: on a paused clock a timeout fires whenever
/// the runtime waits on the store's thread; the fake's held polls keep time moving).
async fn connected(h: &wechat_support::Harness) {
    let registry = h.daemon().core.registry();
    let cell = registry.cell(wechat_support::ID).expect("cell");
    let mut rx = cell.subscribe();
    while cell.get().state != ComponentState::Connected {
        rx.changed().await.expect("cell alive");
    }
}

/// Lets `d` pass on the paused clock in 1 ms steps, yielding a few times per step. While the
/// adapter waits on a socket or the store's thread, every step still moves the clock; small
/// steps with room for the I/O driver between them keep that drift (which is the harness's, not
/// the account's) well under the bound even on a loaded machine, where 10 ms steps measured up
/// to 47 s for a 15 s reconnection.
async fn let_time_pass_finely(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        tokio::time::advance(Duration::from_millis(1)).await;
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn wechat_notices_the_platform_back_within_fifteen_seconds_in_every_round() {
    let mut h = wechat_support::Harness::new(FakeConfig::default(), "").await;
    // The daemon's real lifecycle: its backoff, caps and restart budget.
    h.policy = scv_bridge::supervisor::LifecyclePolicy::default();
    h.start().await;
    connected(&h).await;
    let fake = h.fake.handle();
    for round in 0..6 {
        // iLink's gateway answers 502 to every poll for 60 s, then is healthy for 20 s.
        fake.inject_n(Endpoint::GetUpdates, Fault::Status(502), 100_000);
        scv_bridge::testing::let_time_pass(Duration::from_secs(60)).await;
        fake.clear_faults();
        let healed = Instant::now();
        let back = tokio::select! {
            () = connected(&h) => healed.elapsed(),
            () = let_time_pass_finely(Duration::from_secs(60)) => healed.elapsed(),
        };
        assert!(
            back <= Duration::from_secs(15),
            "round {round}: connected {back:?} after the heal; {:?}",
            h.status().await
        );
        scv_bridge::testing::let_time_pass(Duration::from_secs(20).saturating_sub(back)).await;
    }
    fake.push_text(wechat_support::OWNER, "still there?");
    wechat_support::until_sent(&fake, 1, Duration::from_secs(60)).await;
    let texts: Vec<String> = fake.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["echo: still there?"]);
    h.stop().await;
}
