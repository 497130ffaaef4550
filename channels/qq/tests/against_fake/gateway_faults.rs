//! The gateway's faults (§1.3 close codes, op 7/9, §8.4–8.5 knobs): each one and what the
//! client does about it.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use scv_qq::fake::FakeConfig;
use scv_qq::gateway::{Cursor, Inbound};
use scv_qq::limits::{GATEWAY_TOO_FAST_WAIT, INTENT_GROUP_AND_C2C};
use scv_qq::{Error, ErrorClass, Fatal};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use crate::{Running, fast, quick_options};

const USER: &str = "E4F1A0B2C3D4E5F60718293A4B5C6D7E";

#[tokio::test]
async fn op_7_and_op_9_true_resume_and_op_9_false_identifies_anew() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    assert!(run.fake.send_reconnect());
    assert!(run.ready().await, "op 7: resumed");
    assert!(run.fake.send_invalid_session(true));
    assert!(run.ready().await, "op 9 true: resumed");
    assert_eq!(run.fake.resumes().len(), 2);
    assert!(run.fake.send_invalid_session(false));
    let Inbound::SessionLost { .. } = run.next().await else {
        panic!("the gap is reported")
    };
    assert!(!run.ready().await, "op 9 false: a new session");
    assert_eq!(run.fake.identifies(), 2);
    assert_eq!(
        run.fake.token_requests(),
        2,
        "op 9 false refreshes the token"
    );
    run.stop().await;
}

#[tokio::test]
async fn a_refused_resume_4006_or_4007_reports_the_gap_and_identifies() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    run.fake.push_c2c(USER, "a");
    let a = run.next_event().await;
    run.gateway.commit(a.cursor.clone());
    run.fake.expire_sessions();
    assert!(run.fake.drop_socket());
    let Inbound::SessionLost { lost_after } = run.next().await else {
        panic!("gap reported")
    };
    assert_eq!(lost_after, a.cursor);
    assert!(!run.ready().await);
    assert_eq!(run.fake.server_closes(), vec![4006]);

    // A cursor ahead of the server's sequence: 4007.
    let sid = run.gateway.committed().unwrap().session_id;
    run.gateway.commit(Cursor {
        session_id: sid,
        seq: 999,
    });
    assert!(run.fake.drop_socket());
    let Inbound::SessionLost { lost_after } = run.next().await else {
        panic!("gap reported")
    };
    assert_eq!(lost_after.seq, 999);
    assert!(!run.ready().await);
    assert_eq!(run.fake.server_closes(), vec![4006, 4007]);
    run.stop().await;
}

#[tokio::test]
async fn auth_failure_4004_refreshes_the_token_and_identifies() {
    // The fake closes an Identify with a token it does not know with 4004.
    let (fake, _) = crate::start(fast()).await;
    let mut ws = raw(&fake).await;
    let identify = serde_json::json!({"op": 2, "d": {"token": "QQBot forged", "intents": 1 << 25, "shard": [0, 1]}});
    ws.send(Message::text(identify.to_string())).await.unwrap();
    assert_eq!(close_code(&mut ws).await, 4004);

    // The client, closed with 4004, fetches a token again and identifies anew.
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    assert_eq!(run.fake.token_requests(), 1);
    assert!(run.fake.close_socket(4004));
    let Inbound::SessionLost { .. } = run.next().await else {
        panic!("gap reported")
    };
    assert!(!run.ready().await);
    assert_eq!(run.fake.token_requests(), 2);
    assert_eq!(run.fake.identifies(), 2);
    run.stop().await;
}

#[tokio::test]
async fn internal_errors_4900_identify_and_4009_resumes() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    assert!(run.fake.close_socket(4009));
    assert!(run.ready().await, "4009: resumed");
    assert!(run.fake.close_socket(4900));
    let Inbound::SessionLost { .. } = run.next().await else {
        panic!("gap reported")
    };
    assert!(!run.ready().await, "4900: a new session");
    run.stop().await;
}

#[tokio::test]
async fn intents_not_granted_4014_stop_with_a_fatal_error() {
    let config = FakeConfig {
        granted_intents: INTENT_GROUP_AND_C2C,
        ..fast()
    };
    let run = Running::start(config, quick_options()).await;
    let err = run.ended().await;
    assert!(matches!(err, Error::GatewayClosed { code: 4014 }), "{err}");
    assert_eq!(err.class(), ErrorClass::Fatal(Fatal::IntentNotPermitted));
}

#[tokio::test]
async fn a_banned_or_offline_bot_stops_the_gateway() {
    for (code, fatal) in [(4915, Fatal::BotBanned), (4914, Fatal::BotOffline)] {
        let mut run = Running::start(fast(), quick_options()).await;
        run.ready().await;
        assert!(run.fake.close_socket(code));
        let err = run.ended().await;
        assert_eq!(err.class(), ErrorClass::Fatal(fatal), "{err}");
        assert!(!fatal.relogin());
    }
}

