//! "Scan to create an app" against the fake accounts host, on a paused clock (the intervals and
//! the link's lifetime pass at once, and the gaps between polls are exact).

use std::time::Duration;

use scv_feishu::fake::{FakeRegistration, PollFault, RegistrationConfig};
use scv_feishu::registration::{Begun, Brand, Created, Registration, RegistrationError};

const PATIENCE: Duration = Duration::from_secs(3600);

async fn started(config: RegistrationConfig) -> (FakeRegistration, Registration, Begun) {
    let fake = FakeRegistration::start(config).await.expect("fake");
    let client = Registration::new(fake.options("Helper")).expect("client");
    client.init().await.expect("init offers client_secret");
    let begun = client.begin().await.expect("begin");
    (fake, client, begun)
}

/// Waits for `polls` polls, scans, and returns what the wait gave.
async fn scan_after(
    fake: &FakeRegistration,
    client: Registration,
    begun: Begun,
    polls: usize,
) -> Result<Created, RegistrationError> {
    let url = begun.qr_url.clone();
    let waiting = tokio::spawn(async move { client.wait(&begun).await });
    assert!(
        fake.wait_until(PATIENCE, |f| f.polls().len() >= polls)
            .await
    );
    fake.scan(&url)
        .await
        .expect("the link opens the fake's page");
    waiting.await.expect("wait task")
}

fn gaps(fake: &FakeRegistration) -> Vec<Duration> {
    let p = fake.polls();
    p.windows(2).map(|w| w[1].at - w[0].at).collect()
}

#[tokio::test(start_paused = true)]
async fn a_scan_creates_the_app_and_the_link_carries_our_parameters() {
    let (fake, client, begun) = started(RegistrationConfig::default()).await;
    assert_eq!(begun.expires_in, Duration::from_secs(600));
    assert_eq!(begun.interval, Duration::from_secs(5));
    assert!(!format!("{begun:?}").contains("dc-secret"), "{begun:?}");
    let created = scan_after(&fake, client, begun, 2).await.expect("created");
    let cfg = fake.config();
    assert_eq!(created.credentials.app_id, cfg.client_id);
    assert_eq!(created.credentials.app_secret.expose(), cfg.client_secret);
    assert_eq!(created.open_id.as_deref(), Some("ou_scanner"));
    assert_eq!(created.brand, Brand::Feishu);
    assert!(!format!("{created:?}").contains(&cfg.client_secret));

    let q = fake.scanned_query().expect("scanned");
    for (k, v) in [
        ("from", "sdk"),
        ("tp", "sdk"),
        ("source", "scv-bridge"),
        ("createOnly", "true"),
        ("name", "Helper"),
        ("user_code", "ABCD-0001"),
    ] {
        assert_eq!(q.get(k).map(String::as_str), Some(v), "{k} in {q:?}");
    }
    let b = &fake.begins()[0];
    assert_eq!(b["archetype"], "PersonalAgent");
    assert_eq!(b["auth_method"], "client_secret");
    assert_eq!(b["request_user_info"], "open_id tenant_brand");
    assert_eq!(fake.polls().len(), 3, "two pending, then the app");
    assert!(gaps(&fake).iter().all(|g| *g == Duration::from_secs(5)));
    assert_eq!(fake.bad_content_types(), 0);
}

#[tokio::test(start_paused = true)]
async fn init_without_client_secret_is_refused() {
    let fake = FakeRegistration::start(RegistrationConfig {
        auth_methods: vec!["private_key".into()],
        ..RegistrationConfig::default()
    })
    .await
    .expect("fake");
    let client = Registration::new(fake.options("Helper")).expect("client");
    let e = client.init().await.expect_err("no client_secret");
    assert!(matches!(e, RegistrationError::Unsupported), "{e:?}");
}

#[tokio::test(start_paused = true)]
async fn expire_in_is_read_and_a_missing_link_is_built() {
    let (fake, client, begun) = started(RegistrationConfig {
        expire_in_spelling: true,
        complete_uri: false,
        expires_in: Duration::from_secs(240),
        ..RegistrationConfig::default()
    })
    .await;
    assert_eq!(begun.expires_in, Duration::from_secs(240));
    let page = format!("{}/page/cli?user_code=ABCD-0001&", fake.base_url());
    assert!(begun.qr_url.starts_with(&page), "{}", begun.qr_url);
    scan_after(&fake, client, begun, 1).await.expect("created");
}

