//! The Stream connection: ACKs after the caller's journal, SYSTEM pings, `disconnect` with a
//! warm reconnect, zombie sockets, resets, tickets, duplicates and hostile frames.

use std::time::Duration;

use scv_dingtalk::fake::FakeConfig;
use scv_dingtalk::stream::{AckReply, Inbound, ROBOT_TOPIC, StreamConnection, StreamOptions};
use scv_dingtalk::{Call, Client, Credentials, ErrorClass, FatalReason};
use serde_json::json;
use tokio::time::Instant;

use crate::{OWNER, PROMPTLY, Running};

const LONG: Duration = Duration::from_secs(600);

#[tokio::test(start_paused = true)]
async fn a_push_is_acked_only_when_the_caller_acks_and_the_ack_echoes_its_id() {
    let mut r = Running::start(FakeConfig::default()).await;
    let pushed = r.fake.push_text(OWNER, "hello");
    let d = r.next().await;
    assert_eq!(d.message_id, pushed.push.message_id);
    assert_eq!(d.topic, ROBOT_TOPIC);
    let Ok(Inbound::Message(m)) = d.parse() else {
        panic!("not a message")
    };
    assert_eq!(m.dedupe_key(), pushed.msg_id);
    assert!(
        r.fake.acks().is_empty(),
        "nothing is ACKed before the caller journals and acks"
    );
    d.ack.ack(AckReply::Done).expect("queued");
    assert!(r.fake.wait_until(PROMPTLY, |f| !f.acks().is_empty()).await);
    let ack = &r.fake.acks()[0];
    assert!(ack.known && ack.data_is_string, "{ack:?}");
    assert_eq!(ack.code, Some(200));
    assert_eq!(ack.message_id, pushed.push.message_id);
    assert_eq!(ack.data, json!({"response": null}));
    assert!(ack.after.unwrap() < Duration::from_secs(1));
    assert_eq!(
        r.fake.pushes().len(),
        1,
        "robot messages are not re-pushed by default"
    );
    r.stop().await.expect("stops cleanly");
}

