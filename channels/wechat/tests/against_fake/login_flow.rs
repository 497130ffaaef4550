//! `run_login`, the whole QR walk the CLI runs, against the fake.

use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;

use scv_wechat::fake::{FakeConfig, FakeHandle, FakeServer};
use scv_wechat::login::{LoginError, LoginEvent, LoginOptions, LoginOutcome, LoginUi, run_login};
use scv_wechat::{Client, Endpoint};

use crate::PROMPTLY;

const OWNER: &str = "o9cq80owner@im.wechat";

#[derive(Default)]
struct Recorder {
    events: Vec<LoginEvent>,
    codes: VecDeque<String>,
}

impl LoginUi for Recorder {
    fn event(&mut self, event: LoginEvent) {
        self.events.push(event);
    }
    fn verify_code(&mut self) -> impl Future<Output = Option<String>> + Send {
        let code = self.codes.pop_front();
        async move { code }
    }
}

fn fast() -> LoginOptions {
    LoginOptions {
        poll_interval: Duration::from_millis(10),
        ..LoginOptions::default()
    }
}

async fn setup() -> (FakeServer, FakeHandle, Client) {
    let config = FakeConfig {
        initial_token: None,
        qr_hold: Duration::from_millis(50),
        ..FakeConfig::default()
    };
    let fake = FakeServer::start_with(config).await.expect("fake starts");
    let handle = fake.handle();
    let client = Client::new(&fake.base_url(), None).expect("valid");
    (fake, handle, client)
}

/// Waits until the client polled the status `more` more times.
async fn polled(handle: &FakeHandle, more: usize) {
    let n = handle.requests_to(Endpoint::GetQrcodeStatus).len() + more;
    assert!(
        handle
            .wait_for_requests(Endpoint::GetQrcodeStatus, n, PROMPTLY)
            .await
    );
}

#[tokio::test]
async fn login_refreshes_an_expired_code_then_confirms() {
    let (_fake, handle, client) = setup().await;
    let driver = tokio::spawn({
        let handle = handle.clone();
        async move {
            assert!(handle.wait_for_qr(1, PROMPTLY).await);
            polled(&handle, 1).await;
            handle.qr_expire();
            assert!(handle.wait_for_qr(2, PROMPTLY).await);
            handle.qr_scan();
            polled(&handle, 2).await;
            handle.qr_confirm(OWNER)
        }
    });
    let mut ui = Recorder::default();
    let outcome = run_login(&client, &[], &fast(), &mut ui)
        .await
        .expect("logged in");
    let issued = driver.await.expect("driver").expect("token issued");
    let LoginOutcome::Confirmed(creds) = outcome else {
        panic!("expected credentials")
    };
    assert_eq!(creds.bot_token, issued);
    assert_eq!(creds.owner_user_id.as_deref(), Some(OWNER));
    let shown: Vec<u32> = ui
        .events
        .iter()
        .filter_map(|e| match e {
            LoginEvent::ShowQr { number, of, .. } => Some(*number * 10 + *of),
            _ => None,
        })
        .collect();
    assert_eq!(shown, [13, 23], "code 1 of 3, then code 2 of 3");
    assert!(ui.events.contains(&LoginEvent::Expired));
    assert!(ui.events.contains(&LoginEvent::Scanned));
    assert_eq!(
        ui.events
            .iter()
            .filter(|e| **e == LoginEvent::Scanned)
            .count(),
        1,
        "reported once"
    );
}

#[tokio::test]
async fn login_gives_up_when_every_code_expires() {
    let (_fake, handle, client) = setup().await;
    let options = LoginOptions {
        max_codes: 2,
        ..fast()
    };
    let driver = tokio::spawn({
        let handle = handle.clone();
        async move {
            for n in 1..=2 {
                assert!(handle.wait_for_qr(n, PROMPTLY).await);
                handle.qr_expire();
            }
        }
    });
    let err = run_login(&client, &[], &options, &mut Recorder::default())
        .await
        .expect_err("gives up");
    driver.await.expect("driver");
    assert!(matches!(err, LoginError::TooManyCodes(2)), "{err}");
    assert_eq!(handle.qr_codes_issued(), 2);
}

#[tokio::test]
async fn login_sends_verify_codes_and_reports_a_wrong_one() {
    let (_fake, handle, client) = setup().await;
    let driver = tokio::spawn({
        let handle = handle.clone();
        async move {
            assert!(handle.wait_for_qr(1, PROMPTLY).await);
            handle.qr_require_verify_code("4821");
            // Wrong code, right code, then one more poll sees `scaned`.
            polled(&handle, 3).await;
            handle.qr_confirm(OWNER);
        }
    });
    let mut ui = Recorder {
        codes: ["0000".to_owned(), "4821".to_owned()].into(),
        ..Recorder::default()
    };
    let outcome = run_login(&client, &[], &fast(), &mut ui)
        .await
        .expect("logged in");
    driver.await.expect("driver");
    assert!(matches!(outcome, LoginOutcome::Confirmed(_)));
    assert!(ui.codes.is_empty(), "both codes were asked for");
    assert_eq!(
        ui.events
            .iter()
            .filter(|e| **e == LoginEvent::WrongVerifyCode)
            .count(),
        1
    );
    let queries: Vec<_> = handle
        .requests_to(Endpoint::GetQrcodeStatus)
        .into_iter()
        .filter_map(|r| r.query)
        .collect();
    assert!(queries.iter().any(|q| q.contains("verify_code=0000")));
    assert!(queries.iter().any(|q| q.contains("verify_code=4821")));
}

#[tokio::test]
async fn login_without_a_verify_code_is_cancelled_and_a_silent_one_times_out() {
    let (_fake, handle, client) = setup().await;
    let driver = tokio::spawn({
        let handle = handle.clone();
        async move {
            assert!(handle.wait_for_qr(1, PROMPTLY).await);
            handle.qr_require_verify_code("1");
        }
    });
    let err = run_login(&client, &[], &fast(), &mut Recorder::default())
        .await
        .expect_err("cancelled");
    driver.await.expect("driver");
    assert!(matches!(err, LoginError::Cancelled), "{err}");

    let options = LoginOptions {
        deadline: Duration::from_millis(300),
        ..fast()
    };
    let err = run_login(&client, &[], &options, &mut Recorder::default())
        .await
        .expect_err("times out");
    assert!(matches!(err, LoginError::TimedOut(_)), "{err}");
}

#[tokio::test]
async fn already_bound_keeps_the_stored_credentials() {
    let (_fake, handle, client) = setup().await;
    let driver = tokio::spawn({
        let handle = handle.clone();
        async move {
            assert!(handle.wait_for_qr(1, PROMPTLY).await);
            handle.qr_already_bound();
        }
    });
    let stored = [scv_wechat::BotToken::new("stored")];
    let outcome = run_login(&client, &stored, &fast(), &mut Recorder::default())
        .await
        .expect("bound");
    driver.await.expect("driver");
    assert_eq!(outcome, LoginOutcome::AlreadyBound);
    assert_eq!(handle.qr_local_token_lists(), [vec!["stored".to_owned()]]);
}
