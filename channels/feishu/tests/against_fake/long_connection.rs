//! The real long connection against the fake, over real sockets.
#![cfg(feature = "fake")]

use crate::common;

use std::time::Duration;

use common::{Running, WAIT};
use scv_feishu::card::{Answer, CardResponse, Resolution, ToastKind, YesNoCard};
use scv_feishu::event::{ChatType, EventBody};
use scv_feishu::fake::{FakeConfig, PushOptions};
use scv_feishu::frame::FrameType;
use scv_feishu::ws::{AckResponse, LinkState};
use scv_feishu::{MessageContent, ReceiveId};
use serde_json::json;

#[tokio::test]
async fn event_is_delivered_and_ack_echoes_every_header() {
    let mut r = Running::start(FakeConfig::fast()).await;
    r.connected().await;
    assert!(r.conn.status().borrow().last_evidence.is_some());
    let opts = PushOptions {
        extra_headers: vec![
            ("instance_id".into(), "inst-7".into()),
            ("x-route".into(), "r1".into()),
        ],
        ..PushOptions::default()
    };
    let pushed = r
        .fake
        .push_message("ou_alice", "oc_p2p_ou_alice", "p2p", "hello", false, opts);
    let d = r.next().await;
    assert_eq!(d.kind, FrameType::Event);
    let ev = d.parse().expect("parses");
    assert_eq!(ev.header.event_id, pushed.event_id);
    let EventBody::Message(m) = ev.body else {
        panic!("not a message")
    };
    assert_eq!(m.sender_open_id, "ou_alice");
    assert_eq!(m.chat_type, ChatType::P2p);
    assert_eq!(m.message_id, pushed.message_id);
    assert_eq!(m.text(Some("ou_bot")).as_deref(), Some("hello"));
    assert!(r.fake.acks().is_empty(), "no ACK before the caller acks");

    d.ack.ack(AckResponse::Ok).expect("queued");
    assert!(r.fake.wait_until(WAIT, |f| !f.acks().is_empty()).await);
    let ack = &r.fake.acks()[0];
    assert!(ack.echo_ok, "{ack:?}");
    assert_eq!(ack.code, Some(200));
    assert_eq!(ack.event_id.as_deref(), Some(pushed.event_id.as_str()));
    let keys: Vec<&str> = ack.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "type",
            "message_id",
            "sum",
            "seq",
            "trace_id",
            "timestamp",
            "instance_id",
            "x-route",
            "biz_rt"
        ]
    );
    assert!(
        ack.headers
            .contains(&("instance_id".into(), "inst-7".into()))
    );
    // Acked in time: nothing is left to re-push.
    assert_eq!(r.fake.in_flight(), 0);
    assert_eq!(r.fake.pushes().len(), 1);
    r.stop().await;
}

#[tokio::test]
async fn group_message_mentioning_the_bot() {
    let mut r = Running::start(FakeConfig::fast()).await;
    r.fake
        .push_group_text("oc_group", "ou_bob", "status?", true);
    let d = r.next().await;
    let EventBody::Message(m) = d.parse().unwrap().body else {
        panic!("not a message")
    };
    assert!(m.chat_type.is_group());
    assert!(m.mentions_bot("ou_bot"));
    assert_eq!(m.text(Some("ou_bot")).as_deref(), Some("status?"));
    d.ack.ack(AckResponse::Ok).unwrap();
    r.stop().await;
}

#[tokio::test]
async fn fragmented_event_is_reassembled_and_acked_once() {
    let mut r = Running::start(FakeConfig::fast()).await;
    let long = "x".repeat(3000);
    let opts = PushOptions {
        fragments: 4,
        ..PushOptions::default()
    };
    let pushed = r
        .fake
        .push_message("ou_alice", "oc_p2p_ou_alice", "p2p", &long, false, opts);
    let d = r.next().await;
    let EventBody::Message(m) = d.parse().expect("whole payload parses").body else {
        panic!("not a message")
    };
    assert_eq!(m.message_id, pushed.message_id);
    assert_eq!(m.text(None).unwrap().len(), 3000);
    d.ack.ack(AckResponse::Ok).unwrap();
    assert!(r.fake.wait_until(WAIT, |f| !f.acks().is_empty()).await);
    let acks = r.fake.acks();
    assert_eq!(acks.len(), 1);
    assert!(acks[0].echo_ok, "{:?}", acks[0]);
    assert!(acks[0].headers.contains(&("sum".into(), "4".into())));
    r.stop().await;
}

