//! Webhook mode (§1.5, §8.11): the fake signs and POSTs; a callback built on
//! `WebhookKey::open` (as the daemon's will be) checks before reading and journals before 200.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use scv_qq::fake::{FakeConfig, FakeQq};
use scv_qq::webhook::{WebhookKey, WebhookRequest, ack_body};
use serde_json::json;

const NOW: u64 = 1_780_000_000;

/// What the callback journaled, and how many requests it should fail first.
#[derive(Default)]
struct Journal {
    ids: Vec<String>,
    fail_first: u32,
    refused: u32,
}

async fn callback(fake: &FakeQq, journal: Arc<Mutex<Journal>>) -> String {
    let key = Arc::new(WebhookKey::from_secret(&fake.credentials().app_secret));
    let app = axum::Router::new().route(
        "/qq",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let (key, journal) = (key.clone(), journal.clone());
            async move { answer(&key, &journal, &headers, &body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/qq", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn answer(
    key: &WebhookKey,
    journal: &Mutex<Journal>,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    let mut j = journal.lock().unwrap();
    match key.open(
        h("x-signature-timestamp"),
        h("x-signature-ed25519"),
        body,
        NOW,
    ) {
        Err(_) => {
            j.refused += 1;
            StatusCode::UNAUTHORIZED.into_response()
        }
        Ok(WebhookRequest::Validation(v)) => axum::Json(v).into_response(),
        Ok(WebhookRequest::Dispatch { event, .. }) => {
            if j.fail_first > 0 {
                j.fail_first -= 1;
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    axum::Json(ack_body(false)),
                )
                    .into_response();
            }
            if let Ok(scv_qq::Event::Message(m)) = event {
                j.ids.push(m.id);
            }
            axum::Json(ack_body(true)).into_response()
        }
    }
}

fn c2c(id: &str) -> serde_json::Value {
    json!({"id": id, "content": "hi", "author": {"user_openid": "U1"}})
}

#[tokio::test]
async fn validation_and_events_go_through_and_a_failed_journal_is_resent() {
    let fake = FakeQq::start(FakeConfig::default()).await.unwrap();
    let journal = Arc::new(Mutex::new(Journal {
        fail_first: 1,
        ..Journal::default()
    }));
    let url = callback(&fake, journal.clone()).await;
    assert!(
        fake.validate_callback(&url, NOW).await.unwrap(),
        "the signed plain_token verifies"
    );
    let statuses = fake
        .deliver_webhook(&url, "C2C_MESSAGE_CREATE", c2c("m1"), NOW, 3)
        .await
        .unwrap();
    assert_eq!(statuses, vec![500, 200]);
    assert_eq!(journal.lock().unwrap().ids, vec!["m1"]);
}

#[tokio::test]
async fn forged_and_replayed_requests_are_refused_and_nothing_is_journaled() {
    let fake = FakeQq::start(FakeConfig::default()).await.unwrap();
    let journal = Arc::new(Mutex::new(Journal::default()));
    let url = callback(&fake, journal.clone()).await;
    // Signed with another app's secret.
    let impostor = FakeQq::start(FakeConfig {
        app_secret: "not-the-secret-0123".into(),
        ..FakeConfig::default()
    })
    .await
    .unwrap();
    let statuses = impostor
        .deliver_webhook(&url, "C2C_MESSAGE_CREATE", c2c("m1"), NOW, 2)
        .await
        .unwrap();
    assert_eq!(statuses, vec![401, 401, 401]);
    // A request captured long ago and replayed.
    let old = fake.sign_frame(
        &json!({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": c2c("m2")}),
        NOW - 3600,
    );
    assert_eq!(fake.post_signed(&url, &old).await.unwrap().0, 401);
    // A body changed after signing.
    let mut tampered = fake.sign_frame(
        &json!({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": c2c("m3")}),
        NOW,
    );
    tampered.body =
        serde_json::to_vec(&json!({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": c2c("m4")})).unwrap();
    assert_eq!(fake.post_signed(&url, &tampered).await.unwrap().0, 401);
    let j = journal.lock().unwrap();
    assert!(j.ids.is_empty());
    assert_eq!(j.refused, 5);
}
