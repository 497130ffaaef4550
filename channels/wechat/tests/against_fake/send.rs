//! Sending within WeChat's rules: the window, slow-down on ret=-2, malformed sends refused.

use std::time::Duration;

use scv_wechat::fake::FakeConfig;
use scv_wechat::message::{MESSAGE_TYPE_USER, MessageItem};
use scv_wechat::{Endpoint, Error, ErrorClass, TypingStatus, WeixinMessage, new_client_id};

use crate::{start, start_with};

const OWNER: &str = "owner@im.wechat";

fn assert_slow_down(result: Result<(), Error>) {
    let err = result.expect_err("refused");
    assert!(matches!(err, Error::Api { ret: Some(-2), .. }), "{err}");
    assert!(
        matches!(err.class(), ErrorClass::SlowDown(d) if d >= Duration::from_secs(1)),
        "{err}"
    );
}

#[tokio::test]
async fn window_allows_ten_sends_per_inbound_then_slows_down_until_the_peer_writes() {
    let (_fake, handle, client) = start().await;
    let first = handle.push_text(OWNER, "hi");
    let token = first.context_token.clone();
    for i in 0..10 {
        client
            .send_text(
                OWNER,
                token.as_deref(),
                &format!("reply {i}"),
                &new_client_id(),
            )
            .await
            .expect("inside the window");
    }
    assert_slow_down(
        client
            .send_text(OWNER, token.as_deref(), "eleventh", &new_client_id())
            .await,
    );
    assert!(handle.rejected()[0].reason.contains("used up"));
    assert_eq!(handle.sent().len(), 10);

    // The owner writes: a fresh token, a fresh allowance.
    let second = handle.push_text(OWNER, "again");
    assert_ne!(second.context_token, token);
    assert_eq!(handle.latest_context_token(OWNER), second.context_token);
    client
        .send_text(
            OWNER,
            second.context_token.as_deref(),
            "back",
            &new_client_id(),
        )
        .await
        .expect("window reopened");
    let sent = handle.sent();
    assert_eq!(sent.len(), 11);
    assert_eq!(
        (sent[10].text.as_str(), sent[10].to_user.as_str()),
        ("back", OWNER)
    );
    assert_eq!(Some(sent[10].context_token.clone()), second.context_token);
    assert!(sent[10].client_id.starts_with("scv-wechat:"));
}

#[tokio::test]
async fn window_closes_after_a_day_without_inbound_messages() {
    let (_fake, handle, client) = start().await;
    let msg = handle.push_text(OWNER, "hi");
    let token = msg.context_token.as_deref();
    handle.advance_clock(Duration::from_secs(23 * 3600));
    client
        .send_text(OWNER, token, "still open", &new_client_id())
        .await
        .expect("within 24 h");
    handle.advance_clock(Duration::from_secs(2 * 3600));
    assert_slow_down(
        client
            .send_text(OWNER, token, "too late", &new_client_id())
            .await,
    );
    assert!(handle.rejected()[0].reason.contains("window closed"));
    let fresh = handle.push_text(OWNER, "I'm back");
    client
        .send_text(
            OWNER,
            fresh.context_token.as_deref(),
            "welcome back",
            &new_client_id(),
        )
        .await
        .expect("reopened by the owner's message");
}

