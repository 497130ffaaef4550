//! Long polling: holding, empty polls, client timeouts, the cursor, -14 and transport errors.

use std::time::{Duration, Instant};

use scv_wechat::fake::{FakeConfig, Fault};
use scv_wechat::message::MESSAGE_TYPE_BOT;
use scv_wechat::{Endpoint, ErrorClass, WeixinMessage};
use serde_json::json;

use crate::{PROMPTLY, start, start_with};

const USER: &str = "alice@im.wechat";

// On a paused clock (the fake's hold follows it): the 150 ms the poll must hang through pass
// at once, and exactly, instead of on the wall clock.
#[tokio::test(start_paused = true)]
async fn long_poll_hangs_until_a_message_is_pushed() {
    let config = FakeConfig {
        hold: Duration::from_secs(30),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config).await;
    let started = tokio::time::Instant::now();
    let poll = tokio::spawn({
        let client = client.clone();
        async move { client.get_updates("").await }
    });
    assert!(
        handle
            .wait_for_requests(Endpoint::GetUpdates, 1, PROMPTLY)
            .await
    );
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        !poll.is_finished(),
        "the poll must hang while nothing is queued"
    );
    let pushed = handle.push_text(USER, "hello bot");
    let updates = tokio::time::timeout(PROMPTLY, poll)
        .await
        .expect("released at once")
        .expect("joins")
        .expect("poll");
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(!updates.timed_out);
    assert_eq!(updates.messages.len(), 1);
    let got = &updates.messages[0];
    assert_eq!(got.text(), Some("hello bot"));
    assert_eq!(got.from_user_id, USER);
    assert_eq!(got.to_user_id, handle.bot_id());
    assert_eq!(got.context_token, pushed.context_token);
    // 64-bit ids above 2^53 arrive exactly.
    let id = got.message_id.expect("has an id");
    assert_eq!(Some(id), pushed.message_id);
    assert_eq!(id, 7_492_913_259_736_648_968);
    assert!(id > (1u64 << 53));
    assert!(!updates.cursor.is_empty());
}

#[tokio::test]
async fn idle_poll_returns_empty_after_the_hold_and_the_client_adopts_the_suggestion() {
    let config = FakeConfig {
        hold: Duration::from_millis(150),
        suggested_hold_ms: Some(20_000),
        ..FakeConfig::default()
    };
    let (_fake, _handle, client) = start_with(config).await;
    assert_eq!(
        client.poll_timeout(),
        Duration::from_secs(45),
        "spec default 35 s + 10 s"
    );
    let started = Instant::now();
    let updates = client
        .get_updates("")
        .await
        .expect("empty poll is a success");
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "held for the hold time"
    );
    assert!(updates.messages.is_empty());
    assert!(
        !updates.timed_out,
        "the server ended this poll, not the client"
    );
    assert_eq!(updates.cursor, "");
    assert_eq!(updates.suggested_hold, Some(Duration::from_secs(20)));
    assert_eq!(
        client.poll_timeout(),
        Duration::from_secs(30),
        "suggested hold + 10 s"
    );
}

#[tokio::test]
async fn client_timeout_is_an_empty_poll_with_the_same_cursor() {
    let config = FakeConfig {
        suggested_hold_ms: Some(100),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config).await;
    let client = client.with_poll_margin(Duration::from_millis(50));
    handle.push_text(USER, "one");
    let first = client.get_updates("").await.expect("poll");
    assert_eq!(first.messages.len(), 1);
    assert_eq!(client.poll_timeout(), Duration::from_millis(150));

    handle.inject(Endpoint::GetUpdates, Fault::Hang);
    let started = Instant::now();
    let stalled = client
        .get_updates(&first.cursor)
        .await
        .expect("a client timeout is not an error");
    assert!(stalled.timed_out);
    assert!(stalled.messages.is_empty());
    assert_eq!(stalled.cursor, first.cursor);
    assert!(started.elapsed() < PROMPTLY);

    // The stalled poll consumed nothing: the next message is still delivered.
    handle.push_text(USER, "two");
    let next = client.get_updates(&stalled.cursor).await.expect("poll");
    assert_eq!(next.messages[0].text(), Some("two"));
}

