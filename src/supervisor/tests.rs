//! Lifecycle tests on a paused clock: every transition of DESIGN.md's state machine.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::config::{AccountSpec, Channel, ChannelSettings};
use crate::failure::{Action, Code, general};
use crate::protocol::{ComponentState, HealthNote, Purpose, RemoteTools, Senders};
use crate::testing::{FakeFactory, Step};

fn key(name: &str) -> AccountKey {
    AccountKey::new(Channel::Wechat, name)
}

fn desired(name: &str, enabled: bool) -> DesiredAccount {
    DesiredAccount {
        spec: AccountSpec {
            key: key(name),
            enabled,
            workspace: None,
            senders: Senders::Owner,
            remote_tools: RemoteTools::None,
            approvals: Default::default(),
            purpose: Purpose::Chat,
            language: Default::default(),
            media: Default::default(),
            settings: ChannelSettings::default(),
        },
        credentials: Some("fp".into()),
    }
}

fn set(accounts: &[DesiredAccount]) -> BTreeMap<AccountKey, DesiredAccount> {
    accounts
        .iter()
        .map(|d| (d.spec.key.clone(), d.clone()))
        .collect()
}

fn policy(jitter: f64) -> LifecyclePolicy {
    LifecyclePolicy {
        jitter: Arc::new(move || jitter),
        ..LifecyclePolicy::default()
    }
}

fn transient() -> ComponentError {
    ComponentError::transient(general::NETWORK, "network down")
}

async fn wait_state(sup: &Supervisor, name: &str, state: ComponentState) {
    let cell = sup.registry().cell(&key(name).to_string()).expect("cell");
    let mut rx = cell.subscribe();
    while cell.get().state != state {
        rx.changed().await.expect("cell alive");
    }
}

/// Start times of runs 1..=n, as offsets from the first.
async fn run_gaps(factory: &FakeFactory, name: &str, n: u32) -> Vec<u64> {
    let c = factory.component(&key(name));
    c.wait_runs(1).await;
    let t0 = Instant::now();
    let mut last = t0;
    let mut gaps = Vec::new();
    for i in 2..=n {
        c.wait_runs(i).await;
        gaps.push((Instant::now() - last).as_millis() as u64);
        last = Instant::now();
    }
    gaps
}

#[tokio::test(start_paused = true)]
async fn transient_failures_back_off_exponentially_then_connect() {
    let f = FakeFactory::new();
    f.script(&key("a"), std::iter::repeat_n(Step::Fail(transient()), 4));
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true)]), &[]).await;
    assert_eq!(run_gaps(&f, "a", 5).await, [1000, 2000, 4000, 8000]);
    wait_state(&sup, "a", ComponentState::Connected).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!(
        h.restarts, 0,
        "attempts that never connected are not restarts"
    );
    assert_eq!(h.error, None, "connecting clears the error");
    assert!(h.last_success_unix_seconds.is_some());
}

#[tokio::test(start_paused = true)]
async fn jittered_delays_stay_within_their_ceilings() {
    let f = FakeFactory::new();
    f.script(&key("a"), std::iter::repeat_n(Step::Fail(transient()), 8));
    let sup = Supervisor::new(f.clone(), LifecyclePolicy::default());
    sup.apply(set(&[desired("a", true)]), &[]).await;
    let gaps = run_gaps(&f, "a", 9).await;
    for (attempt, gap) in gaps.iter().enumerate() {
        let ceiling = BackoffPolicy::default().ceiling(attempt as u32).as_millis() as u64;
        assert!(
            *gap <= ceiling + 1,
            "attempt {attempt}: {gap} ms > {ceiling} ms"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn backoff_state_shows_error_and_next_retry() {
    let f = FakeFactory::new();
    f.script(&key("a"), [Step::Fail(transient())]);
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true)]), &[]).await;
    wait_state(&sup, "a", ComponentState::Backoff).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!(h.error.as_deref(), Some("network down"));
    assert!(h.next_retry_unix_seconds.is_some());
    wait_state(&sup, "a", ComponentState::Connected).await;
    assert_eq!(
        sup.registry()
            .cell("wechat:a")
            .expect("cell")
            .get()
            .next_retry_unix_seconds,
        None
    );
}

