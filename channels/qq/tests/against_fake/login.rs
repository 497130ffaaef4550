//! The login check and the token rules (§1.2, §8.1–8.2).

use std::time::Duration;

use scv_qq::fake::FakeConfig;
use scv_qq::{Client, Credentials, ErrorClass, Fatal};

use crate::start;

#[tokio::test]
async fn login_check_returns_the_bots_identity() {
    let (fake, client) = start(FakeConfig::default()).await;
    let bot = client.check_login().await.expect("good credentials");
    assert_eq!(bot.id, FakeConfig::default().bot_id);
    assert_eq!(bot.username, "Fake QQ Bot");
    assert_eq!(fake.token_requests(), 1);
}

#[tokio::test]
async fn a_wrong_secret_or_app_id_is_fatal_and_asks_for_login_again() {
    let (fake, _) = start(FakeConfig::default()).await;
    for creds in [
        Credentials::new(fake.credentials().app_id, "wrong-secret"),
        Credentials::new("999", fake.credentials().app_secret.expose()),
    ] {
        let client = Client::new(scv_qq::ClientOptions {
            credentials: creds,
            ..fake.options()
        })
        .unwrap();
        let err = client.check_login().await.expect_err("refused");
        assert_eq!(
            err.class(),
            ErrorClass::Fatal(Fatal::BadCredentials),
            "{err}"
        );
        assert!(matches!(err.class(), ErrorClass::Fatal(f) if f.relogin()));
        // The error names the call and code, never the secret.
        assert!(!err.to_string().contains("fake-app-secret"), "{err}");
    }
    let codes: Vec<i64> = fake.rejected().iter().map(|r| r.code).collect();
    assert_eq!(codes, vec![100016, 100007]);
}

#[tokio::test]
async fn the_token_endpoint_refuses_a_form_body_and_the_client_classifies_that_answer() {
    let (fake, _) = start(FakeConfig::default()).await;
    let url = format!("{}/app/getAppAccessToken", fake.base_url());
    let resp = reqwest::Client::new()
        .post(&url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("appId=102000001&clientSecret=x")
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(v["code"], 100007);
    let as_client_sees_it = scv_qq::Error::Token {
        code: 100007,
        message: String::new(),
    };
    assert_eq!(
        as_client_sees_it.class(),
        ErrorClass::Fatal(Fatal::BadCredentials)
    );
    // A JSON content type with a body that is not JSON: the endpoint's own failure, retried.
    let resp = reqwest::Client::new()
        .post(&url)
        .header("Content-Type", "application/json")
        .body("appId=1")
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(v["code"], 100002);
    let e = scv_qq::Error::Token {
        code: 100002,
        message: String::new(),
    };
    assert_eq!(e.class(), ErrorClass::Transient);
}

#[tokio::test(start_paused = true)]
async fn the_same_token_until_its_last_minute_then_a_new_one_while_the_old_still_works() {
    let config = FakeConfig {
        token_lifetime: Duration::from_secs(600),
        ..FakeConfig::default()
    };
    let (fake, client) = start(config).await;
    client.check_login().await.expect("first token");
    // Well before expiry the cache answers; no new request.
    tokio::time::advance(Duration::from_secs(400)).await;
    client.check_login().await.expect("cached token");
    assert_eq!(fake.token_requests(), 1);
    // Inside the refresh margin: fetched again, and the fake now mints a new token.
    tokio::time::advance(Duration::from_secs(175)).await;
    client.check_login().await.expect("refreshed token");
    assert_eq!(fake.token_requests(), 2);
    assert!(fake.rejected().is_empty(), "{:?}", fake.rejected());
}

#[tokio::test]
async fn a_revoked_token_is_refreshed_and_the_call_retried_once() {
    let (fake, client) = start(FakeConfig::default()).await;
    client.check_login().await.expect("login");
    fake.revoke_tokens();
    client.check_login().await.expect("refreshed and retried");
    assert_eq!(fake.token_requests(), 2);
    let auth: Vec<_> = fake
        .rejected()
        .into_iter()
        .filter(|r| r.what == "auth")
        .collect();
    assert_eq!(auth.len(), 1);
    assert_eq!((auth[0].status, auth[0].code), (401, 11244));
}

#[tokio::test]
async fn app_id_as_a_number_is_refused_like_a_wrong_one() {
    let (fake, _) = start(FakeConfig::default()).await;
    let v: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/app/getAppAccessToken", fake.base_url()))
        .json(&serde_json::json!({"appId": 102000001, "clientSecret": "fake-app-secret-0123"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["code"], 100007);
    assert!(v.get("access_token").is_none());
}