#[tokio::test]
async fn cursor_only_moves_forward_and_never_replays() {
    let config = FakeConfig {
        hold: Duration::from_millis(100),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config).await;
    handle.push_text(USER, "m1");
    let a = client.get_updates("").await.expect("poll");
    assert_eq!(a.messages.len(), 1);
    handle.push_text(USER, "m2");
    handle.push_text(USER, "m3");
    let b = client.get_updates(&a.cursor).await.expect("poll");
    let texts: Vec<_> = b.messages.iter().filter_map(|m| m.text()).collect();
    assert_eq!(texts, ["m2", "m3"]);
    assert_ne!(b.cursor, a.cursor);
    // The fake saw the cursors the client sent, in order.
    let cursors: Vec<_> = handle
        .requests_to(Endpoint::GetUpdates)
        .into_iter()
        .filter_map(|r| r.cursor)
        .collect();
    assert_eq!(cursors, ["".to_owned(), a.cursor.clone()]);

    // Nothing new: the cursor stays, and an old cursor or "" replays nothing.
    let idle = client.get_updates(&b.cursor).await.expect("poll");
    assert!(idle.messages.is_empty());
    assert_eq!(idle.cursor, b.cursor);
    for old in [a.cursor.as_str(), ""] {
        let replay = client.get_updates(old).await.expect("poll");
        assert!(
            replay.messages.is_empty(),
            "cursor {old:?} replayed {:?}",
            replay.messages
        );
    }
}

#[tokio::test]
async fn duplicates_arrive_with_same_and_new_ids_and_bot_echoes_are_marked() {
    let (_fake, handle, client) = start().await;
    let original = handle.push_text(USER, "only once please");
    let id = original.message_id.expect("has an id");
    let same = handle.redeliver(id, false).expect("known id");
    let renamed = handle.redeliver(id, true).expect("known id");
    assert!(handle.redeliver(1, false).is_none());
    handle.push_message(WeixinMessage {
        from_user_id: handle.bot_id(),
        message_type: Some(MESSAGE_TYPE_BOT),
        ..WeixinMessage::default()
    });
    let updates = client.get_updates("").await.expect("poll");
    assert_eq!(updates.messages.len(), 4);
    let [a, b, c, echo] = &updates.messages[..] else {
        unreachable!()
    };
    assert_eq!(a.dedupe_key(), b.dedupe_key());
    assert_ne!(a.dedupe_key(), c.dedupe_key());
    assert_eq!(c.message_id, renamed.message_id);
    assert_eq!(
        (a.text(), c.text()),
        (Some("only once please"), Some("only once please"))
    );
    assert_ne!(a.context_token, b.context_token);
    assert_eq!(b.context_token, same.context_token);
    assert!(!a.is_from_bot() && echo.is_from_bot());
}

#[tokio::test]
async fn odd_messages_do_not_sink_the_batch() {
    let (_fake, handle, client) = start().await;
    let body = json!({"ret": 0, "get_updates_buf": "next", "msgs": [
        42,
        {"message_id": 9_007_199_254_740_993u64, "from_user_id": USER, "item_list": [{"type": 1, "text_item": {"text": "hi"}}]},
    ]});
    handle.inject(Endpoint::GetUpdates, Fault::Body(body));
    let updates = client.get_updates("prev").await.expect("poll");
    assert_eq!(updates.undecodable, 1);
    assert_eq!(updates.messages[0].message_id, Some(9_007_199_254_740_993));
    assert_eq!(updates.cursor, "next");
    // A response without a cursor keeps the old one.
    handle.inject(Endpoint::GetUpdates, Fault::Body(json!({"ret": 0})));
    assert_eq!(
        client.get_updates("prev").await.expect("poll").cursor,
        "prev"
    );
}