#[tokio::test(start_paused = true)]
async fn slow_down_adds_five_seconds_for_good() {
    let (fake, client, begun) = started(RegistrationConfig {
        min_interval: Duration::from_secs(8),
        ..RegistrationConfig::default()
    })
    .await;
    scan_after(&fake, client, begun, 4).await.expect("created");
    let five = Duration::from_secs(5);
    let ten = Duration::from_secs(10);
    // The 2nd poll comes 5 s after the 1st: slow_down; every later one 10 s apart.
    assert_eq!(gaps(&fake)[..4], [five, ten, ten, ten]);
}

#[tokio::test(start_paused = true)]
async fn final_answers_end_the_wait() {
    for (fault, want) in [
        (PollFault::Denied, "Denied"),
        (PollFault::Expired, "Expired"),
        (PollFault::InvalidGrant, "Expired"),
        (PollFault::Unknown, "server_exploded"),
    ] {
        let (fake, client, begun) = started(RegistrationConfig::default()).await;
        fake.set_fault(Some(fault));
        let e = client.wait(&begun).await.expect_err("final");
        assert!(format!("{e:?}").contains(want), "{fault:?}: {e:?}");
        assert_eq!(fake.polls().len(), 1, "{fault:?}: no second poll");
    }
}

#[tokio::test(start_paused = true)]
async fn the_link_expires_on_the_fake_clock() {
    let (fake, client, begun) = started(RegistrationConfig {
        expires_in: Duration::from_secs(30),
        ..RegistrationConfig::default()
    })
    .await;
    let e = client.wait(&begun).await.expect_err("expired");
    assert!(matches!(e, RegistrationError::Expired), "{e:?}");
    assert!(fake.polls().len() <= 6, "{:?}", fake.polls().len());
}

#[tokio::test(start_paused = true)]
async fn transport_failures_are_retried_then_end_the_wait() {
    for fault in [PollFault::Http500, PollFault::NotJson, PollFault::Stall] {
        let (fake, client, begun) = started(RegistrationConfig::default()).await;
        fake.set_fault(Some(fault));
        let e = client.wait(&begun).await.expect_err("transport");
        assert!(
            matches!(e, RegistrationError::Transport(_)),
            "{fault:?}: {e:?}"
        );
        assert_eq!(fake.polls().len(), 3, "{fault:?}: three tries");
        // Each retry one second slower (lark-cli).
        assert!(gaps(&fake)[1] > gaps(&fake)[0], "{fault:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_transient_failure_does_not_end_the_wait() {
    let (fake, client, begun) = started(RegistrationConfig::default()).await;
    fake.set_fault(Some(PollFault::Http500));
    let url = begun.qr_url.clone();
    let waiting = tokio::spawn(async move { client.wait(&begun).await });
    assert!(fake.wait_until(PATIENCE, |f| f.polls().len() >= 2).await);
    fake.set_fault(None);
    fake.scan(&url).await.expect("scan");
    waiting
        .await
        .expect("task")
        .expect("created after the failures");
}

#[tokio::test(start_paused = true)]
async fn json_is_refused_and_a_second_poll_after_success_is_expired() {
    let (fake, client, begun) = started(RegistrationConfig::default()).await;
    scan_after(&fake, client, begun, 1).await.expect("created");
    let url = format!("{}/oauth/v1/app/registration", fake.base_url());
    let http = reqwest::Client::new();
    let r = http
        .post(&url)
        .json(&serde_json::json!({"action": "init"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(fake.bad_content_types(), 1);
    tokio::time::advance(Duration::from_secs(10)).await;
    let r = http
        .post(&url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("action=poll&device_code=dc-secret-1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"], "expired_token");
}

#[tokio::test(start_paused = true)]
async fn a_lark_tenant_switches_hosts_once() {
    let (fake, client, begun) = started(RegistrationConfig {
        lark: true,
        ..RegistrationConfig::default()
    })
    .await;
    let created = scan_after(&fake, client, begun, 1).await.expect("created");
    assert_eq!(created.brand, Brand::Lark);
    assert_eq!(
        created.credentials.app_secret.expose(),
        fake.config().client_secret
    );
    let hosts: Vec<&str> = fake.polls().iter().map(|p| p.host).collect();
    assert_eq!(
        hosts,
        ["feishu", "feishu", "lark"],
        "switched once, at once"
    );
    let polls = fake.polls();
    assert_eq!(polls[2].at, polls[1].at, "no wait before the Lark poll");
    assert_eq!(fake.begins().len(), 1);
    assert_eq!(fake.begins_on_lark(), 0);
}