#[tokio::test]
async fn missing_ack_is_re_pushed_with_a_new_event_id() {
    let mut r = Running::start(FakeConfig::fast()).await;
    let pushed = r.fake.push_p2p_text("ou_alice", "hi");
    let first = r.next().await;
    let first_ev = first.parse().unwrap();
    drop(first); // journaled nothing, acked nothing
    let second = r.next().await;
    let second_ev = second.parse().unwrap();
    assert_ne!(second_ev.header.event_id, first_ev.header.event_id);
    let (EventBody::Message(a), EventBody::Message(b)) = (first_ev.body, second_ev.body) else {
        panic!()
    };
    assert_eq!(a.message_id, b.message_id, "same IM message id: dedupe key");
    assert_eq!(a.message_id, pushed.message_id);
    second.ack.ack(AckResponse::Ok).unwrap();
    assert!(r.fake.wait_until(WAIT, |f| !f.acks().is_empty()).await);
    let pushes = r.fake.pushes();
    assert_eq!(pushes.len(), 2);
    assert_eq!(pushes[1].attempt, 1);
    assert_eq!(
        r.fake.acks()[0].event_id.as_deref(),
        Some(second_ev.header.event_id.as_str())
    );
    r.stop().await;
}

#[tokio::test]
async fn failed_ack_is_re_pushed() {
    let mut r = Running::start(FakeConfig::fast()).await;
    r.fake.push_p2p_text("ou_alice", "hi");
    r.next().await.ack.ack(AckResponse::Failed).unwrap();
    let again = r.next().await;
    again.ack.ack(AckResponse::Ok).unwrap();
    assert!(r.fake.wait_until(WAIT, |f| f.acks().len() == 2).await);
    assert_eq!(r.fake.acks()[0].code, Some(500));
    assert_eq!(r.fake.pushes().len(), 2);
    r.stop().await;
}

#[tokio::test]
async fn server_close_reconnects_with_a_fresh_ticket() {
    let mut r = Running::start(FakeConfig::fast()).await;
    r.connected().await;
    let stale = r.fake.push_p2p_text("ou_alice", "before");
    let d = r.next().await;
    r.fake.close_connections();
    assert!(
        r.fake
            .wait_until(WAIT, |f| f.connections().len() >= 2)
            .await
    );
    assert!(
        d.ack.ack(AckResponse::Ok).is_err(),
        "the delivering socket is gone"
    );
    let conns = r.fake.connections();
    assert_ne!(conns[0].ticket, conns[1].ticket);
    assert_eq!(r.fake.refused_handshakes(), 0, "no ticket reuse");
    assert!(r.fake.endpoint_requests() >= 2);
    // The unacked event comes again on the new socket.
    let again = r.next().await;
    let EventBody::Message(m) = again.parse().unwrap().body else {
        panic!()
    };
    assert_eq!(m.message_id, stale.message_id);
    again.ack.ack(AckResponse::Ok).unwrap();
    assert!(r.fake.wait_until(WAIT, |f| f.acks().len() == 1).await);
    assert!(r.conn.status().borrow().sockets >= 2);
    r.stop().await;
}

#[tokio::test]
async fn watchdog_reconnects_after_a_silent_stall() {
    let r = Running::start(FakeConfig::fast()).await;
    r.connected().await;
    let mut status = r.conn.status();
    r.fake.stall();
    tokio::time::timeout(
        WAIT,
        status.wait_for(|s| {
            s.last_error
                .as_deref()
                .is_some_and(|e| e.contains("no frame"))
        }),
    )
    .await
    .expect("watchdog fired")
    .unwrap();
    assert!(
        r.fake
            .wait_until(WAIT, |f| f.connections().len() >= 2)
            .await
    );
    r.connected().await;
    assert_eq!(r.conn.status().borrow().state, LinkState::Connected);
    r.stop().await;
}

#[tokio::test]
async fn pongs_carry_client_config_that_is_adopted() {
    let r = Running::start(FakeConfig::fast()).await;
    r.connected().await;
    assert_eq!(
        r.conn.status().borrow().config.ping_interval,
        Duration::from_millis(200)
    );
    r.fake
        .set_pong_config(json!({"PingInterval": 0.04, "ReconnectCount": -1}));
    let mut st = r.conn.status();
    tokio::time::timeout(
        WAIT,
        st.wait_for(|s| s.config.ping_interval == Duration::from_millis(40)),
    )
    .await
    .expect("adopted")
    .unwrap();
    let before = r.fake.pings();
    assert!(r.fake.wait_until(WAIT, |f| f.pings() >= before + 10).await);
    assert_eq!(
        r.fake.rejected_frames(),
        0,
        "every ping carried fields 1-4 and the service id"
    );
    r.stop().await;
}