#[tokio::test(start_paused = true)]
async fn a_minute_connected_resets_the_backoff() {
    let f = FakeFactory::new();
    let healthy = Step::ConnectThenFail(Duration::from_secs(61), transient());
    f.script(&key("a"), [healthy.clone(), healthy.clone(), healthy]);
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true)]), &[]).await;
    // Each run lives 61 s, then waits the base delay again (1 s): the attempt count was reset.
    assert_eq!(run_gaps(&f, "a", 4).await, [62_000, 62_000, 62_000]);

    let f = FakeFactory::new();
    let flaky = Step::ConnectThenFail(Duration::from_secs(10), transient());
    f.script(&key("b"), [flaky.clone(), flaky.clone(), flaky]);
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("b", true)]), &[]).await;
    assert_eq!(run_gaps(&f, "b", 4).await, [11_000, 12_000, 14_000]);
}

#[tokio::test(start_paused = true)]
async fn slow_down_is_honoured_exactly_without_raising_the_attempt() {
    let f = FakeFactory::new();
    f.script(
        &key("a"),
        [
            Step::Fail(transient()),
            Step::Fail(ComponentError::slow_down(
                Code::new("test.throttled"),
                "throttled",
                Duration::from_secs(30),
            )),
            Step::Fail(transient()),
        ],
    );
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true)]), &[]).await;
    assert_eq!(run_gaps(&f, "a", 4).await, [1000, 30_000, 2000]);
}

#[tokio::test(start_paused = true)]
async fn fatal_fails_and_never_restarts_until_its_config_changes() {
    let f = FakeFactory::new();
    let fatal = ComponentError::fatal(
        Code::new("wechat.session_expired"),
        "session expired",
        Action::Relogin(key("a")),
    );
    f.script(&key("a"), [Step::Fail(fatal)]);
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true)]), &[]).await;
    wait_state(&sup, "a", ComponentState::Failed).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!(h.error.as_deref(), Some("session expired"));
    assert_eq!(h.action.as_deref(), Some("run `scv-bridge login wechat a`"));
    // The cause and the command, each in its own field.
    assert_eq!(h.code.as_deref(), Some("wechat.session_expired"));
    assert_eq!(h.command.as_deref(), Some("scv-bridge login wechat a"));
    tokio::time::sleep(Duration::from_secs(7200)).await;
    assert_eq!(f.component(&key("a")).runs(), 1, "no restart while failed");
    // New credentials: restarted, and the default script connects.
    let mut renewed = desired("a", true);
    renewed.credentials = Some("fp2".into());
    let report = sup.apply(set(&[renewed]), &[]).await;
    assert_eq!(report.restarted, ["wechat:a"]);
    wait_state(&sup, "a", ComponentState::Connected).await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_account_restarts_on_any_apply_even_with_the_same_settings() {
    // The fix may be on the platform's side (a secret re-enabled, a password reset to the
    // stored one): `login` with the same credentials or `reload` must try again.
    let f = FakeFactory::new();
    let fatal = ComponentError::fatal(
        Code::new("feishu.bad_credentials"),
        "app secret rejected",
        Action::Relogin(key("a")),
    );
    f.script(&key("a"), [Step::Fail(fatal)]);
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true), desired("b", true)]), &[])
        .await;
    wait_state(&sup, "a", ComponentState::Failed).await;
    wait_state(&sup, "b", ComponentState::Connected).await;
    let report = sup
        .apply(set(&[desired("a", true), desired("b", true)]), &[])
        .await;
    assert_eq!(report.restarted, ["wechat:a"], "only the failed one");
    wait_state(&sup, "a", ComponentState::Connected).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!((h.error.clone(), h.action.clone()), (None, None));
    assert_eq!((h.code.clone(), h.command.clone()), (None, None));
    assert_eq!(f.builds(&key("b")), 1, "a healthy account is left alone");
    // Once healthy, the same apply changes nothing.
    let report = sup
        .apply(set(&[desired("a", true), desired("b", true)]), &[])
        .await;
    assert_eq!(report, ReloadReport::default());
}

#[tokio::test(start_paused = true)]
async fn failed_connection_attempts_never_fail_the_account_and_wait_at_most_the_cap() {
    let f = FakeFactory::new();
    f.script(&key("a"), std::iter::repeat_n(Step::Fail(transient()), 40));
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true)]), &[]).await;
    let gaps = run_gaps(&f, "a", 41).await;
    assert!(
        gaps.iter().all(|g| *g <= 300_000),
        "capped at 5 min: {gaps:?}"
    );
    assert_eq!(gaps[gaps.len() - 1], 300_000);
    wait_state(&sup, "a", ComponentState::Connected).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!(h.restarts, 0);
    assert_eq!(h.error, None);
}

