//! While the journal cannot commit (a full disk, injected), no input is taken and none is lost:
//! WeChat stops polling and keeps the batch it holds, Feishu answers 500 so it pushes again;
//! status says so; both resume by themselves once a commit succeeds. Paused clock.

use crate::feishu_support;
use crate::wechat_support;

use std::time::Duration;

use scv_bridge::protocol::{ComponentHealth, NoteSource};
use scv_wechat::Endpoint;
use scv_wechat::fake::FakeConfig;

const NOTE: &str = "store: disk full; not reading new messages until space is freed";

fn store_note(s: &ComponentHealth) -> Option<&str> {
    s.notes
        .iter()
        .find(|n| n.source == NoteSource::Store)
        .map(|n| n.text.as_str())
}

/// Waits on the account's health changes until `ok` holds, or `ceiling` of paused time.
async fn health_until(
    registry: &scv_bridge::supervisor::HealthRegistry,
    id: &str,
    ceiling: Duration,
    ok: impl Fn(&ComponentHealth) -> bool,
) -> ComponentHealth {
    let cell = registry.cell(id).expect("cell");
    let wait = async {
        loop {
            let mut rx = cell.subscribe();
            if ok(&cell.get()) {
                return;
            }
            rx.changed().await.expect("cell alive");
        }
    };
    tokio::select! {
        () = wait => {}
        () = scv_bridge::testing::let_time_pass(ceiling) => {}
    }
    ComponentHealth::clone(&cell.get())
}

#[tokio::test(start_paused = true)]
async fn wechat_stops_polling_while_the_journal_cannot_commit_and_loses_nothing() {
    let mut h = wechat_support::Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    let registry = h.daemon().core.registry();
    let id = wechat_support::ID;
    health_until(&registry, id, Duration::from_secs(60), |s| {
        s.last_success_unix_seconds.is_some()
    })
    .await;
    let store = h.daemon().core.store().clone();
    let fake = h.fake.handle();
    store.fail_journal_as_full(true);
    fake.push_text(wechat_support::OWNER, "one");
    let s = health_until(&registry, id, Duration::from_secs(60), |s| {
        store_note(s).is_some()
    })
    .await;
    assert_eq!(store_note(&s), Some(NOTE), "{s:?}");
    // The batch is held: no poll leaves while the journal cannot commit, so what the server
    // would hand out next stays with it.
    let polls = fake.requests_to(Endpoint::GetUpdates).len();
    fake.push_text(wechat_support::OWNER, "two");
    scv_bridge::testing::let_time_pass(Duration::from_secs(120)).await;
    assert_eq!(
        fake.requests_to(Endpoint::GetUpdates).len(),
        polls,
        "no poll while paused"
    );
    assert!(fake.sent().is_empty());
    let s = h.status().await;
    assert_eq!(store_note(&s), Some(NOTE), "{s:?}");
    // Space is freed: the next retry commits, the note goes, polling resumes.
    store.fail_journal_as_full(false);
    let s = health_until(&registry, id, Duration::from_secs(60), |s| {
        store_note(s).is_none()
    })
    .await;
    assert_eq!(store_note(&s), None, "{s:?}");
    wechat_support::until_sent(&fake, 2, Duration::from_secs(60)).await;
    let texts: Vec<String> = fake.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["echo: one", "echo: two"]);
    h.stop().await;
}

#[tokio::test]
async fn feishu_acks_nothing_while_the_journal_cannot_commit_and_loses_nothing() {
    use feishu_support::{Harness, OWNER, Setup, p2p_chat};
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(scv_bridge::protocol::ComponentState::Connected)
        .await;
    let store = h.daemon.core.store().clone();
    store.fail_journal_as_full(true);
    let pushed = h.fake.push_p2p_text(OWNER, "one");
    h.until_health("the store note", |s| store_note(s) == Some(NOTE))
        .await;
    // Refused, not acknowledged: Feishu pushes it again, and again.
    h.until("re-pushes", |f| f.push_count() >= 3).await;
    assert!(
        h.fake.acks().iter().all(|a| a.code != Some(200)),
        "nothing is acknowledged while the journal cannot commit: {:?}",
        h.fake.acks()
    );
    assert!(h.fake.sent().is_empty());
    store.fail_journal_as_full(false);
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.until_health("the note gone", |s| store_note(s).is_none())
        .await;
    h.settle().await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: one"]);
    assert!(
        h.fake.acks().iter().any(|a| a.code == Some(200)),
        "{} acknowledged once stored",
        pushed.event_id
    );
    h.stop().await;
}
