//! Webhook mode: what `setWebhook` refuses, deliveries checked by their secret, retries on a
//! non-2xx answer, and polling refused while a webhook is set.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use scv_telegram::fake::WEBHOOK_ATTEMPTS;
use scv_telegram::webhook::{DeliveryError, SECRET_HEADER, WebhookSecret, read_delivery};
use scv_telegram::{ErrorClass, FatalReason, Offset, Update};

use crate::{PROMPTLY, start};

/// A loopback receiver: refuses the first `fail_first` deliveries with 500, then journals
/// (here: keeps) each update whose secret matches and answers 200.
#[derive(Clone)]
struct Receiver {
    secret: WebhookSecret,
    fail_first: Arc<Mutex<u32>>,
    got: Arc<Mutex<Vec<Update>>>,
    /// Deliveries received, answered or not.
    seen: Arc<Mutex<u32>>,
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    *r.seen.lock().expect("lock") += 1;
    {
        let mut left = r.fail_first.lock().expect("lock");
        if *left > 0 {
            *left -= 1;
            return StatusCode::INTERNAL_SERVER_ERROR;
        }
    }
    let header = headers.get(SECRET_HEADER).and_then(|v| v.to_str().ok());
    match read_delivery(&r.secret, header, &body) {
        Ok(update) => {
            r.got.lock().expect("lock").push(update);
            StatusCode::OK
        }
        Err(DeliveryError::Forged) => StatusCode::UNAUTHORIZED,
        Err(DeliveryError::NotAnUpdate) => StatusCode::BAD_REQUEST,
    }
}

async fn receiver(secret: WebhookSecret, fail_first: u32) -> (String, Receiver) {
    let r = Receiver {
        secret,
        fail_first: Arc::new(Mutex::new(fail_first)),
        got: Arc::default(),
        seen: Arc::default(),
    };
    let app = axum::Router::new().fallback(receive).with_state(r.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), r)
}

#[tokio::test(start_paused = true)]
async fn set_webhook_refuses_what_the_platform_refuses() {
    let (_fake, _handle, client) = start().await;
    let secret = WebhookSecret::generate();
    let bad = FatalReason::BadWebhook;
    for (url, max) in [
        ("http://bot.example.org/hook", None),
        ("https://bot.example.org:8080/hook", None),
        ("https://bot.example.org/hook", Some(0)),
        ("https://bot.example.org/hook", Some(101)),
    ] {
        let e = client.set_webhook(url, &secret, max).await.expect_err(url);
        assert_eq!(
            e.class(),
            ErrorClass::Fatal {
                relogin: false,
                reason: bad
            },
            "{url}: {e}"
        );
    }
    client
        .set_webhook("https://bot.example.org:8443/hook", &secret, Some(40))
        .await
        .expect("a good webhook");
    let e = client.get_updates(Offset::START).await.expect_err("409");
    assert_eq!(
        e.class(),
        ErrorClass::Fatal {
            relogin: false,
            reason: FatalReason::WebhookSet
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_delivery_is_retried_then_journaled_once() {
    let (_fake, handle, client) = start().await;
    let secret = WebhookSecret::generate();
    let (target, r) = receiver(secret.clone(), 1).await;
    handle.deliver_webhooks_to(&target);
    client
        .set_webhook("https://bot.example.org/hook", &secret, None)
        .await
        .expect("set");
    let pushed = handle.push_text(handle.owner_chat(), "by webhook");
    let got = r.got.clone();
    assert!(
        handle
            .wait_until(PROMPTLY, move |_| !got.lock().expect("lock").is_empty())
            .await
    );
    assert!(handle.wait_until(PROMPTLY, |h| h.pending() == 0).await);
    let got = r.got.lock().expect("lock").clone();
    assert_eq!(got.len(), 1, "delivered once after the retry");
    assert_eq!(*r.seen.lock().expect("lock"), 2);
    assert_eq!(got[0].message(), Some(&pushed));
    let info = client.webhook_info().await.expect("info");
    assert!(info.last_error_message.is_some_and(|e| e.contains("500")));
}

#[tokio::test(start_paused = true)]
async fn a_forged_or_failing_receiver_makes_the_platform_give_up() {
    let (_fake, handle, client) = start().await;
    let ours = WebhookSecret::generate();
    // The receiver knows another secret: every delivery looks forged and is refused.
    let (target, r) = receiver(WebhookSecret::generate(), 0).await;
    handle.deliver_webhooks_to(&target);
    client
        .set_webhook("https://bot.example.org/hook", &ours, None)
        .await
        .expect("set");
    handle.push_text(handle.owner_chat(), "lost after the retries");
    assert!(handle.wait_until(PROMPTLY, |h| h.pending() == 0).await);
    assert!(
        r.got.lock().expect("lock").is_empty(),
        "nothing forged was journaled"
    );
    let info = client.webhook_info().await.expect("info");
    assert!(info.last_error_message.is_some_and(|e| e.contains("401")));
    assert_eq!(*r.seen.lock().expect("lock"), WEBHOOK_ATTEMPTS);
}
