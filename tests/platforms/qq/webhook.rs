//! Webhook mode (spec §1.5) over real sockets: the fake QQ signs and POSTs to the account's
//! listener. The op 13 validation is answered with the signed token; forged, stale and
//! replayed requests are refused (401) and nothing of them is journaled or answered; a valid
//! event is journaled before its 200, and the owner is answered in reply to it.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::support::*;

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Messages in the daemon's journal.
fn journaled(h: &Harness) -> i64 {
    let db = rusqlite::Connection::open(h.config.state_dir.join("state.db")).expect("store");
    db.query_row("SELECT count(*) FROM inbound_journal", [], |r| r.get(0))
        .expect("count")
}

#[tokio::test]
async fn only_signed_fresh_first_requests_are_journaled_before_their_200() {
    let port = free_port();
    let mut setup = Setup::owned();
    setup.table =
        format!("senders = \"owner\"\nwebhook = true\nwebhook_listen = \"127.0.0.1:{port}\"\n");
    let h = Harness::start(setup).await;
    h.wait_state(scv_bridge::protocol::ComponentState::Connected)
        .await;
    let url = format!("http://127.0.0.1:{port}/qq");
    assert!(!h.fake.live(), "no gateway socket in webhook mode");
    assert_eq!(
        h.fake.validate_callback(&url, now_unix()).await,
        Ok(true),
        "the validation answered with the signed plain_token"
    );

    // Forged: a signature by another key, a body changed after signing, no signature at all.
    let (frame, _) = h.fake.webhook_c2c(OWNER, "forged");
    let good = h.fake.sign_frame(&frame, now_unix());
    let mut other_key = good.clone();
    other_key.signature = "00".repeat(64);
    let mut changed = good.clone();
    changed.body =
        serde_json::to_vec(&json!({"op": 0, "t": "C2C_MESSAGE_CREATE", "d": {}})).expect("json");
    let mut unsigned = good.clone();
    unsigned.signature = String::new();
    for req in [&other_key, &changed, &unsigned] {
        let (status, _) = h.fake.post_signed(&url, req).await.expect("post");
        assert_eq!(status, 401);
    }
    // Stale: signed correctly an hour ago.
    let (frame, _) = h.fake.webhook_c2c(OWNER, "old");
    let old = h.fake.sign_frame(&frame, now_unix() - 3600);
    assert_eq!(h.fake.post_signed(&url, &old).await.expect("post").0, 401);
    assert_eq!(journaled(&h), 0, "nothing refused was journaled");

    // Valid: journaled by the time QQ reads the 200.
    let (frame, pushed) = h.fake.webhook_c2c(OWNER, "hello");
    let req = h.fake.sign_frame(&frame, now_unix());
    let (status, body) = h.fake.post_signed(&url, &req).await.expect("post");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).expect("json"),
        json!({"op": 12, "d": 0})
    );
    assert_eq!(journaled(&h), 1, "journaled before the 200");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    let sent = h.sent_to(&format!("user:{OWNER}"));
    assert_eq!(sent[0].content, "echo: hello");
    assert_eq!(sent[0].msg_id.as_deref(), Some(pushed.id.as_str()));

    // Replayed: the very same signed request again.
    let (status, _) = h.fake.post_signed(&url, &req).await.expect("post");
    assert_eq!(status, 401, "a replay is refused");
    h.settle().await;
    assert_eq!(journaled(&h), 1);
    assert_eq!(
        h.agent.prompts(),
        ["hello"],
        "only the valid request reached the agent"
    );
    let dropped = h.health().dropped;
    assert_eq!(dropped.get("webhook_refused"), Some(&4), "{dropped:?}");
    assert_eq!(dropped.get("webhook_replayed"), Some(&1), "{dropped:?}");
    h.stop().await;
}

/// A listener bound beyond loopback is said in the account's status, with the fix.
#[tokio::test]
async fn a_webhook_listener_beyond_loopback_is_noted_in_status() {
    let mut setup = Setup::owned();
    setup.table = "senders = \"owner\"\nwebhook = true\nwebhook_listen = \"0.0.0.0:0\"\n".into();
    let h = Harness::start(setup).await;
    h.wait_state(scv_bridge::protocol::ComponentState::Connected)
        .await;
    h.until_health("the exposure noted", |health| {
        health
            .notes
            .iter()
            .any(|n| n.text.contains("reachable beyond this machine"))
    })
    .await;
    let health = h.health();
    let note = health
        .notes
        .iter()
        .find(|n| n.text.contains("reachable beyond this machine"))
        .map(|n| n.text.clone())
        .unwrap_or_default();
    assert!(
        note.contains("webhook_listen = \"127.0.0.1:8443\""),
        "{note}"
    );
    h.stop().await;
}
