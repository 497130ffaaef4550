//! The callback-mode router over a real socket.

use std::time::Duration;

use scv_feishu::Secret;
use scv_feishu::event::EventBody;
use scv_feishu::fake::callback_request;
use scv_feishu::webhook::WebhookConfig;
use scv_feishu::webhook_server::{WebhookDelivery, router};
use scv_feishu::ws::AckResponse;
use serde_json::{Value, json};
use tokio::sync::mpsc;

async fn serve() -> (String, mpsc::Receiver<WebhookDelivery>, Secret) {
    let key = Secret::new("enc-key");
    let config = WebhookConfig {
        encrypt_key: Some(key.clone()),
        verification_token: Some(Secret::new("vt")),
    };
    let (tx, rx) = mpsc::channel(8);
    let app = router("/feishu", config, tx, Duration::from_millis(500));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/feishu", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx, key)
}

async fn post(url: &str, headers: &[(String, String)], body: Vec<u8>) -> (u16, String) {
    let mut req = reqwest::Client::new().post(url).body(body);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let resp = req.send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn encrypted_click_is_delivered_and_answered_with_the_callers_card() {
    let (url, mut rx, key) = serve().await;
    let event = json!({"operator": {"open_id": "ou_owner"}, "token": "c-1",
                       "action": {"tag": "button", "value": {"q": "q1", "a": "yes"}}});
    let (headers, body) = callback_request(Some(&key), "vt", "ev-1", "card.action.trigger", event);
    let answer = tokio::spawn(async move {
        let d = rx.recv().await.unwrap();
        let EventBody::CardAction(c) = d.parse().unwrap().body else {
            panic!("not a click")
        };
        assert_eq!(c.operator_open_id, "ou_owner");
        d.respond(AckResponse::Callback(
            json!({"toast": {"type": "success", "content": "ok"}}),
        ));
        rx
    });
    let (status, text) = post(&url, &headers, body).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["toast"]["content"],
        "ok"
    );
    let mut rx = answer.await.unwrap();

    // A forged signature never reaches the caller.
    let (mut headers, body) = callback_request(Some(&key), "vt", "ev-2", "x.y", json!({}));
    for (k, v) in headers.iter_mut() {
        if k.eq_ignore_ascii_case("X-Lark-Signature") {
            *v = "f".repeat(64);
        }
    }
    let (status, _) = post(&url, &headers, body).await;
    assert_eq!(status, 401);
    assert!(rx.try_recv().is_err());

    // No answer in time: 500, so the platform retries.
    let (headers, body) = callback_request(Some(&key), "vt", "ev-3", "x.y", json!({}));
    let (status, _) = post(&url, &headers, body).await;
    assert_eq!(status, 500);
}

#[tokio::test]
async fn url_verification_is_answered_without_the_caller() {
    let (url, mut rx, key) = serve().await;
    let plain = json!({"challenge": "abc", "token": "vt", "type": "url_verification"});
    let body = json!({"encrypt": scv_feishu::webhook::encrypt(&key, plain.to_string().as_bytes())});
    let (status, text) = post(&url, &[], body.to_string().into_bytes()).await;
    assert_eq!((status, text.as_str()), (200, r#"{"challenge":"abc"}"#));
    assert!(rx.try_recv().is_err());
}
