//! Feishu callback (webhook) mode through the daemon: signed, encrypted callbacks POSTed to the
//! account's listener, journaled before the 200, answered over the IM API of the fake; forged and
//! unsigned requests refused before anything reaches the agent.

use crate::feishu_support;

use std::sync::Arc;

use feishu_support::*;
use scv_bridge::conversation::body::Question;
use scv_bridge::conversation::{Body, ChatId};
use scv_bridge::protocol::ComponentState;
use scv_feishu::Secret;
use scv_feishu::fake::{CallbackDelivery, FakeConfig, FakeFeishu};
use serde_json::{Value, json};

const ENCRYPT_KEY: &str = "test-encrypt-key";
const TOKEN: &str = "test-verification-token";

fn key() -> Secret {
    Secret::new(ENCRYPT_KEY)
}

/// A daemon whose `feishu:work` takes callbacks on a free loopback port.
async fn start(
    cards: Option<Arc<Questions>>,
    with_key: bool,
    agent: Arc<TestAgent>,
) -> (Harness, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let table =
        format!("senders = \"owner\"\nmode = \"webhook\"\nwebhook_listen = \"127.0.0.1:{port}\"\n");
    let config = write_config(dir.path(), &fake, &table);
    let mut creds = good_credentials(fake.config()).with("owner_id", OWNER);
    if with_key {
        creds = creds
            .with("encrypt_key", ENCRYPT_KEY)
            .with("verification_token", TOKEN);
    }
    let h = Harness::start_with(
        fake,
        dir,
        config,
        Some(creds),
        agent,
        cards.map(|c| c as Arc<dyn scv_bridge::adapters::feishu::CardAnswerHandler>),
    )
    .await;
    (h, format!("http://127.0.0.1:{port}/feishu/events"))
}

/// POSTs a callback as the platform would; returns the status and the body.
async fn post(url: &str, headers: &[(String, String)], body: Vec<u8>) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let resp = req.send().await.expect("the listener answers");
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

async fn deliver(url: &str, d: &CallbackDelivery) -> (u16, String) {
    post(url, &d.headers, d.body.clone()).await
}