#[tokio::test]
async fn card_clicks_as_event_and_as_card_answer_with_a_new_card() {
    let mut r = Running::start(FakeConfig::fast()).await;
    let client = common::client_for(&r.fake);
    let q = YesNoCard::new("q-1", "Confirm", "Deploy?");
    let sent = client
        .send(
            &ReceiveId::OpenId("ou_owner".into()),
            &MessageContent::Card(q.build()),
            "uuid-card-1",
        )
        .await
        .unwrap();
    for (i, kind) in [FrameType::Event, FrameType::Card].into_iter().enumerate() {
        r.fake.push_card_click(
            "ou_owner",
            &sent.message_id,
            json!({"q": "q-1", "a": "yes"}),
            kind,
        );
        let d = r.next().await;
        assert_eq!(d.kind, kind);
        assert_eq!(d.event_type.as_deref(), Some("card.action.trigger"));
        let EventBody::CardAction(c) = d.parse().unwrap().body else {
            panic!("not a click")
        };
        assert_eq!(c.operator_open_id, "ou_owner");
        assert_eq!(c.yes_no(), Some(("q-1", Answer::Yes)));
        assert_eq!(c.open_message_id.as_deref(), Some(sent.message_id.as_str()));
        let card = q.resolved(&Resolution::Answered {
            answer: Answer::Yes,
            by: "you".into(),
            at: format!("14:0{i}"),
        });
        let resp = CardResponse::toast(ToastKind::Success, "Approved").with_card(card);
        d.ack.ack(AckResponse::card(&resp)).unwrap();
        assert!(r.fake.wait_until(WAIT, |f| f.acks().len() == i + 1).await);
        let ack = &r.fake.acks()[i];
        assert!(ack.echo_ok);
        assert_eq!(ack.data.as_ref().unwrap()["toast"]["content"], "Approved");
    }
    let content = r
        .fake
        .message_content(&sent.message_id)
        .unwrap()
        .to_string();
    assert!(content.contains("Approved by you at 14:01"), "{content}");
    assert!(!content.contains("button"));
    r.stop().await;
}

#[tokio::test]
async fn plain_ack_of_a_click_still_sends_data() {
    let mut r = Running::start(FakeConfig::fast()).await;
    r.fake.push_card_click(
        "ou_stranger",
        "om_x",
        json!({"q": "q", "a": "no"}),
        FrameType::Card,
    );
    r.next().await.ack.ack(AckResponse::Ok).unwrap();
    assert!(r.fake.wait_until(WAIT, |f| f.acks().len() == 1).await);
    assert_eq!(r.fake.acks()[0].data, Some(json!({})));
    r.stop().await;
}

#[tokio::test]
async fn dropped_receiver_ends_the_connection_cleanly() {
    let r = Running::start(FakeConfig::fast()).await;
    r.connected().await;
    let Running { fake, rx, task, .. } = r;
    drop(rx);
    fake.push_p2p_text("ou_alice", "anyone?");
    let out = tokio::time::timeout(WAIT, task).await.expect("ends");
    assert!(matches!(out, Ok(Ok(()))), "{out:?}");
}

#[tokio::test]
async fn a_burst_larger_than_the_queue_is_held_not_dropped() {
    // The queue in `Running` takes 64; ACKs are not due for 30 s, so a dropped event would
    // show as a missing delivery, never as a quiet re-push.
    const BURST: usize = 200;
    let mut r = Running::start(FakeConfig {
        ack_timeout: Duration::from_secs(30),
        ..FakeConfig::fast()
    })
    .await;
    r.connected().await;
    let pushed: Vec<String> = (0..BURST)
        .map(|i| r.fake.push_p2p_text(&format!("ou_{i}"), "hi").event_id)
        .collect();
    // Nothing is read until the fake has written the whole burst.
    assert!(
        r.fake
            .wait_until(WAIT, |f| f.pushes().len() == BURST
                && f.in_flight() == BURST)
            .await
    );
    let mut got = Vec::new();
    for _ in 0..BURST {
        let d = r.next().await;
        got.push(d.parse().expect("parses").header.event_id);
        d.ack.ack(AckResponse::Ok).expect("queued");
    }
    assert_eq!(got, pushed, "every event once, in order");
    assert!(r.fake.wait_until(WAIT, |f| f.acks().len() == BURST).await);
    assert!(
        r.fake
            .acks()
            .iter()
            .all(|a| a.code == Some(200) && a.event_id.is_some())
    );
    assert_eq!(r.fake.in_flight(), 0);
    assert!(r.fake.pushes().iter().all(|p| p.attempt == 0), "no re-push");
    r.stop().await;
}
