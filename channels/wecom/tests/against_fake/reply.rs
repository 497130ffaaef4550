//! Replies on handles: streams, windows, wrong handles, injected codes and the fallback
//! (§4.1–§4.5, §4.8, §7.11–§7.13, §7.17–§7.18).

use std::time::Duration;

use scv_wecom::classify::{
    DEVICE_NOT_SUPPORTED, INVALID_REQ_ID, REPLY_EXPIRED, STREAM_EXPIRED, VERSION_CONFLICT,
};
use scv_wecom::fake::{FakeConfig, Fault};
use scv_wecom::frame::cmd;
use scv_wecom::limits::{ACK_TIMEOUT, STREAM_CONTENT_MAX_BYTES, STREAM_FINISH_BY, STREAM_WINDOW};
use scv_wecom::{Error, ErrorClass, Route, StreamReply};
use serde_json::json;

use crate::{OWNER, Running};

fn stream_frame(id: &str, content: &str, finish: bool) -> serde_json::Value {
    json!({"msgtype": "stream", "stream": {"id": id, "finish": finish, "content": content}})
}

#[tokio::test(start_paused = true)]
async fn a_stream_replaces_its_bubble_frame_by_frame_one_frame_at_a_time() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "tell me");
    let (_, handle) = r.next_handle().await;
    // Slow acks: were frames pipelined on the handle, the fake would count it.
    r.fake.set_ack_delay(Duration::from_millis(300));
    let mut s = StreamReply::new(r.conn.clone(), handle.clone());
    assert!(s.update("Once").await.unwrap());
    assert!(
        !s.update("Once").await.unwrap(),
        "unchanged text is not sent"
    );
    let (a, b) = tokio::join!(
        r.conn.command(
            cmd::RESPOND_MSG,
            &handle.req_id,
            stream_frame(s.id(), "Once upon", false),
            ACK_TIMEOUT
        ),
        r.conn.command(
            cmd::RESPOND_MSG,
            &handle.req_id,
            stream_frame(s.id(), "Once upon a", false),
            ACK_TIMEOUT
        ),
    );
    a.unwrap();
    b.unwrap();
    s.finish("Once upon a time.").await.unwrap();
    assert_eq!(
        r.fake.pipelined(),
        0,
        "never two unanswered frames on one req_id"
    );
    let bubbles = r.fake.bubbles();
    assert_eq!(bubbles.len(), 1);
    assert_eq!(bubbles[0].content, "Once upon a time.");
    assert!(bubbles[0].finished && !bubbles[0].spinning);
    assert_eq!(bubbles[0].frames, 4);
    // Finished: another frame is refused by the client, and by the platform if sent anyway.
    assert!(matches!(s.update("more").await, Err(Error::Invalid(_))));
    let raw = r
        .conn
        .command(
            cmd::RESPOND_MSG,
            &handle.req_id,
            stream_frame(s.id(), "more", false),
            ACK_TIMEOUT,
        )
        .await;
    let err = raw.unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::HandleGone {
            code: STREAM_EXPIRED
        }
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn blank_finishes_and_oversized_frames_never_leave_the_client() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "q");
    let (_, handle) = r.next_handle().await;
    let mut s = StreamReply::new(r.conn.clone(), handle.clone());
    let err = s.finish(" \n ").await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Rejected { code: 0 });
    let big = "字".repeat(STREAM_CONTENT_MAX_BYTES / 3 + 1);
    let err = s.update(&big).await.unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }));
    assert!(
        r.fake.frames_of(cmd::RESPOND_MSG).is_empty(),
        "nothing went out"
    );
    // What the platform does with them when sent raw: a spinning bubble; 40058.
    let raw = |c: &str, fin| {
        r.conn.command(
            cmd::RESPOND_MSG,
            &handle.req_id,
            stream_frame("s2", c, fin),
            ACK_TIMEOUT,
        )
    };
    let err = raw(&big, false).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Rejected { code: 40058 });
    raw(" ", true).await.unwrap();
    assert!(
        r.fake.bubbles()[0].spinning,
        "the fake flags what the client must never do"
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn past_the_stream_window_the_answer_goes_out_proactively() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "slow question");
    let (_, handle) = r.next_handle().await;
    let mut s = StreamReply::new(r.conn.clone(), handle.clone());
    s.update("thinking").await.unwrap();
    tokio::time::advance(STREAM_FINISH_BY).await;
    let route = s.finish_or_send("the whole answer").await.unwrap();
    assert_eq!(route, Route::Proactive);
    let sent = r.fake.sent();
    assert_eq!(sent.last().unwrap().cmd, cmd::SEND_MSG);
    assert_eq!(sent.last().unwrap().to, OWNER);
    assert_eq!(
        sent.last().unwrap().body["markdown"]["content"],
        "the whole answer"
    );
    // The platform's own refusal past its window, for a frame sent anyway: 846608.
    tokio::time::advance(STREAM_WINDOW - STREAM_FINISH_BY).await;
    let err = r
        .conn
        .command(
            cmd::RESPOND_MSG,
            &handle.req_id,
            stream_frame(s.id(), "late", true),
            ACK_TIMEOUT,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::HandleGone {
            code: STREAM_EXPIRED
        }
    );
    // Any other reply past the window: 846604.
    let card = json!({"msgtype": "template_card", "template_card": {"card_type": "text_notice",
        "main_title": {"title": "late"}, "task_id": "late1"}});
    let err = r
        .conn
        .command(cmd::RESPOND_MSG, &handle.req_id, card, ACK_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::HandleGone {
            code: REPLY_EXPIRED
        }
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn injected_handle_codes_fall_back_and_conflicts_are_retried() {
    let mut r = Running::start(FakeConfig::default()).await;
    for (i, code) in [
        REPLY_EXPIRED,
        INVALID_REQ_ID,
        STREAM_EXPIRED,
        DEVICE_NOT_SUPPORTED,
    ]
    .into_iter()
    .enumerate()
    {
        r.fake.push_text(OWNER, "q");
        let (_, handle) = r.next_handle().await;
        r.fake.fail_next(cmd::RESPOND_MSG, Fault::Code(code), 1);
        let err = r.conn.reply_text(&handle, "a").await.unwrap_err();
        assert_eq!(err.class(), ErrorClass::HandleGone { code });
        r.fake.fail_next(cmd::RESPOND_MSG, Fault::Code(code), 1);
        assert_eq!(
            r.conn.reply_or_send(&handle, "answer").await.unwrap(),
            Route::Proactive
        );
        assert_eq!(r.fake.sent().len(), i + 1);
    }
    r.fake.push_text(OWNER, "q");
    let (_, handle) = r.next_handle().await;
    r.fake
        .fail_next(cmd::RESPOND_MSG, Fault::Code(VERSION_CONFLICT), 2);
    r.fake.fail_next(cmd::RESPOND_MSG, Fault::Code(-1), 1);
    assert_eq!(
        r.conn.reply_or_send(&handle, "answer").await.unwrap(),
        Route::Reply
    );
    let codes: Vec<_> = r
        .fake
        .frames_of(cmd::RESPOND_MSG)
        .iter()
        .rev()
        .take(4)
        .map(|f| f.errcode)
        .collect();
    assert_eq!(codes, [Some(0), Some(-1), Some(6000), Some(6000)]);
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_frame_times_out_as_outcome_unknown() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "q");
    let (_, handle) = r.next_handle().await;
    r.fake.fail_next(cmd::RESPOND_MSG, Fault::NoAck, 1);
    let started = tokio::time::Instant::now();
    let err = r.conn.reply_text(&handle, "a").await.unwrap_err();
    assert!(matches!(err, Error::AckTimeout { .. }), "{err}");
    assert!(err.outcome_unknown());
    assert_eq!(err.class(), ErrorClass::Transient);
    assert!(crate::about(started.elapsed(), ACK_TIMEOUT));
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn handles_take_only_their_own_command_within_their_window() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_event(OWNER, "enter_chat", None);
    let (_, welcome) = r.next().await.journaled();
    let welcome = welcome.unwrap();
    // respond_msg on an event's req_id: the platform's 846605, a fallback for the caller.
    let err = r
        .conn
        .command(
            cmd::RESPOND_MSG,
            &welcome.req_id,
            stream_frame("s", "x", true),
            ACK_TIMEOUT,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::HandleGone {
            code: INVALID_REQ_ID
        }
    );
    assert_eq!(
        r.conn.reply_or_send(&welcome, "hi").await.unwrap(),
        Route::Proactive
    );
    let markdown = json!({"msgtype": "markdown", "markdown": {"content": "hi"}});
    let err = r
        .conn
        .command(cmd::RESPOND_WELCOME, &welcome.req_id, markdown, ACK_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected { code: 40008 },
        "a welcome is text or a card"
    );
    r.conn.welcome(&welcome, "Welcome back").await.unwrap();
    assert_eq!(r.fake.sent().last().unwrap().cmd, cmd::RESPOND_WELCOME);
    // After 5 s: refused by the client before sending, and by the platform when sent.
    r.fake.push_event(OWNER, "enter_chat", None);
    let (_, late) = r.next().await.journaled();
    let late = late.unwrap();
    tokio::time::advance(Duration::from_secs(5)).await;
    let err = r.conn.welcome(&late, "hi").await.unwrap_err();
    assert!(matches!(err, Error::WindowClosed { .. }));
    let body = json!({"msgtype": "text", "text": {"content": "hi"}});
    let err = r
        .conn
        .command(cmd::RESPOND_WELCOME, &late.req_id, body, ACK_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::HandleGone {
            code: INVALID_REQ_ID
        }
    );
    r.stop().await.unwrap();
}