#[tokio::test(start_paused = true)]
async fn system_pings_are_answered_with_their_own_data_and_keep_the_link_up() {
    let r = Running::start(FakeConfig {
        drop_on_unanswered_ping: true,
        ..FakeConfig::default()
    })
    .await;
    assert!(r.fake.wait_until(LONG, |f| f.ping_replies().0 >= 10).await);
    assert_eq!(
        r.fake.ping_replies().1,
        0,
        "every echo carried the ping's data"
    );
    assert_eq!(
        r.fake.connections().len(),
        1,
        "200 s of pings: still the first socket ({:?})",
        r.conn.status().borrow()
    );
    assert!(r.conn.status().borrow().last_frame.is_some());
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn disconnect_brings_a_new_socket_up_before_the_old_one_closes() {
    let mut r = Running::start(FakeConfig::default()).await;
    let at = Instant::now();
    r.fake.disconnect_all();
    r.sockets(2).await;
    assert!(
        at.elapsed() < Duration::from_secs(10),
        "new socket before the server closes the old"
    );
    assert_eq!(
        r.fake.live_connections(),
        2,
        "the old socket is still read meanwhile"
    );
    assert_eq!(r.fake.opens().len(), 2, "a fresh ticket for the new socket");
    let pushed = r.fake.push_text(OWNER, "after rotation");
    let d = r.next().await;
    assert_eq!(d.message_id, pushed.push.message_id);
    assert_eq!(Some(d.connection), Some(2));
    d.ack.ack(AckReply::Done).unwrap();
    // The server closes the old socket ≈ 10 s later; one connection is left.
    assert!(r.fake.wait_until(LONG, |f| f.live_connections() == 1).await);
    assert_eq!(r.fake.connections().len(), 2, "no reconnect storm");
    assert!(!r.task.is_finished());
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_zombie_socket_is_found_by_the_idle_watchdog_and_replaced() {
    let mut r = Running::start(FakeConfig::default()).await;
    let at = Instant::now();
    r.fake.zombie_all();
    // WebSocket pings are still answered, so only the idle watchdog can see it.
    let lost = r.fake.push_text(OWNER, "into the void");
    assert_eq!(lost.push.connection, None, "a zombie delivers nothing");
    assert!(
        r.fake
            .wait_until(LONG, |f| f.connections().len() == 2)
            .await
    );
    let waited = at.elapsed();
    assert!(waited >= Duration::from_secs(120), "{waited:?}");
    assert!(
        waited < Duration::from_secs(125),
        "reconnected after the watchdog, with a short backoff: {waited:?}"
    );
    let why = r
        .conn
        .status()
        .borrow()
        .last_error
        .clone()
        .unwrap_or_default();
    assert!(why.contains("no frame for"), "{why}");
    r.sockets(2).await;
    r.fake.push_text(OWNER, "back");
    r.next().await.ack.ack(AckReply::Done).unwrap();
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_abrupt_reset_or_close_reconnects_with_backoff() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.reset_all();
    r.sockets(2).await;
    r.fake.close_all();
    r.sockets(3).await;
    r.fake.push_text(OWNER, "still here");
    assert_eq!(r.next().await.connection, 3);
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn failing_opens_back_off_and_bad_credentials_stop_the_connection() {
    let (fake, client) = crate::start().await;
    fake.fail_next(Call::OpenConnection, scv_dingtalk::fake::Fault::Status(503));
    fake.fail_next(Call::OpenConnection, scv_dingtalk::fake::Fault::Status(503));
    let conn = StreamConnection::new(client, StreamOptions::default());
    let (tx, _rx) = tokio::sync::mpsc::channel(4);
    let cancel = tokio_util::sync::CancellationToken::new();
    let at = Instant::now();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { conn.run(tx, cancel).await }
    });
    assert!(fake.wait_until(LONG, |f| f.connections().len() == 1).await);
    // 3 s, then 6 s (each up to 20 % more).
    assert!(at.elapsed() >= Duration::from_secs(9), "{:?}", at.elapsed());
    cancel.cancel();
    run.await.unwrap().expect("cancelled is Ok");

    let mut o = fake.client_options();
    o.credentials = Credentials::new(fake.config().client_id.clone(), "revoked-secret");
    let conn = StreamConnection::new(Client::new(o).unwrap(), StreamOptions::default());
    let (tx, _rx) = tokio::sync::mpsc::channel(4);
    let e = tokio::time::timeout(
        PROMPTLY,
        conn.run(tx, tokio_util::sync::CancellationToken::new()),
    )
    .await
    .expect("a fatal error ends run at once")
    .unwrap_err();
    assert_eq!(e.class(), ErrorClass::Fatal(FatalReason::BadCredentials));
}

#[tokio::test(start_paused = true)]
async fn expired_tickets_are_refused_and_the_connection_keeps_trying() {
    let (fake, client) = crate::start_with(FakeConfig {
        ticket_lifetime: Duration::ZERO,
        ..FakeConfig::default()
    })
    .await;
    let conn = std::sync::Arc::new(StreamConnection::new(client, StreamOptions::default()));
    let (tx, _rx) = tokio::sync::mpsc::channel(4);
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = tokio::spawn({
        let (conn, cancel) = (conn.clone(), cancel.clone());
        async move { conn.run(tx, cancel).await }
    });
    assert!(fake.wait_until(LONG, |f| f.refused_handshakes() >= 3).await);
    let why = conn
        .status()
        .borrow()
        .last_error
        .clone()
        .unwrap_or_default();
    assert!(why.contains("handshake refused with HTTP 401"), "{why}");
    assert!(!run.is_finished(), "a refused handshake is transient");
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_fake_refuses_a_reused_ticket() {
    let (fake, client) = crate::start().await;
    let ticket =
        scv_dingtalk::stream::open::open(&client, &scv_dingtalk::stream::default_subscriptions())
            .await
            .unwrap();
    let url = ticket.url().unwrap();
    let (_first, _) = tokio_tungstenite::connect_async(url.expose())
        .await
        .expect("first use");
    let again = tokio_tungstenite::connect_async(url.expose()).await;
    let Err(tokio_tungstenite::tungstenite::Error::Http(resp)) = again else {
        panic!("reuse accepted")
    };
    assert_eq!(resp.status(), 400);
    assert_eq!(fake.refused_handshakes(), 1);
}

#[tokio::test(start_paused = true)]
async fn duplicates_carry_the_same_dedupe_key_under_a_new_push_id() {
    let mut r = Running::start(FakeConfig {
        duplicate_after: Some(Duration::from_secs(3)),
        ..FakeConfig::default()
    })
    .await;
    let pushed = r.fake.push_text(OWNER, "once");
    let first = r.next().await;
    // Not ACKed within 3 s: pushed again.
    let second = r.next().await;
    assert_ne!(first.message_id, second.message_id);
    let key = |d: &scv_dingtalk::stream::Delivery| match d.parse() {
        Ok(Inbound::Message(m)) => m.dedupe_key().to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(key(&first), pushed.msg_id);
    assert_eq!(key(&second), pushed.msg_id);
    first.ack.ack(AckReply::Done).unwrap();
    second.ack.ack(AckReply::Done).unwrap();
    // Even after an ACK a copy may come (observed): same key again.
    r.fake.repush(&pushed.msg_id).expect("known");
    let third = r.next().await;
    assert_eq!(key(&third), pushed.msg_id);
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn hostile_frames_are_ignored_and_an_oversized_one_costs_a_reconnect_not_a_panic() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.send_raw("not json at all");
    r.fake
        .send_raw(r#"{"type":"FUTURE","headers":{},"data":"{}"}"#);
    r.fake.send_raw(&"[".repeat(100_000));
    r.fake.send_raw(r#"{"type":"CALLBACK","headers":{"topic":"/v1.0/im/bot/messages/get","messageId":"m-bad"},"data":"[[["}"#);
    let bad = r.next().await;
    assert!(
        bad.parse().is_err(),
        "unreadable, but still handed over to be ACKed"
    );
    bad.ack.ack(AckReply::Done).unwrap();
    r.fake.push_text(OWNER, "fine");
    r.next().await.ack.ack(AckReply::Done).unwrap();
    assert_eq!(
        r.fake.connections().len(),
        1,
        "garbage did not cost the socket"
    );
    r.fake.send_raw(&format!(
        r#"{{"type":"CALLBACK","data":"{}"}}"#,
        "x".repeat(2 << 20)
    ));
    r.sockets(2).await;
    r.fake.push_text(OWNER, "after the big one");
    assert_eq!(r.next().await.connection, 2);
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn only_subscribed_topics_are_pushed() {
    let mut options = StreamOptions::default();
    options.subscriptions.retain(|s| s.topic == ROBOT_TOPIC);
    let r = Running::start_with(FakeConfig::default(), options).await;
    let click = r.fake.click_card("card-1", OWNER, json!({"answer": "yes"}));
    assert_eq!(click.push.connection, None, "not subscribed: not pushed");
    assert_eq!(r.fake.connections()[0].topics, [ROBOT_TOPIC]);
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_hung_peer_is_found_by_the_pong_deadline_before_the_idle_watchdog() {
    let r = Running::start(FakeConfig::default()).await;
    let at = Instant::now();
    r.fake.freeze_all();
    r.sockets(2).await;
    // Ping every 30 s, pong within 10 s: found by 40 s, well before the 120 s idle window.
    assert!(
        at.elapsed() <= Duration::from_secs(40 + 4),
        "{:?}",
        at.elapsed()
    );
    let why = r
        .conn
        .status()
        .borrow()
        .last_error
        .clone()
        .unwrap_or_default();
    assert!(why.contains("no pong"), "{why}");
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_pauses_reading_and_loses_nothing() {
    let (fake, client) = crate::start().await;
    let conn = std::sync::Arc::new(StreamConnection::new(client, StreamOptions::default()));
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = tokio::spawn({
        let (conn, cancel) = (conn.clone(), cancel.clone());
        async move { conn.run(tx, cancel).await }
    });
    assert!(
        fake.wait_until(PROMPTLY, |f| f.deliverable_connections() == 1)
            .await
    );
    let sent: Vec<String> = (0..12)
        .map(|i| fake.push_text(OWNER, &format!("m{i}")).msg_id)
        .collect();
    // The caller is slow: a minute passes before it reads; no watchdog fires meanwhile.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let mut got = Vec::new();
    for _ in 0..12 {
        let d = tokio::time::timeout(PROMPTLY, rx.recv())
            .await
            .unwrap()
            .unwrap();
        let Ok(Inbound::Message(m)) = d.parse() else {
            panic!()
        };
        got.push(m.dedupe_key().to_string());
        d.ack.ack(AckReply::Done).unwrap();
    }
    assert_eq!(got, sent, "all of them, in order");
    assert!(fake.wait_until(PROMPTLY, |f| f.unacked() == 0).await);
    assert_eq!(fake.connections().len(), 1);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_failed_handling_is_acked_with_code_500() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "cannot journal this");
    r.next().await.ack.ack(AckReply::Failed).unwrap();
    assert!(r.fake.wait_until(PROMPTLY, |f| !f.acks().is_empty()).await);
    assert_eq!(r.fake.acks()[0].code, Some(500));
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn with_two_connections_each_push_goes_to_one_of_them_at_random() {
    // Why the client keeps one: the platform splits pushes between live connections.
    let mut r = Running::start(FakeConfig::default()).await;
    let second = std::sync::Arc::new(StreamConnection::new(
        r.client.clone(),
        StreamOptions::default(),
    ));
    let (tx, mut rx2) = tokio::sync::mpsc::channel(64);
    let cancel = tokio_util::sync::CancellationToken::new();
    tokio::spawn({
        let (second, cancel) = (second.clone(), cancel.clone());
        async move { second.run(tx, cancel).await }
    });
    assert!(
        r.fake
            .wait_until(PROMPTLY, |f| f.deliverable_connections() == 2)
            .await
    );
    for i in 0..40 {
        r.fake.push_text(OWNER, &format!("m{i}"));
    }
    let per_connection = |c: u64| {
        r.fake
            .pushes()
            .iter()
            .filter(|p| p.connection == Some(c))
            .count()
    };
    let ids: Vec<u64> = r.fake.connections().iter().map(|c| c.id).collect();
    let (a, b) = (per_connection(ids[0]), per_connection(ids[1]));
    assert_eq!(a + b, 40);
    assert!(a > 0 && b > 0, "{a} / {b}");
    for _ in 0..a {
        r.next().await.ack.ack(AckReply::Done).unwrap();
    }
    for _ in 0..b {
        rx2.recv().await.unwrap().ack.ack(AckReply::Done).unwrap();
    }
    cancel.cancel();
    r.stop().await.unwrap();
}