#[tokio::test(start_paused = true)]
async fn sending_too_fast_4008_waits_60_s_then_resumes() {
    let mut run = Running::start(FakeConfig::default(), quick_options()).await;
    run.ready().await;
    let closed_at = Instant::now();
    assert!(run.fake.close_socket(4008));
    assert!(run.ready_within(GATEWAY_TOO_FAST_WAIT * 2).await, "resumed");
    assert!(
        closed_at.elapsed() >= GATEWAY_TOO_FAST_WAIT,
        "{:?}",
        closed_at.elapsed()
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn no_session_starts_left_waits_for_the_reset() {
    let (fake, client) = crate::start(FakeConfig::default()).await;
    fake.set_session_starts_left(Some(0));
    let mut run = Running::on(fake, client, quick_options());
    let began = Instant::now();
    let mut status = run.gateway.status();
    status
        .wait_for(|s| {
            s.last_error
                .as_deref()
                .is_some_and(|e| e.contains("session start limit"))
        })
        .await
        .unwrap();
    run.fake.set_session_starts_left(None);
    assert!(!run.ready_within(Duration::from_secs(120)).await);
    assert!(
        began.elapsed() >= Duration::from_secs(60),
        "{:?}",
        began.elapsed()
    );
    run.stop().await;
}

#[tokio::test]
async fn a_link_whose_heartbeats_go_unanswered_is_replaced() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    run.fake.ack_heartbeats(false);
    let mut status = run.gateway.status();
    status
        .wait_for(|s| {
            s.last_error
                .as_deref()
                .is_some_and(|e| e.contains("heartbeat"))
        })
        .await
        .unwrap();
    run.fake.ack_heartbeats(true);
    assert!(run.ready().await, "resumed on a new socket");
    assert_eq!(run.fake.connections(), 2);
    run.stop().await;
}

/// A raw socket: what the fake does to a client that breaks the rules.
async fn raw(
    fake: &scv_qq::fake::FakeQq,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let url = format!("{}/websocket", fake.base_url().replace("http://", "ws://"));
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("dial");
    let hello = ws.next().await.unwrap().unwrap();
    assert!(
        hello.to_text().unwrap().contains("\"op\":10"),
        "Hello first"
    );
    ws
}

async fn close_code(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> u16 {
    loop {
        match tokio::time::timeout(crate::WAIT, ws.next())
            .await
            .expect("closed in time")
        {
            Some(Ok(Message::Close(Some(f)))) => return f.code.into(),
            Some(Ok(_)) => continue,
            other => panic!("no close frame: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_fake_closes_4003_before_identify_and_4009_without_heartbeats() {
    let (fake, _) = crate::start(fast()).await;
    let mut ws = raw(&fake).await;
    ws.send(Message::text(r#"{"op":1,"d":null}"#))
        .await
        .unwrap();
    let code = close_code(&mut ws).await;
    assert_eq!(code, 4003);
    assert!(matches!(
        scv_qq::classify::classify_close(code),
        ErrorClass::Fatal(Fatal::ClientBug { .. })
    ));

    let mut ws = raw(&fake).await;
    // Identify properly, then stay silent: closed after 1.5 heartbeat intervals.
    let token = reqwest_token(&fake).await;
    let identify = serde_json::json!({"op": 2, "d": {"token": format!("QQBot {token}"), "intents": 1 << 25, "shard": [0, 1]}});
    ws.send(Message::text(identify.to_string())).await.unwrap();
    let code = close_code(&mut ws).await;
    assert_eq!(code, 4009);
    assert_eq!(
        scv_qq::classify::classify_close(code),
        ErrorClass::Transient
    );
}

async fn reqwest_token(fake: &scv_qq::fake::FakeQq) -> String {
    let c = fake.credentials();
    let v: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/app/getAppAccessToken", fake.base_url()))
        .json(&serde_json::json!({"appId": c.app_id, "clientSecret": c.app_secret.expose()}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["access_token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn refused_credentials_stop_the_gateway_and_ask_for_login() {
    let (fake, _) = crate::start(fast()).await;
    let creds = scv_qq::Credentials::new(fake.credentials().app_id, "changed-in-the-console");
    let client = scv_qq::Client::new(scv_qq::ClientOptions {
        credentials: creds,
        ..fake.options()
    })
    .unwrap();
    let run = Running::on(fake, client, quick_options());
    let err = run.ended().await;
    assert_eq!(
        err.class(),
        ErrorClass::Fatal(Fatal::BadCredentials),
        "{err}"
    );
}