#[tokio::test]
async fn session_expiry_is_fatal_relogin_on_every_shape() {
    let (fake, handle, client) = start().await;
    for fault in [Fault::session_expired(), Fault::session_expired_with_ret()] {
        handle.inject(Endpoint::GetUpdates, fault);
        let err = client
            .get_updates("keep")
            .await
            .expect_err("-14 is an error despite HTTP 200");
        assert!(err.is_session_expired(), "{err}");
        assert_eq!(err.class(), ErrorClass::Fatal { relogin: true });
    }
    // A revoked token: every endpoint answers -14.
    handle.expire_session();
    let err = client.get_updates("keep").await.expect_err("expired");
    assert_eq!(err.class(), ErrorClass::Fatal { relogin: true });
    assert!(err.to_string().contains("getupdates"), "{err}");
    let err = client
        .send_text(USER, Some("ctx"), "x", "c1")
        .await
        .expect_err("expired");
    assert_eq!(err.class(), ErrorClass::Fatal { relogin: true });
    // No token at all never reaches the wire.
    let anonymous = scv_wechat::Client::new(&fake.base_url(), None).expect("valid");
    let before = handle.requests().len();
    let err = anonymous.get_updates("").await.expect_err("no token");
    assert_eq!(err.class(), ErrorClass::Fatal { relogin: true });
    assert_eq!(handle.requests().len(), before);
    // A fresh token works again.
    let relogged = client.with_token(handle.issue_token());
    relogged.notify_start().await.expect("works after re-login");
}

#[tokio::test]
async fn transport_failures_and_other_codes_are_transient() {
    let (_fake, handle, client) = start().await;
    handle.inject(Endpoint::GetUpdates, Fault::Status(500));
    handle.inject(Endpoint::GetUpdates, Fault::Status(524));
    handle.inject(Endpoint::GetUpdates, Fault::Reset);
    handle.inject(Endpoint::GetUpdates, Fault::ret(-1));
    handle.inject(Endpoint::GetUpdates, Fault::ret(-2));
    handle.inject(Endpoint::GetUpdates, Fault::Body(json!("not an object")));
    for expected in [
        "HTTP 500",
        "HTTP 524",
        "network error",
        "ret -1",
        "ret -2",
        "malformed",
    ] {
        let err = client.get_updates("c").await.expect_err("fails");
        assert_eq!(err.class(), ErrorClass::Transient, "{err}");
        assert!(
            err.to_string().contains(expected),
            "{err} should mention {expected}"
        );
    }
    handle.inject(Endpoint::GetUpdates, Fault::Status(404));
    let err = client.get_updates("c").await.expect_err("fails");
    assert_eq!(err.class(), ErrorClass::Fatal { relogin: false });
}

#[tokio::test]
async fn shutdown_releases_a_held_poll() {
    let config = FakeConfig {
        hold: Duration::from_secs(30),
        ..FakeConfig::default()
    };
    let (fake, handle, client) = start_with(config).await;
    let poll = tokio::spawn(async move { client.get_updates("").await });
    assert!(
        handle
            .wait_for_requests(Endpoint::GetUpdates, 1, PROMPTLY)
            .await
    );
    fake.shutdown().await;
    let result = tokio::time::timeout(PROMPTLY, poll)
        .await
        .expect("released")
        .expect("joins");
    assert!(result.is_ok_and(|u| u.messages.is_empty()));
}