/// A restart with the journal's handle: the old req_id is refused, the answer still arrives.
#[tokio::test(start_paused = true)]
async fn an_old_req_id_after_a_reconnect_is_refused_and_the_answer_goes_out_proactively() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "before the crash");
    let (_, handle) = r.next_handle().await;
    r.fake.drop_all();
    let mut status = r.conn.status();
    tokio::time::timeout(crate::PROMPTLY, status.wait_for(|s| s.subscribes == 2))
        .await
        .unwrap()
        .unwrap();
    let stored = scv_wecom::ReplyHandle {
        received_at: tokio::time::Instant::now(),
        ..handle
    };
    let err = r.conn.reply_text(&stored, "answer").await.unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::HandleGone {
            code: INVALID_REQ_ID
        }
    );
    assert_eq!(
        r.conn.reply_or_send(&stored, "answer").await.unwrap(),
        Route::Proactive
    );
    assert_eq!(r.fake.sent().len(), 1);
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn finish_frames_carry_images_checked_by_md5() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "chart please");
    let (_, handle) = r.next_handle().await;
    let png = [b"\x89PNG\r\n\x1A\n".as_slice(), &[7u8; 100]].concat();
    let mut s = StreamReply::new(r.conn.clone(), handle.clone());
    let too_many = vec![png.clone(); 11];
    assert!(matches!(
        s.finish_with_images("x", &too_many).await,
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        s.finish_with_images("x", &[b"GIF89a".to_vec()]).await,
        Err(Error::Invalid(_))
    ));
    s.finish_with_images("Here it is.", &[png.clone(), png])
        .await
        .unwrap();
    let b = &r.fake.bubbles()[0];
    assert!(b.finished && b.images == 2);
    // What the platform refuses when sent anyway: images on a frame that does not finish,
    // and an md5 that is not the bytes'.
    let item = json!({"msgtype": "image", "image": {"base64": "AAAA", "md5": "00"}});
    for (finish, md5_ok) in [(false, true), (true, false)] {
        let mut it = item.clone();
        if md5_ok {
            it["image"]["md5"] = json!(scv_wecom::media::md5_hex(&[0, 0, 0]));
        }
        let body = json!({"msgtype": "stream", "stream": {"id": "s9", "finish": finish, "content": "x", "msg_item": [it]}});
        let err = r
            .conn
            .command(cmd::RESPOND_MSG, &handle.req_id, body, ACK_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(err.class(), ErrorClass::Rejected { code: 40058 });
    }
    r.stop().await.unwrap();
}
