//! The login check, the token endpoint and `connections/open`, and how their refusals classify.

use scv_dingtalk::fake::{FakeConfig, Fault};
use scv_dingtalk::stream::{default_subscriptions, open::open};
use scv_dingtalk::{Call, Client, Credentials, Error, ErrorClass, FatalReason};

use crate::{start, start_with};

#[tokio::test(start_paused = true)]
async fn login_check_returns_the_bot_identity() {
    let (fake, client) = start().await;
    let id = client.check_login().await.expect("login");
    assert_eq!(id.client_id, fake.config().client_id);
    assert_eq!(id.robot_code, fake.config().client_id);
    let opens = fake.opens();
    assert_eq!(opens.len(), 1);
    assert!(opens[0].accept_json);
    assert!(opens[0].ua.starts_with("scv-bridge-sdk-rust/"));
    let topics: Vec<&str> = opens[0]
        .subscriptions
        .iter()
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(
        topics,
        ["/v1.0/im/bot/messages/get", "/v1.0/card/instances/callback"]
    );
}

#[tokio::test(start_paused = true)]
async fn wrong_secret_is_fatal_and_asks_for_a_login() {
    let (fake, _) = start().await;
    let mut o = fake.client_options();
    // Whitespace around a pasted secret is trimmed, a wrong one is refused.
    o.credentials = Credentials::new(fake.config().client_id.clone(), " wrong ");
    let e = Client::new(o).unwrap().check_login().await.unwrap_err();
    assert!(
        matches!(&e, Error::Api { status: 400, code, .. } if code == "invalidClientIdOrSecret"),
        "{e}"
    );
    let ErrorClass::Fatal(reason) = e.class() else {
        panic!("{e}")
    };
    assert_eq!(reason, FatalReason::BadCredentials);
    assert!(reason.relogin());
    assert!(
        !e.to_string().contains("wrong"),
        "no secret in the message: {e}"
    );
    let mut o = fake.client_options();
    o.credentials = Credentials::new(
        format!("  {}\n", fake.config().client_id),
        format!(" {} ", fake.config().client_secret),
    );
    Client::new(o)
        .unwrap()
        .check_login()
        .await
        .expect("padded paste still logs in");
}

#[tokio::test(start_paused = true)]
async fn open_refusals_classify_from_the_body() {
    let (fake, client) = start().await;
    let subs = default_subscriptions();
    // Wrong secret at open: 401 authFailed.
    let mut o = fake.client_options();
    o.credentials = Credentials::new(fake.config().client_id.clone(), "nope");
    let e = open(&Client::new(o).unwrap(), &subs).await.unwrap_err();
    assert_eq!(
        e.class(),
        ErrorClass::Fatal(FatalReason::BadCredentials),
        "{e}"
    );
    // Robot off / not Stream / unpublished: 400 invalidParameter.
    fake.fail_next(
        Call::OpenConnection,
        Fault::Api {
            status: 400,
            code: "invalidParameter".into(),
            scopes: vec![],
        },
    );
    let e = client.check_login().await.unwrap_err();
    assert_eq!(
        e.class(),
        ErrorClass::Fatal(FatalReason::AppNotReady),
        "{e}"
    );
    let ErrorClass::Fatal(reason) = e.class() else {
        panic!()
    };
    assert!(reason.hint().contains("Stream"));
    // 503 and a gateway page: transient.
    fake.fail_next(Call::OpenConnection, Fault::Status(503));
    assert_eq!(
        open(&client, &subs).await.unwrap_err().class(),
        ErrorClass::Transient
    );
    // No subscriptions: refused as a bad request.
    let e = open(&client, &[]).await.unwrap_err();
    assert!(matches!(&e, Error::Api { status: 400, .. }), "{e}");
    // A hung open: our timeout, transient.
    fake.fail_next(Call::OpenConnection, Fault::Hang);
    let e = open(&client, &subs).await.unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert_eq!(e.class(), ErrorClass::Transient);
}

#[tokio::test(start_paused = true)]
async fn the_fake_answers_xml_without_accept_json_and_refuses_form_tokens() {
    let (fake, _) = start().await;
    let http = reqwest::Client::new();
    let c = fake.config();
    let r = http
        .post(format!("{}/v1.0/gateway/connections/open", fake.base_url()))
        .json(
            &serde_json::json!({"clientId": c.client_id, "clientSecret": c.client_secret,
               "subscriptions": [{"type": "CALLBACK", "topic": "/v1.0/im/bot/messages/get"}]}),
        )
        .send()
        .await
        .unwrap();
    assert!(r.text().await.unwrap().starts_with("<?xml"));
    let r = http
        .post(format!("{}/v1.0/oauth2/accessToken", fake.base_url()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "appKey={}&appSecret={}",
            c.client_id, c.client_secret
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test(start_paused = true)]
async fn the_token_is_cached_refreshed_early_and_refetched_once_when_revoked() {
    let config = FakeConfig {
        token_lifetime: std::time::Duration::from_secs(7200),
        ..FakeConfig::default()
    };
    let (fake, client) = start_with(config).await;
    let send = async || {
        client
            .send_to_user(
                crate::OWNER,
                &scv_dingtalk::send::Outgoing::Text {
                    content: "x".into(),
                },
            )
            .await
    };
    send().await.expect("first send");
    send().await.expect("second send");
    assert_eq!(fake.token_requests(), 1, "cached");
    // 5 min before expiry the cache refreshes.
    tokio::time::advance(std::time::Duration::from_secs(7200 - 299)).await;
    send().await.expect("after refresh");
    assert_eq!(fake.token_requests(), 2);
    // Revoked under us: one refetch, one retry, success; no storm.
    fake.revoke_tokens();
    send().await.expect("retried once with a new token");
    assert_eq!(fake.token_requests(), 3);
    // Three sends, then the refused attempt and its one retry.
    assert_eq!(fake.calls(Call::BatchSend), 5, "one retry only");
    // A token endpoint that keeps failing is reported, not retried in a loop.
    fake.revoke_tokens();
    fake.fail_next(Call::Token, Fault::Status(502));
    let e = send().await.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Transient, "{e}");
}