#[tokio::test]
async fn a_poll_the_client_gave_up_on_consumes_nothing() {
    let config = FakeConfig {
        hold: Duration::from_secs(30),
        suggested_hold_ms: Some(100),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config).await;
    let client = client.with_poll_margin(Duration::from_millis(50));
    handle.push_text(USER, "learn the hold");
    let first = client.get_updates("").await.expect("poll");
    // The fake holds for 30 s; the client gives up after 150 ms and hangs up.
    let abandoned = client.get_updates(&first.cursor).await.expect("poll");
    assert!(abandoned.timed_out);
    // The fake must notice the hang-up: a message pushed now goes to the next poll, not to
    // the dead socket of the abandoned one. It stops counting the poll once it noticed.
    let noticed = tokio::time::timeout(PROMPTLY, async {
        loop {
            // Armed before the check: a poll ending is a change of the fake's.
            let changed = handle.changed();
            if handle.polls_in_flight() == 0 {
                return;
            }
            changed.await;
        }
    })
    .await;
    assert!(
        noticed.is_ok(),
        "the fake never noticed the hang-up: {} polls in flight",
        handle.polls_in_flight()
    );
    handle.push_text(USER, "after the timeout");
    let next = client.get_updates(&abandoned.cursor).await.expect("poll");
    assert_eq!(
        next.messages.first().and_then(|m| m.text()),
        Some("after the timeout")
    );
}

/// A client killed right after writing a poll leaves the request and its hang-up in a socket the
/// fake has not even accepted yet, so nothing counts it in flight. Once the fake reports that
/// every earlier connection is closed, that request was read (and dropped with its hang-up), and
/// the next message goes to the next client instead of to the dead one.
#[tokio::test]
async fn a_poll_a_dead_client_wrote_is_gone_once_its_connections_are_closed() {
    let (_fake, handle, client) = start().await;
    let token = handle.bot_token().expect("a token");
    let url = url::Url::parse(&handle.base_url()).expect("base URL");
    let addr = format!(
        "{}:{}",
        url.host_str().expect("host"),
        url.port().expect("port")
    );
    let body =
        json!({"get_updates_buf": "", "base_info": {"channel_version": "1.0.0"}}).to_string();
    let request = format!(
        "POST {}ilink/bot/getupdates HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nAuthorizationType: ilink_bot_token\r\nX-WECHAT-UIN: {}\r\n\
         Authorization: Bearer {}\r\n\r\n{body}",
        url.path(),
        body.len(),
        scv_wechat::headers::random_uin(),
        token.expose(),
    );
    // Blocking on purpose: the kernel completes the connection and takes the bytes while this
    // (single-threaded) test holds the runtime, so the fake has accepted nothing yet.
    {
        use std::io::Write;
        let mut dead = std::net::TcpStream::connect(&addr).expect("connects");
        dead.write_all(request.as_bytes()).expect("writes");
    }
    assert_eq!(handle.polls_in_flight(), 0, "not read yet");
    assert!(
        handle.connections_closed(PROMPTLY).await,
        "the fake never closed the dead client's connection"
    );
    assert_eq!(
        handle.requests_to(Endpoint::GetUpdates).len(),
        1,
        "the dead client's poll was read"
    );
    handle.push_text(USER, "for the living");
    let next = client.get_updates("").await.expect("poll");
    assert_eq!(
        next.messages.first().and_then(|m| m.text()),
        Some("for the living")
    );
}

// The hung-poll watchdog never throws away an answer already on its way: the fake answers at
// the very instant the client's deadline passes (as when a stopped process resumes with the
// answer arriving and its timer expired), so the client sees its deadline before it has read
// the answer. The server counts the messages as delivered once written, so a discarded answer
// is a lost message.
#[tokio::test(start_paused = true)]
async fn an_answer_arriving_as_the_deadline_passes_is_kept() {
    let config = FakeConfig {
        hold: Duration::from_secs(3600),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config).await;
    let client = client.with_poll_margin(Duration::from_secs(1));
    let deadline = tokio::time::Instant::now() + client.poll_timeout();
    let answer = tokio::spawn({
        let handle = handle.clone();
        async move {
            tokio::time::sleep_until(deadline).await;
            handle.push_text(USER, "written while we were stopped");
        }
    });
    let updates = client.get_updates("").await.expect("poll");
    assert!(!updates.timed_out, "the answer was there: not a timeout");
    let texts: Vec<_> = updates.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, [Some("written while we were stopped")]);
    answer.await.expect("joins");
}