#[tokio::test(start_paused = true)]
async fn four_short_outages_within_an_hour_end_connected() {
    // 60 s down (every attempt refused), 20 s up, four times: the restart budget is never
    // spent by attempts, and once the platform is healthy the account connects.
    let f = FakeFactory::new();
    let c = f.component(&key("a"));
    let sup = Supervisor::new(f.clone(), policy(1.0));
    let script_round = |c: &crate::testing::FakeComponent| {
        // Attempts at 0, 1, 3, 7, 15, 31 s: the sixth lands after 60 s down (63 s).
        c.push(std::iter::repeat_n(Step::Fail(transient()), 6));
        c.push([Step::ConnectThenFail(Duration::from_secs(20), transient())]);
    };
    for _ in 0..4 {
        script_round(&c);
    }
    sup.apply(set(&[desired("a", true)]), &[]).await;
    c.wait_runs(4 * 7 + 1).await;
    wait_state(&sup, "a", ComponentState::Connected).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!(
        h.restarts, 4,
        "only the four drops of a connected run count"
    );
    // Once it had connected, retries waited at most the reconnect cap (10 s), so the four
    // drops all fell within the hour before it connected.
    assert_eq!(h.restarts_last_hour, Some(4));
}

#[tokio::test(start_paused = true)]
async fn an_account_that_keeps_dropping_waits_the_cap_instead_of_failing() {
    let f = FakeFactory::new();
    let flap = Step::ConnectThenFail(Duration::from_secs(1), transient());
    f.script(&key("a"), std::iter::repeat_n(flap, 12));
    let sup = Supervisor::new(f.clone(), policy(0.0)); // no backoff: only the budget slows it
    sup.apply(set(&[desired("a", true)]), &[]).await;
    let gaps = run_gaps(&f, "a", 12).await;
    // Ten restarts within the budget, each after its 1 s run; the eleventh waits the cap of an
    // account that has connected (the reconnect cap, not the 5 min of one that never did).
    assert_eq!(gaps[..10], [1000; 10]);
    assert_eq!(gaps[10], 1000 + 10_000);
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_ne!(h.state, ComponentState::Failed);
    // After its twelfth run the account is over budget again and says so while it waits.
    wait_state(&sup, "a", ComponentState::Backoff).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert!(
        h.error.as_deref().is_some_and(|e| e.starts_with(
            "12 failures in the last hour, so retries wait 10 s; last error: network down"
        )),
        "{:?}",
        h.error
    );
    assert!(h.next_retry_unix_seconds.is_some());
    assert_eq!(h.code.as_deref(), Some("network"), "the last error's cause");
    assert_eq!(h.action, None, "nothing for a person to do but wait");
    assert_eq!(h.command, None);
}