#[tokio::test]
async fn malformed_sends_are_refused_in_the_body() {
    let config = FakeConfig {
        max_text_chars: Some(50),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config).await;
    let ctx = handle.push_text(OWNER, "hi").context_token.expect("token");
    let stranger_ctx = handle
        .push_text("stranger@im.wechat", "yo")
        .context_token
        .expect("token");
    let ok_id = new_client_id();
    client
        .send_text(OWNER, Some(&ctx), "fine", &ok_id)
        .await
        .expect("valid send");

    let mut two_items = WeixinMessage::outbound_text(OWNER, Some(&ctx), "a", &new_client_id());
    two_items.item_list.push(MessageItem::text("b"));
    let mut user_type = WeixinMessage::outbound_text(OWNER, Some(&ctx), "a", &new_client_id());
    user_type.message_type = Some(MESSAGE_TYPE_USER);
    let mut generating = WeixinMessage::outbound_text(OWNER, Some(&ctx), "a", &new_client_id());
    generating.message_state = Some(1);
    let cases: Vec<(WeixinMessage, &str)> = vec![
        (
            WeixinMessage::outbound_text(OWNER, None, "a", &new_client_id()),
            "no context_token",
        ),
        (two_items, "exactly one item"),
        (user_type, "message_type"),
        (generating, "message_state"),
        (
            WeixinMessage::outbound_text(OWNER, Some(&ctx), "", &new_client_id()),
            "text item",
        ),
        (
            WeixinMessage::outbound_text(OWNER, Some(&ctx), "again", &ok_id),
            "client_id reused",
        ),
        (
            WeixinMessage::outbound_text(OWNER, Some(&ctx), "a", ""),
            "no client_id",
        ),
        (
            WeixinMessage::outbound_text(OWNER, Some("ctx-forged"), "a", &new_client_id()),
            "unknown context_token",
        ),
        (
            WeixinMessage::outbound_text(OWNER, Some(&stranger_ctx), "a", &new_client_id()),
            "another user",
        ),
        (
            WeixinMessage::outbound_text(OWNER, Some(&ctx), &"x".repeat(51), &new_client_id()),
            "too long",
        ),
    ];
    let n = cases.len();
    for (msg, reason) in cases {
        assert_slow_down(client.send_message(msg).await);
        let last = handle.rejected().pop().expect("recorded");
        assert!(
            last.reason.contains(reason),
            "{:?} should mention {reason}",
            last.reason
        );
    }
    assert_eq!(handle.rejected().len(), n);
    assert_eq!(
        handle.sent().len(),
        1,
        "nothing malformed was recorded as sent"
    );
}

#[tokio::test]
async fn burst_limit_answers_prepare_failed() {
    let config = FakeConfig {
        burst: Some((2, Duration::from_secs(1))),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config).await;
    let ctx = handle.push_text(OWNER, "hi").context_token;
    for _ in 0..2 {
        client
            .send_text(OWNER, ctx.as_deref(), "x", &new_client_id())
            .await
            .expect("within burst");
    }
    let err = client
        .send_text(OWNER, ctx.as_deref(), "x", &new_client_id())
        .await
        .expect_err("burst");
    assert!(err.to_string().contains("prepare failed"), "{err}");
    handle.advance_clock(Duration::from_secs(2));
    client
        .send_text(OWNER, ctx.as_deref(), "x", &new_client_id())
        .await
        .expect("burst window passed");
}

#[tokio::test]
async fn typing_and_notify_calls_are_checked_and_recorded() {
    let (_fake, handle, client) = start().await;
    let ctx = handle.push_text(OWNER, "hi").context_token;
    client.notify_start().await.expect("notify start");
    let ticket = client
        .get_config(OWNER, ctx.as_deref())
        .await
        .expect("config")
        .expect("a ticket");
    client
        .send_typing(OWNER, &ticket, TypingStatus::Typing)
        .await
        .expect("typing");
    client
        .send_typing(OWNER, &ticket, TypingStatus::Cancel)
        .await
        .expect("cancel");
    let forged = scv_wechat::TypingTicket("forged".into());
    let err = client
        .send_typing(OWNER, &forged, TypingStatus::Typing)
        .await
        .expect_err("bad ticket");
    assert_eq!(err.class(), ErrorClass::Transient);
    client.notify_stop().await.expect("notify stop");
    let typing: Vec<_> = handle
        .typing()
        .into_iter()
        .map(|t| (t.user, t.status))
        .collect();
    assert_eq!(typing, [(OWNER.to_owned(), 1), (OWNER.to_owned(), 2)]);
    assert_eq!(
        handle.notifies(),
        [Endpoint::NotifyStart, Endpoint::NotifyStop]
    );
}

/// The daemon's tests run with a paused tokio clock; the fake's window follows it.
#[tokio::test(start_paused = true)]
async fn window_follows_a_paused_tokio_clock() {
    let (_fake, handle, client) = start().await;
    let ctx = handle.push_text(OWNER, "hi").context_token;
    client
        .send_text(OWNER, ctx.as_deref(), "now", &new_client_id())
        .await
        .expect("open");
    tokio::time::advance(Duration::from_secs(25 * 3600)).await;
    assert_slow_down(
        client
            .send_text(OWNER, ctx.as_deref(), "late", &new_client_id())
            .await,
    );
    // An idle long poll ends on the paused clock at once, not after real time.
    let updates = client.get_updates("").await.expect("poll");
    assert_eq!(
        updates.messages.len(),
        1,
        "the pushed message is still delivered"
    );
    let idle = client.get_updates(&updates.cursor).await.expect("poll");
    assert!(idle.messages.is_empty());
}
