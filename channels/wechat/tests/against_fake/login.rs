//! QR login walks: wait -> scaned -> confirmed, expiry and refresh, redirect, verify codes.

use scv_wechat::fake::{FakeConfig, FakeServer, Fault};
use scv_wechat::{BotToken, Client, Endpoint, ErrorClass, QrStatus, render_qr_terminal};

use crate::PROMPTLY;

const OWNER: &str = "o9cq80owner@im.wechat";

async fn login_fake() -> (FakeServer, Client) {
    let config = FakeConfig {
        initial_token: None,
        ..FakeConfig::default()
    };
    let fake = FakeServer::start_with(config).await.expect("fake starts");
    let client = Client::new(&fake.base_url(), None).expect("valid base URL");
    (fake, client)
}

#[tokio::test]
async fn qr_login_walks_wait_scanned_confirmed() {
    let (fake, client) = login_fake().await;
    let handle = fake.handle();
    let recent = [BotToken::new("old-token")];
    let ticket = client.get_qrcode(&recent).await.expect("qr code");
    assert!(ticket.qrcode_img_content.starts_with("http"));
    assert_ne!(ticket.qrcode, ticket.qrcode_img_content);
    assert_eq!(
        handle.qr_local_token_lists(),
        vec![vec!["old-token".to_owned()]]
    );
    assert!(render_qr_terminal(&ticket.qrcode_img_content, true).is_ok());

    // Nothing happened: the held poll ends with `wait`.
    assert_eq!(
        client
            .qrcode_status(&ticket.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Wait
    );

    // A scan while a poll is held releases it at once with `scaned`.
    let poll = tokio::spawn({
        let (client, code) = (client.clone(), ticket.qrcode.clone());
        async move { client.qrcode_status(&code, None).await }
    });
    assert!(
        handle
            .wait_for_requests(Endpoint::GetQrcodeStatus, 2, PROMPTLY)
            .await
    );
    assert!(handle.qr_scan());
    assert_eq!(
        poll.await.expect("joins").expect("status"),
        QrStatus::Scanned
    );

    let issued = handle.qr_confirm(OWNER).expect("a QR was issued");
    let QrStatus::Confirmed(creds) = client
        .qrcode_status(&ticket.qrcode, None)
        .await
        .expect("status")
    else {
        panic!("expected confirmed");
    };
    assert_eq!(creds.bot_token, issued);
    assert_eq!(creds.bot_id, handle.bot_id());
    assert_eq!(creds.owner_user_id.as_deref(), Some(OWNER));
    assert_eq!(creds.base_url(), fake.base_url());

    // The new credentials work on the returned base URL.
    let bot = client
        .with_base_url(creds.base_url())
        .expect("valid")
        .with_token(creds.bot_token.clone());
    bot.notify_start().await.expect("logged in");
    assert_eq!(handle.notifies(), vec![Endpoint::NotifyStart]);
}

#[tokio::test]
async fn expired_qr_is_refreshed_and_a_new_login_revokes_the_old_token() {
    let fake = FakeServer::start().await.expect("fake starts");
    let handle = fake.handle();
    let old = Client::new(&fake.base_url(), handle.bot_token()).expect("valid");
    old.notify_start().await.expect("initial token works");

    let login = Client::new(&fake.base_url(), None).expect("valid");
    let first = login.get_qrcode(&[]).await.expect("qr code");
    assert!(handle.qr_expire());
    assert_eq!(
        login
            .qrcode_status(&first.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Expired
    );

    let second = login.get_qrcode(&[]).await.expect("second qr code");
    assert_ne!(first.qrcode, second.qrcode);
    assert_eq!(handle.qr_codes_issued(), 2);
    assert_eq!(
        login
            .qrcode_status(&first.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Expired
    );
    handle.qr_confirm(OWNER).expect("a QR was issued");
    let QrStatus::Confirmed(creds) = login
        .qrcode_status(&second.qrcode, None)
        .await
        .expect("status")
    else {
        panic!("expected confirmed");
    };

    // Binding again revokes the old token: the old client now gets -14.
    let err = old.notify_stop().await.expect_err("old token revoked");
    assert!(err.is_session_expired(), "{err}");
    assert_eq!(err.class(), ErrorClass::Fatal { relogin: true });
    login
        .with_token(creds.bot_token)
        .notify_stop()
        .await
        .expect("new token works");
}

#[tokio::test]
async fn redirect_moves_polling_to_the_new_host() {
    let (fake, client) = login_fake().await;
    let handle = fake.handle();
    // Start on a base URL the fake does not serve from, with the same host: the redirect
    // must land on the fake's address.
    let elsewhere =
        Client::new(&fake.base_url().replace("127.0.0.1", "localhost"), None).expect("valid");
    let ticket = client.get_qrcode(&[]).await.expect("qr code");
    let host = fake.addr().to_string();
    assert!(handle.qr_redirect(Some(&host)));
    let status = elsewhere
        .qrcode_status(&ticket.qrcode, None)
        .await
        .expect("status");
    assert_eq!(
        status,
        QrStatus::Redirect {
            host: Some(host.clone())
        }
    );
    let moved = elsewhere.redirected(&host).expect("valid host");
    assert_eq!(moved.base_url(), fake.base_url());
    // One-shot: afterwards the code counts as scanned.
    assert_eq!(
        moved
            .qrcode_status(&ticket.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Scanned
    );

    assert!(handle.qr_redirect(None));
    assert_eq!(
        client
            .qrcode_status(&ticket.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Redirect { host: None }
    );
}

#[tokio::test]
async fn verify_code_blocked_and_already_bound() {
    let (fake, client) = login_fake().await;
    let handle = fake.handle();
    let ticket = client.get_qrcode(&[]).await.expect("qr code");
    let status = |code: Option<&'static str>| {
        let (client, qr) = (client.clone(), ticket.qrcode.clone());
        async move { client.qrcode_status(&qr, code).await.expect("status") }
    };
    assert!(handle.qr_require_verify_code("4821"));
    assert_eq!(status(None).await, QrStatus::NeedVerifyCode);
    assert_eq!(status(Some("0000")).await, QrStatus::NeedVerifyCode);
    assert_eq!(status(Some("4821")).await, QrStatus::Scanned);
    let sent = handle.requests_to(Endpoint::GetQrcodeStatus);
    assert!(
        sent.last()
            .and_then(|r| r.query.clone())
            .is_some_and(|q| q.contains("verify_code=4821"))
    );

    handle.qr_require_verify_code("1");
    for _ in 0..2 {
        assert_eq!(status(Some("2")).await, QrStatus::NeedVerifyCode);
    }
    assert_eq!(status(Some("2")).await, QrStatus::VerifyCodeBlocked);

    handle.qr_already_bound();
    assert_eq!(status(None).await, QrStatus::AlreadyBound);
}

#[tokio::test]
async fn gateway_errors_during_qr_polling_count_as_wait() {
    let (fake, client) = login_fake().await;
    let handle = fake.handle();
    let ticket = client.get_qrcode(&[]).await.expect("qr code");
    handle.qr_scan();
    handle.inject(Endpoint::GetQrcodeStatus, Fault::Status(524));
    handle.inject(Endpoint::GetQrcodeStatus, Fault::Reset);
    assert_eq!(
        client
            .qrcode_status(&ticket.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Wait
    );
    assert_eq!(
        client
            .qrcode_status(&ticket.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Wait
    );
    assert_eq!(
        client
            .qrcode_status(&ticket.qrcode, None)
            .await
            .expect("status"),
        QrStatus::Scanned
    );
    // A bad bot_type is refused in the body, and the client reports it.
    let bad = fake.base_url() + "ilink/bot/get_bot_qrcode?bot_type=9";
    let body: serde_json::Value = reqwest::get(&bad)
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(body["ret"], -1);
}