#[tokio::test(start_paused = true)]
async fn a_panic_is_a_transient_failure_and_other_accounts_run_on() {
    let f = FakeFactory::new();
    f.script(&key("a"), [Step::Panic]);
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true), desired("b", true)]), &[])
        .await;
    wait_state(&sup, "b", ComponentState::Connected).await;
    f.component(&key("a")).wait_runs(2).await;
    wait_state(&sup, "a", ComponentState::Connected).await;
    // It panicked before connecting: one more attempt, not a restart of a working account.
    assert_eq!(
        sup.registry()
            .cell("wechat:a")
            .expect("cell")
            .get()
            .restarts,
        0
    );
    assert_eq!(f.component(&key("b")).runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn disable_and_enable() {
    let f = FakeFactory::new();
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", false)]), &[]).await;
    let h = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!((h.state, h.enabled), (ComponentState::Disabled, false));
    assert_eq!(f.builds(&key("a")), 0, "a disabled account runs nothing");
    sup.apply(set(&[desired("a", true)]), &[]).await;
    wait_state(&sup, "a", ComponentState::Connected).await;
    sup.apply(set(&[desired("a", false)]), &[]).await;
    assert_eq!(
        sup.registry().cell("wechat:a").expect("cell").get().state,
        ComponentState::Disabled
    );
}

#[tokio::test(start_paused = true)]
async fn a_reload_that_changes_one_of_three_restarts_only_that_one() {
    let f = FakeFactory::new();
    let sup = Supervisor::new(f.clone(), policy(1.0));
    let three = [desired("a", true), desired("b", true), desired("c", true)];
    sup.apply(set(&three), &[]).await;
    for n in ["a", "b", "c"] {
        wait_state(&sup, n, ComponentState::Connected).await;
    }
    let mut changed = three.clone();
    changed[1].spec.senders = Senders::Anyone;
    let report = sup.apply(set(&changed), &[]).await;
    assert_eq!(report.restarted, ["wechat:b"]);
    assert!(report.started.is_empty() && report.stopped.is_empty());
    wait_state(&sup, "b", ComponentState::Connected).await;
    assert_eq!(
        [
            f.builds(&key("a")),
            f.builds(&key("b")),
            f.builds(&key("c"))
        ],
        [1, 2, 1]
    );
    assert_eq!(f.component(&key("a")).runs(), 1);
    // Removing one stops it and drops it from status.
    let report = sup.apply(set(&changed[..2]), &[]).await;
    assert_eq!(report.stopped, ["wechat:c"]);
    assert!(sup.registry().cell("wechat:c").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_component_that_hangs_on_stop_is_abandoned_after_the_grace_period() {
    let f = FakeFactory::new();
    f.script(&key("a"), [Step::HangOnStop]);
    let sup = Supervisor::new(f.clone(), policy(1.0));
    sup.apply(set(&[desired("a", true), desired("b", true)]), &[])
        .await;
    wait_state(&sup, "a", ComponentState::Connected).await;
    wait_state(&sup, "b", ComponentState::Connected).await;
    let started = Instant::now();
    let report = sup.shutdown().await;
    assert_eq!(Instant::now() - started, Duration::from_secs(5));
    assert_eq!(report.abandoned, ["wechat:a"]);
    let a = sup.registry().cell("wechat:a").expect("cell").get();
    assert_eq!(a.state, ComponentState::Stopped);
    assert!(a.error.as_deref().is_some_and(|e| e.contains("abandoned")));
    assert_eq!(
        sup.registry().cell("wechat:b").expect("cell").get().state,
        ComponentState::Stopped
    );
}

#[tokio::test(start_paused = true)]
async fn effective_tools_need_a_known_owner() {
    let f = FakeFactory::new();
    let sup = Supervisor::new(f.clone(), policy(1.0));
    let mut d = desired("a", true);
    d.spec.remote_tools = RemoteTools::Owner;
    sup.apply(set(&[d]), &[]).await;
    let cell = sup.registry().cell("wechat:a").expect("cell");
    assert_eq!(
        cell.get().remote_tools,
        RemoteTools::None,
        "owner unknown: no tools"
    );
    HealthHandle::new(cell.clone()).set_ids(Some("bot".into()), Some("owner".into()));
    assert_eq!(cell.get().remote_tools, RemoteTools::Owner);
}

#[test]
fn notes_are_published_apart_from_the_run_error() {
    let cell = HealthCell::new(&desired("a", true).spec);
    let handle = HealthHandle::new(cell.clone());
    handle.note(NoteSource::Sends, Some("3 waiting".into()));
    handle.note(NoteSource::Account, Some("no owner paired".into()));
    handle.disconnected("no answer for 40 s");
    let h = cell.get();
    assert_eq!(
        h.error.as_deref(),
        Some("no answer for 40 s; no owner paired; 3 waiting"),
        "old clients still read everything in `error`"
    );
    assert_eq!(
        h.notes,
        [
            HealthNote {
                source: NoteSource::Account,
                text: "no owner paired".into()
            },
            HealthNote {
                source: NoteSource::Sends,
                text: "3 waiting".into()
            },
        ]
    );
    assert_eq!(h.code, None, "a reason without a code clears the code");
    handle.note(NoteSource::Account, None);
    handle.connected();
    let h = cell.get();
    assert_eq!(h.error.as_deref(), Some("3 waiting"));
    assert_eq!(h.notes.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn status_shows_restarts_ageing_out_of_the_hour() {
    let registry = HealthRegistry::default();
    let cell = HealthCell::new(&desired("a", true).spec);
    registry.insert("a".into(), cell.clone());
    let shown = |r: &HealthRegistry| r.snapshot()[0].restarts_last_hour;
    assert_eq!(shown(&registry), None, "no restart yet");
    cell.record_restart();
    tokio::time::advance(Duration::from_secs(1800)).await;
    cell.record_restart();
    assert_eq!(shown(&registry), Some(2));
    tokio::time::advance(Duration::from_secs(1801)).await;
    assert_eq!(shown(&registry), Some(1), "the first is past the hour");
    tokio::time::advance(Duration::from_secs(1800)).await;
    assert_eq!(shown(&registry), Some(0), "both are past the hour");
    assert!(
        registry.snapshot_json()[0].contains("\"restarts_last_hour\":0"),
        "the wire JSON follows"
    );
}