#[tokio::test]
async fn callbacks_are_journaled_before_the_200_and_a_retry_is_answered_once() {
    let (h, url) = start(None, true, TestAgent::echo()).await;
    h.wait_state(ComponentState::Connected).await;

    let d = h
        .fake
        .p2p_text_callback(OWNER, "hello over http", Some(&key()), TOKEN);
    let (status, body) = deliver(&url, &d).await;
    assert_eq!((status, body.as_str()), (200, r#"{"msg":"success"}"#));
    h.until("the answer", |f| !f.sent().is_empty()).await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: hello over http"]);

    // Feishu re-sends a callback it thinks failed: answered 200 again, nothing sent twice.
    let (status, _) = deliver(&url, &d).await;
    assert_eq!(status, 200);
    let d2 = h
        .fake
        .p2p_text_callback(OWNER, "second", Some(&key()), TOKEN);
    assert_eq!(deliver(&url, &d2).await.0, 200);
    h.until("the second answer", |f| f.sent().len() == 2).await;
    assert_eq!(
        h.texts_to(&p2p_chat(OWNER)),
        ["echo: hello over http", "echo: second"]
    );
    assert_eq!(h.agent.turns(), 2);

    // The console's URL check: the challenge echoed, through the encryption.
    let plain = json!({"challenge": "c-123", "token": TOKEN, "type": "url_verification"});
    let encrypted =
        json!({"encrypt": scv_feishu::webhook::encrypt(&key(), plain.to_string().as_bytes())});
    let sig_headers = sign(&encrypted.to_string());
    let (status, body) = post(&url, &sig_headers, encrypted.to_string().into_bytes()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).ok(),
        Some(json!({"challenge": "c-123"}))
    );
    h.stop().await;
}

/// Signature headers for `body` with the test key.
fn sign(body: &str) -> Vec<(String, String)> {
    sign_at(body, now_unix())
}

/// This machine's clock, in seconds.
fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Signature headers for `body` stamped at `ts`.
fn sign_at(body: &str, ts: i64) -> Vec<(String, String)> {
    let (ts, nonce) = (ts.to_string(), "n0nce".to_string());
    let sig = scv_feishu::webhook::signature(&ts, &nonce, &key(), body.as_bytes());
    vec![
        (scv_feishu::webhook::HEADER_TIMESTAMP.into(), ts),
        (scv_feishu::webhook::HEADER_NONCE.into(), nonce),
        (scv_feishu::webhook::HEADER_SIGNATURE.into(), sig),
    ]
}

#[tokio::test]
async fn forged_unsigned_and_wrong_token_callbacks_never_reach_the_agent() {
    let (h, url) = start(None, true, TestAgent::echo()).await;
    h.wait_state(ComponentState::Connected).await;

    // Signed with another key.
    let forged =
        h.fake
            .p2p_text_callback(OWNER, "forged", Some(&Secret::new("not-the-key")), TOKEN);
    assert_eq!(deliver(&url, &forged).await.0, 401);
    // A valid request with its body altered after signing.
    let mut tampered = h
        .fake
        .p2p_text_callback(OWNER, "tampered", Some(&key()), TOKEN);
    let n = tampered.body.len() - 3;
    tampered.body[n] ^= 1;
    assert_eq!(deliver(&url, &tampered).await.0, 401);
    // The right body without its signature headers.
    let unsigned = h
        .fake
        .p2p_text_callback(OWNER, "unsigned", Some(&key()), TOKEN);
    assert_eq!(post(&url, &[], unsigned.body.clone()).await.0, 401);
    // Plaintext (no encryption) while the app encrypts.
    let plain = h.fake.p2p_text_callback(OWNER, "plain", None, TOKEN);
    assert_ne!(deliver(&url, &plain).await.0, 200);
    // Signed and encrypted, but with another app's verification token.
    let wrong_token = h
        .fake
        .p2p_text_callback(OWNER, "wrong token", Some(&key()), "other-token");
    assert_eq!(deliver(&url, &wrong_token).await.0, 401);
    // Correctly signed, an hour or a day ago: a replay, refused.
    let old = h
        .fake
        .p2p_text_callback(OWNER, "replayed", Some(&key()), TOKEN);
    let body = String::from_utf8(old.body.clone()).expect("utf-8");
    for age in [3600, 86_400] {
        let headers = sign_at(&body, now_unix() - age);
        assert_eq!(
            post(&url, &headers, old.body.clone()).await.0,
            401,
            "{age} s old"
        );
    }

    h.settle().await;
    assert_eq!(h.agent.turns(), 0, "a refused callback reached the agent");
    assert!(h.fake.sent().is_empty());
    h.stop().await;
}

#[tokio::test]
async fn a_card_click_over_http_is_answered_in_the_response() {
    let questions = Arc::new(Questions::default());
    let (h, url) = start(Some(questions.clone()), true, TestAgent::echo()).await;
    h.wait_state(ComponentState::Connected).await;
    let card = Body::Question(Question {
        id: "q1".into(),
        text: "Deploy now?".into(),
        code: "7F".into(),
        deadline: "14:30".into(),
        buttons: true,
    });
    h.conversation
        .send_proactive(
            &h.key(),
            &ChatId::new(p2p_chat(OWNER)),
            "Deploy now?",
            Some(&card),
            "confirm/q1",
        )
        .await
        .expect("queued");
    h.until("the card", |f| !f.sent().is_empty()).await;
    let card_id = h.fake.sent().remove(0).message_id;
    let yes = json!({"q": "q1", "a": "yes"});

    let stranger =
        h.fake
            .card_click_callback("ou_stranger", &card_id, yes.clone(), Some(&key()), TOKEN);
    let (status, body) = deliver(&url, &stranger).await;
    assert_eq!(status, 200);
    let r: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(r["toast"]["type"], "error", "{r}");
    assert!(questions.clicks.lock().expect("lock").is_empty());

    let owner = h
        .fake
        .card_click_callback(OWNER, &card_id, yes, Some(&key()), TOKEN);
    let (status, body) = deliver(&url, &owner).await;
    assert_eq!(status, 200);
    let r: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(r["toast"]["type"], "success", "{r}");
    assert!(r.to_string().contains("Approved by you at 14:03"), "{r}");
    assert_eq!(questions.clicks.lock().expect("lock").len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn without_an_encrypt_key_the_account_fails_with_the_fix() {
    let (h, _) = start(None, false, TestAgent::echo()).await;
    h.wait_state(ComponentState::Failed).await;
    let health = h.health();
    let text = format!("{:?} {:?}", health.error, health.action);
    assert!(text.contains("Encrypt Key"), "{text}");
    assert!(text.contains("scv-bridge login feishu work"), "{text}");
    h.stop().await;
}

#[tokio::test]
async fn a_slow_agent_never_delays_the_answer_to_feishu() {
    let agent = TestAgent::gated();
    let (h, url) = start(None, true, agent.clone()).await;
    h.wait_state(ComponentState::Connected).await;
    let d = h
        .fake
        .p2p_text_callback(OWNER, "take your time", Some(&key()), TOKEN);
    // The agent is held: the 200 still comes at once, because it follows the journal, not the turn.
    let (status, _) = within(deliver(&url, &d)).await;
    assert_eq!(status, 200);
    h.until("the turn to start", |_| agent.turns() == 1).await;
    assert!(h.fake.sent().is_empty());
    agent.release();
    h.until("the answer", |f| !f.sent().is_empty()).await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: take your time"]);
    h.stop().await;
}

/// Fails if `f` takes longer than the platform's 3 s.
async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(std::time::Duration::from_secs(3), f)
        .await
        .expect("answered within Feishu's 3 s")
}

#[tokio::test]
async fn login_stores_the_callback_secrets_and_pairing_over_http_keeps_them() {
    use scv_bridge::adapters::feishu::login::{store_callback_secrets, store_credentials};
    use scv_bridge::adapters::feishu::{FeishuMode, FeishuSettings};
    use scv_bridge::config::{AccountKey, Channel};
    use scv_bridge::secrets::CredentialStore;

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let table =
        format!("senders = \"owner\"\nmode = \"webhook\"\nwebhook_listen = \"127.0.0.1:{port}\"\n");
    let config = write_config(dir.path(), &fake, &table);
    let store = CredentialStore::Files(config.state_dir.join("credentials"));
    let settings = FeishuSettings {
        domain: Some(fake.base_url().to_string()),
        mode: FeishuMode::Webhook,
        ..FeishuSettings::default()
    };
    let account = AccountKey::new(Channel::Feishu, "work");
    let creds = fake.credentials();
    let out = store_credentials(
        &store,
        &account,
        &settings,
        &creds.app_id,
        creds.app_secret.expose(),
        scv_bridge::supervisor::unix_now(),
    )
    .await
    .expect("login");
    store_callback_secrets(&store, &account, ENCRYPT_KEY, TOKEN)
        .await
        .expect("secrets stored");
    let code = out.code.expect("a pairing code");
    let h = Harness::start_with(fake, dir, config, None, TestAgent::echo(), None).await;
    h.wait_state(ComponentState::Connected).await;

    let url = format!("http://127.0.0.1:{port}/");
    let d = h.fake.p2p_text_callback(OWNER, &code, Some(&key()), TOKEN);
    assert_eq!(deliver(&url, &d).await.0, 200);
    h.until_health("the owner paired", |c| c.user_id.as_deref() == Some(OWNER))
        .await;
    let stored = store.load("feishu:work").expect("load").expect("stored");
    assert_eq!(
        stored.get("encrypt_key").map(|s| s.expose().to_string()),
        Some(ENCRYPT_KEY.to_string()),
        "pairing dropped the callback secrets"
    );
    assert!(stored.get("verification_token").is_some());
    assert_eq!(h.agent.turns(), 0, "the code reached the agent");
    h.stop().await;
}
