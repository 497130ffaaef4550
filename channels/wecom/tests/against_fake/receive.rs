//! Callbacks of every type, duplicates, cleaning, hostile frames, no acks (§2, §7.1, §7.7–§7.9).

use std::collections::HashSet;
use std::time::Duration;

use scv_wecom::fake::{FakeConfig, MixedPart};
use scv_wecom::message::{MixedItem, strip_leading_mentions};
use scv_wecom::{CallbackKind, ChatTarget, Content, Event, LinkState};
use serde_json::json;

use crate::{OWNER, PROMPTLY, Running};

fn content(kind: &CallbackKind) -> &Content {
    match kind {
        CallbackKind::Message { content, .. } => content,
        CallbackKind::Event(e) => panic!("not a message: {e:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn texts_in_dms_and_groups_with_the_mention_stripped() {
    let mut r = Running::start(FakeConfig::default()).await;
    let pushed = r.fake.push_text(OWNER, "hello");
    let d = r.next().await;
    assert_eq!(d.req_id(), pushed.req_id, "req_id kept verbatim");
    assert_eq!(d.dedupe_key(), Some(pushed.msgid.as_str()));
    assert!(
        d.raw().contains(&pushed.msgid),
        "the raw frame is what gets journaled"
    );
    let (cb, handle) = d.journaled();
    let cb = cb.unwrap();
    assert_eq!(
        cb.chat,
        ChatTarget::Direct {
            userid: OWNER.into()
        }
    );
    assert_eq!(content(&cb.kind), &Content::Text("hello".into()));
    assert_eq!(handle.unwrap().kind, scv_wecom::HandleKind::Message);

    r.fake
        .push_group_text("wrkGrp01", "LiSi", "@Bridge Bot status?");
    let (cb, _) = r.next_handle().await;
    assert_eq!(
        cb.chat,
        ChatTarget::Group {
            chatid: "wrkGrp01".into()
        }
    );
    assert_eq!(cb.from_userid, "LiSi");
    let text = content(&cb.kind).text().unwrap();
    assert_eq!(
        strip_leading_mentions(&text),
        "Bot status?",
        "only the @token goes"
    );
    r.fake.push_quote(OWNER, "and this?", "earlier words");
    let (cb, _) = r.next_handle().await;
    let CallbackKind::Message { quote, .. } = cb.kind else {
        panic!()
    };
    assert_eq!(quote, Some(Content::Text("earlier words".into())));
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn voice_arrives_as_the_transcript_and_unknown_types_as_unknown() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_voice(OWNER, "remind me at five");
    let (cb, _) = r.next_handle().await;
    assert_eq!(
        content(&cb.kind),
        &Content::Voice {
            transcript: "remind me at five".into()
        }
    );
    r.fake.push_other(
        OWNER,
        "appmsg",
        json!({"title": "an article", "url": "https://x"}),
    );
    let (cb, _) = r.next_handle().await;
    assert_eq!(
        content(&cb.kind),
        &Content::Unknown {
            msgtype: "appmsg".into()
        }
    );
    r.fake.push_mixed(
        OWNER,
        Some("wrkGrp01"),
        &[
            MixedPart::Text("look".into()),
            MixedPart::Image(vec![1, 2, 3]),
        ],
    );
    let (cb, _) = r.next_handle().await;
    let Content::Mixed(items) = content(&cb.kind) else {
        panic!()
    };
    assert!(matches!(&items[..], [MixedItem::Text(t), MixedItem::Image(_)] if t == "look"));
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn events_enter_chat_clicks_feedback_and_unknown_ones() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_event(OWNER, "enter_chat", None);
    let (cb, h) = r.next().await.journaled();
    assert_eq!(cb.unwrap().kind, CallbackKind::Event(Event::EnterChat));
    assert_eq!(h.unwrap().kind, scv_wecom::HandleKind::EnterChat);
    r.fake.click(OWNER, "q17", "yes");
    let (cb, h) = r.next().await.journaled();
    let cb = cb.unwrap();
    assert_eq!(
        cb.kind,
        CallbackKind::Event(Event::CardClick {
            card_type: "button_interaction".into(),
            event_key: "yes".into(),
            task_id: "q17".into()
        })
    );
    assert_eq!(cb.from_userid, OWNER);
    assert_eq!(h.unwrap().kind, scv_wecom::HandleKind::CardEvent);
    r.fake.push_event(
        OWNER,
        "feedback_event",
        Some(json!({"id": "fb1", "type": 1})),
    );
    let (cb, h) = r.next().await.journaled();
    assert_eq!(
        cb.unwrap().kind,
        CallbackKind::Event(Event::Feedback {
            id: "fb1".into(),
            kind: Some(1)
        })
    );
    assert!(h.is_none(), "feedback takes no reply");
    r.fake.push_event(OWNER, "auth_change_event", None);
    let (cb, _) = r.next().await.journaled();
    assert_eq!(
        cb.unwrap().kind,
        CallbackKind::Event(Event::Other {
            eventtype: "auth_change_event".into()
        })
    );
    assert_eq!(
        r.conn.status().borrow().state,
        LinkState::Connected,
        "unknown events change nothing"
    );
    r.stop().await.unwrap();
}

/// The account task's journal in miniature: a set of keys, written before anything else.
#[tokio::test(start_paused = true)]
async fn duplicates_keep_their_msgid_also_after_a_reconnect_so_the_journal_takes_them_once() {
    let mut r = Running::start(FakeConfig::default()).await;
    let first = r.fake.push_text(OWNER, "once");
    r.fake.repush(&first, true);
    r.fake.repush(&first, false);
    let mut journal = HashSet::new();
    let mut fresh = 0;
    for _ in 0..3 {
        let d = r.next().await;
        if journal.insert(d.dedupe_key().unwrap().to_owned()) {
            fresh += 1;
        }
    }
    r.fake.drop_all();
    let mut status = r.conn.status();
    tokio::time::timeout(PROMPTLY, status.wait_for(|s| s.subscribes == 2))
        .await
        .unwrap()
        .unwrap();
    r.fake.repush(&first, false);
    let d = r.next().await;
    assert!(
        !journal.insert(d.dedupe_key().unwrap().to_owned()),
        "seen before"
    );
    assert_eq!(fresh, 1);
    // The platform never waits for an answer to a callback: nothing was sent back.
    assert!(
        r.fake
            .frames()
            .iter()
            .all(|f| f.cmd == "aibot_subscribe" || f.cmd == "ping")
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn pushes_while_no_socket_is_subscribed_are_lost_as_the_spec_assumes() {
    let fake = scv_wecom::fake::FakeWeCom::start(FakeConfig::default())
        .await
        .unwrap();
    let lost = fake.push_text(OWNER, "into the void");
    assert!(!lost.delivered);
    assert_eq!(fake.dropped_pushes(), 1);
    let creds = fake.credentials();
    let mut r = Running::with(fake, creds).await;
    r.connected().await;
    let later = r.fake.push_text(OWNER, "after");
    assert_eq!(
        r.next().await.dedupe_key(),
        Some(later.msgid.as_str()),
        "no redelivery of the lost one"
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn raw_control_bytes_are_cleaned_and_junk_is_ignored() {
    let mut r = Running::start(FakeConfig::default()).await;
    let frame = "{\"cmd\":\"aibot_msg_callback\",\"headers\":{\"req_id\":\"R\u{1}1\"},\"body\":{\"msgid\":\"C1\",\"chattype\":\"single\",\"from\":{\"userid\":\"ZhangSan\"},\"msgtype\":\"text\",\"text\":{\"content\":\"a\u{0B}b\u{1F}c\"}}}";
    for junk in ["not json", "[1,2]", "{\"cmd\":\"x\"}", "{}", "\u{0}\u{1}"] {
        assert!(r.fake.push_raw(junk));
    }
    assert!(r.fake.push_raw(frame));
    let (cb, h) = r.next().await.journaled();
    let cb = cb.unwrap();
    assert_eq!(content(&cb.kind), &Content::Text("abc".into()));
    assert_eq!(h.unwrap().req_id, "R1");
    // Missing fields: journaled as unreadable, handed over, never a panic.
    r.fake.push_raw(
        r#"{"cmd":"aibot_msg_callback","headers":{"req_id":"R2"},"body":{"msgtype":"text"}}"#,
    );
    let d = r.next().await;
    assert!(d.callback().is_err() && d.dedupe_key().is_none());
    assert_eq!(d.journaled().1, None, "no handle for what cannot be read");
    assert_eq!(
        r.conn.status().borrow().subscribes,
        1,
        "junk never broke the link"
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_oversized_frame_ends_the_socket_and_the_link_comes_back() {
    let mut r = Running::start(FakeConfig::default()).await;
    let huge = format!(
        "{{\"cmd\":\"aibot_msg_callback\",\"headers\":{{\"req_id\":\"R\"}},\"body\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(2 << 20)
    );
    assert!(r.fake.push_raw(&huge));
    let mut status = r.conn.status();
    tokio::time::timeout(
        Duration::from_secs(60),
        status.wait_for(|s| s.subscribes == 2),
    )
    .await
    .unwrap()
    .unwrap();
    let after = r.fake.push_text(OWNER, "still here");
    assert_eq!(r.next().await.dedupe_key(), Some(after.msgid.as_str()));
    r.stop().await.unwrap();
}

/// A slow account task: callbacks wait in order while the queue is full, and the socket is
/// still read, so replies are answered, pings too, and nothing is dropped.
#[tokio::test(start_paused = true)]
async fn a_full_queue_keeps_callbacks_in_order_while_replies_and_pings_flow() {
    let fake = scv_wecom::fake::FakeWeCom::start(FakeConfig::default())
        .await
        .unwrap();
    let creds = fake.credentials();
    let mut r = Running::with_queue(fake, creds, 1).await;
    r.connected().await;
    let pushed: Vec<_> = (0..5)
        .map(|i| r.fake.push_text(OWNER, &format!("m{i}")))
        .collect();
    let (_, handle) = r.next_handle().await;
    // Four callbacks wait (one in the queue, three in the backlog); a reply is still answered.
    tokio::time::timeout(PROMPTLY, r.conn.reply_text(&handle, "answer"))
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(scv_wecom::limits::PING_INTERVAL * 3 + Duration::from_secs(1)).await;
    let pings = r.fake.frames_of("ping");
    assert!(
        pings.len() >= 3,
        "pings go out while the queue is full: {pings:?}"
    );
    assert!(pings.iter().all(|p| p.errcode == Some(0)));
    assert_eq!(r.conn.status().borrow().subscribes, 1, "the link stayed up");
    for p in &pushed[1..] {
        assert_eq!(r.next().await.dedupe_key(), Some(p.msgid.as_str()));
    }
    r.stop().await.unwrap();
}
