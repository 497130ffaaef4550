//! Accounts always come back: short outages never end an account, and after `failed` the fix a
//! person runs (`login` with the same credentials, `reload`) restarts it, on every channel.

use crate::feishu_support;
use crate::support_mail;
use crate::wechat_support;

use std::time::Duration;

use scv_bridge::protocol::ComponentState;
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, Fault};
use tokio::time::Instant;

/// The default backoff cap: after the platform heals, the account must be back within it.
const CAP: Duration = Duration::from_secs(300);

/// Waits until the account is connected or failed (no timeout: on a paused clock a timeout fires
/// whenever the runtime waits on the store's thread; the fake's held polls keep time moving).
async fn settled(h: &wechat_support::Harness) -> ComponentState {
    let registry = h.daemon().core.registry();
    let cell = registry.cell(wechat_support::ID).expect("cell");
    let mut rx = cell.subscribe();
    loop {
        let state = cell.get().state;
        if matches!(state, ComponentState::Connected | ComponentState::Failed) {
            return state;
        }
        rx.changed().await.expect("cell alive");
    }
}

#[tokio::test(start_paused = true)]
async fn wechat_four_short_outages_then_healthy_connects_within_the_cap_and_answers_once() {
    let mut h = wechat_support::Harness::new(FakeConfig::default(), "").await;
    // The daemon's real lifecycle: 1 s base, 5 min cap, 10 restarts an hour.
    h.policy = scv_bridge::supervisor::LifecyclePolicy::default();
    h.start().await;
    assert_eq!(settled(&h).await, ComponentState::Connected);
    let fake = h.fake.handle();
    for round in 0..4 {
        // iLink's gateway answers 502 to every poll for 60 s, then is healthy for 20 s.
        fake.inject_n(Endpoint::GetUpdates, Fault::Status(502), 100_000);
        scv_bridge::testing::let_time_pass(Duration::from_secs(60)).await;
        let s = h.status().await;
        assert_ne!(s.state, ComponentState::Failed, "round {round}: {s:?}");
        fake.clear_faults();
        scv_bridge::testing::let_time_pass(Duration::from_secs(20)).await;
    }
    let healed = Instant::now();
    let state = settled(&h).await;
    let s = h.status().await;
    assert_eq!(state, ComponentState::Connected, "{s:?}");
    assert!(healed.elapsed() <= CAP, "back after {:?}", healed.elapsed());
    assert_eq!(s.action, None);

    fake.push_text(wechat_support::OWNER, "still there?");
    wechat_support::until_sent(&fake, 1, Duration::from_secs(60)).await;
    let texts: Vec<String> = fake.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["echo: still there?"]);
    assert_eq!(h.agent.turns("still there?"), 1, "answered once");
    h.stop().await;
}

#[tokio::test]
async fn wechat_failed_session_comes_back_on_a_login_with_the_same_credentials() {
    let mut h = wechat_support::Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let fake = h.fake.handle();
    // The platform refuses the session once; then it works again with the same token.
    fake.inject(Endpoint::GetUpdates, Fault::session_expired());
    h.wait_state(ComponentState::Failed).await;
    let token = fake.bot_token().expect("token");
    h.save_login(token.expose());
    let line = scv_bridge::login::notify_daemon(&h.config()).await;
    assert!(line.contains("picked up"), "{line}");
    h.wait_state(ComponentState::Connected).await;
    fake.push_text(wechat_support::OWNER, "back?");
    assert_eq!(h.wait_sent(1).await, ["echo: back?"]);
    h.stop().await;
}

#[tokio::test]
async fn wechat_failed_account_comes_back_on_reload() {
    let mut h = wechat_support::Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    h.fake
        .handle()
        .inject(Endpoint::GetUpdates, Fault::session_expired());
    h.wait_state(ComponentState::Failed).await;
    let report = h.daemon().core.reload().await.expect("reload");
    assert_eq!(report.restarted, [wechat_support::ID]);
    h.wait_state(ComponentState::Connected).await;
    h.stop().await;
}

#[tokio::test]
async fn feishu_rejected_secret_comes_back_on_a_login_with_the_same_secret() {
    use feishu_support::{ACCOUNT, Harness, OWNER, Setup};
    let setup = Setup::owned();
    let fake = scv_feishu::fake::FakeFeishu::start(setup.fake)
        .await
        .expect("fake");
    // The app's secret is refused (disabled in the console while the daemon starts)...
    fake.refuse_secret(true);
    let dir = tempfile::tempdir().expect("tempdir");
    // A configured owner: login then stores exactly the same credentials (no pairing code).
    let table = format!("senders = \"owner\"\nowner = \"{OWNER}\"\n");
    let config = feishu_support::write_config(dir.path(), &fake, &table);
    let h = Harness::start_with(fake, dir, config, setup.credentials, setup.agent, None).await;
    h.wait_state(ComponentState::Failed).await;
    assert!(
        h.health()
            .action
            .is_some_and(|a| a.contains("scv-bridge login feishu work"))
    );
    // ...the person re-enables it and runs `scv-bridge login feishu work` with the same secret.
    h.fake.refuse_secret(false);
    let before = h.credentials.load(ACCOUNT).expect("load").expect("stored");
    let settings =
        scv_bridge::adapters::feishu::FeishuSettings::of(&h.config.accounts[&h.key()].settings);
    let fake_cfg = h.fake.config().clone();
    scv_bridge::adapters::feishu::login::store_credentials(
        &h.credentials,
        &h.key(),
        &settings,
        &fake_cfg.app_id,
        &fake_cfg.app_secret,
        scv_bridge::supervisor::unix_now(),
    )
    .await
    .expect("login");
    let after = h.credentials.load(ACCOUNT).expect("load").expect("stored");
    assert_eq!(
        before.fingerprint(),
        after.fingerprint(),
        "the same credentials"
    );
    let line = scv_bridge::login::notify_daemon(&h.config).await;
    assert!(line.contains("picked up"), "{line}");
    h.wait_state(ComponentState::Connected).await;
    h.fake.push_p2p_text(OWNER, "back?");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    assert_eq!(
        h.texts_to(&feishu_support::p2p_chat(OWNER)),
        ["echo: back?"]
    );
    h.stop().await;
}

#[tokio::test]
async fn mail_rejected_password_comes_back_on_reload_once_the_server_takes_it() {
    let mut h = support_mail::Harness::new("").await;
    // The stored password is not the server's (yet): the account fails for its credentials.
    h.password = "renewed".into();
    h.start().await;
    h.wait_health(20, "failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(
        health.error.as_deref(),
        Some("the mail server rejected the credentials")
    );
    // The person changes the password on the server to the stored one and runs the fix.
    let users = std::path::Path::new(h.server.var("MAILSERVER_DIR")).join("users");
    let text = std::fs::read_to_string(&users).expect("users file");
    std::fs::write(&users, text.replace("{PLAIN}secret:", "{PLAIN}renewed:")).expect("write");
    let config =
        scv_bridge::config::Config::load(&h.dir.path().join("config.toml")).expect("config");
    let line = scv_bridge::login::notify_daemon(&config).await;
    assert!(line.contains("picked up"), "{line}");
    h.wait_health(20, "connected", |c| c.state == ComponentState::Connected)
        .await;
    h.stop().await;
}
