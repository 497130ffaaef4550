//! The daemon with the real WeChat adapter against the fake iLink server, over real sockets.

use crate::wechat_support;

use std::time::Duration;

use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::conversation::ChatId;
use scv_bridge::protocol::{ComponentState, DaemonCommand};
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, Fault};
use wechat_support::*;

#[tokio::test]
async fn a_chat_round_trip_with_an_echo_agent() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.tuning = None; // the real factory and WeChat's own timings
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let s = h.status().await;
    assert_eq!(s.bot_id.as_deref(), Some(h.fake.handle().bot_id().as_str()));
    assert_eq!(s.user_id.as_deref(), Some(OWNER));

    let fake = h.fake.handle();
    // The turn is held until the typing sign reached WeChat: it is shown while the agent works.
    let pushed = fake.push_text(OWNER, "hold hello");
    assert!(
        fake.wait_for_requests(Endpoint::SendTyping, 1, PATIENCE)
            .await
    );
    h.agent.release.notify_one();
    let sent = fake.wait_for_sent(1, PATIENCE).await;
    assert_eq!(sent[0].text, "echo: hold hello");
    assert_eq!(sent[0].to_user, OWNER);
    assert_eq!(Some(&sent[0].context_token), pushed.context_token.as_ref());
    // Typing was shown while the agent worked, then cancelled (beside the send, not before it).
    assert!(
        fake.wait_for_requests(Endpoint::SendTyping, 2, PATIENCE)
            .await
    );
    let typing: Vec<i64> = fake.typing().iter().map(|t| t.status).collect();
    assert_eq!(typing.first(), Some(&1));
    assert_eq!(typing.last(), Some(&2));

    h.stop().await;
    assert_eq!(
        fake.notifies(),
        [Endpoint::NotifyStart, Endpoint::NotifyStop],
        "notifystart before polling, notifystop on shutdown"
    );
}

#[tokio::test]
async fn an_answer_never_waits_for_wechat_to_answer_the_typing_sign() {
    // WeChat answers sends, typing and its ticket only after ten minutes: the answer still
    // reaches it, while the typing sign is still waiting for its ticket.
    let mut h = connected_with_wechat_answering_after_ten_minutes().await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "hello");
    let sent = fake.wait_for_sent(1, PATIENCE).await;
    assert_eq!(
        sent.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["echo: hello"]
    );
    // The sign goes out beside the turn (nothing orders it against the send) and waits for
    // its ticket: the client does not give up on it (its timeout is what an answer waiting
    // for the sign would have waited).
    assert!(
        fake.wait_for_answers_waiting(Endpoint::GetConfig, 1, PATIENCE)
            .await,
        "the sign asked for its ticket"
    );
    assert_eq!(fake.answers_waiting(Endpoint::GetConfig), 1);
    assert!(fake.typing().is_empty(), "no sign was shown yet");
    // The send's answer is still held too: let it come, or the stop waits out its grace.
    fake.stop_delaying_answers();
    h.stop().await;
}

#[tokio::test]
async fn shutdown_aborts_the_held_poll_at_once() {
    let fake_config = FakeConfig {
        hold: Duration::from_secs(30),
        ..FakeConfig::default()
    };
    let mut h = Harness::new(fake_config, "").await;
    h.start().await;
    let fake = h.fake.handle();
    // Nothing is queued, so the first poll is held for 30 s.
    assert!(
        fake.wait_for_requests(Endpoint::GetUpdates, 1, PATIENCE)
            .await
    );
    let started = std::time::Instant::now();
    h.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "stop did not wait for the 30 s hold: {:?}",
        started.elapsed()
    );
    assert_eq!(fake.notifies().last(), Some(&Endpoint::NotifyStop));
}

#[tokio::test]
async fn a_restart_resumes_from_the_saved_cursor_losing_and_repeating_nothing() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "one");
    assert_eq!(h.wait_sent(1).await, ["echo: one"]);
    // Stopped while its next poll, carrying the cursor past "one", is held (that poll may leave
    // after the answer: the turn goes first).
    assert!(
        fake.wait_for_requests(Endpoint::GetUpdates, 2, PATIENCE)
            .await,
        "no second poll"
    );
    h.stop().await;
    let polls_before = fake.requests_to(Endpoint::GetUpdates).len();
    let last_cursor = fake
        .requests_to(Endpoint::GetUpdates)
        .last()
        .and_then(|r| r.cursor.clone())
        .expect("a cursor was sent");
    assert!(!last_cursor.is_empty());

    // Written while the daemon is down.
    fake.push_text(OWNER, "two");
    h.start().await;
    assert_eq!(h.wait_sent(2).await, ["echo: one", "echo: two"]);
    let first_after = fake.requests_to(Endpoint::GetUpdates)[polls_before]
        .cursor
        .clone();
    assert_eq!(first_after.as_deref(), Some(last_cursor.as_str()));
    // Nothing more arrives: the first poll after the restart used the saved cursor, so a repeat
    // of "one" would have come in the batch with "two", and is journaled by now; the barrier
    // waits for whatever that batch started.
    h.settle().await;
    assert_eq!(fake.sent().len(), 2);
    assert_eq!((h.agent.turns("one"), h.agent.turns("two")), (1, 1));
    h.stop().await;
}

#[tokio::test]
async fn duplicate_deliveries_are_answered_once() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    let fake = h.fake.handle();
    let first = fake.push_text(OWNER, "dup");
    let id = first.message_id.expect("id");
    fake.redeliver(id, false).expect("same id");
    fake.redeliver(id, true).expect("new id");
    // A copy after the batch was taken, too.
    assert_eq!(h.wait_sent(1).await, ["echo: dup"]);
    fake.redeliver(id, true).expect("late copy");
    fake.push_text(OWNER, "after");
    let texts = h.wait_sent(2).await;
    assert_eq!(texts, ["echo: dup", "echo: after"]);
    assert_eq!(h.agent.turns("dup"), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_storm_of_gateway_errors_backs_off_and_recovers() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.policy = quick_policy();
    let fake = h.fake.handle();
    fake.inject(Endpoint::GetUpdates, Fault::Status(502));
    fake.inject(Endpoint::GetUpdates, Fault::Status(524));
    fake.inject(Endpoint::GetUpdates, Fault::Reset);
    fake.inject(Endpoint::GetUpdates, Fault::Status(500));
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    assert!(
        fake.requests_to(Endpoint::GetUpdates).len() >= 5,
        "four failed polls, then one that worked"
    );
    let s = h.status().await;
    assert_eq!(
        s.restarts, 0,
        "attempts that never connected are not restarts"
    );
    assert_eq!(s.error, None);
    fake.push_text(OWNER, "still there?");
    assert_eq!(h.wait_sent(1).await, ["echo: still there?"]);
    h.stop().await;
}

#[tokio::test]
async fn a_stranger_gets_nothing_under_senders_owner() {
    let mut h = Harness::new(FakeConfig::default(), "senders = \"owner\"\n").await;
    h.start().await;
    let fake = h.fake.handle();
    fake.push_text("stranger9@im.wechat", "hi, who are you?");
    fake.push_text(OWNER, "marker");
    assert_eq!(h.wait_sent(1).await, ["echo: marker"]);
    // The stranger wrote first, so their message was journaled no later than the marker.
    h.settle().await;
    assert!(fake.sent().iter().all(|m| m.to_user == OWNER));
    assert!(fake.typing().iter().all(|t| t.user == OWNER));
    assert_eq!(h.agent.turns("hi, who are you?"), 0);
    h.stop().await;
}

#[tokio::test]
async fn a_long_reply_arrives_as_ordered_chunks_within_the_limit() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "long 20");
    h.wait_sent(1).await;
    // Every piece of the one answer is in the outbox; the barrier waits until the last is sent.
    h.settle().await;
    let texts: Vec<String> = fake.sent().into_iter().map(|m| m.text).collect();
    assert!(texts.len() >= 3, "20 × 300 characters need 3+ messages");
    assert!(texts.iter().all(|t| t.chars().count() <= 2000));
    let joined = texts.join("\n\n");
    assert_eq!(joined, long_answer(20), "every paragraph, in order");
    h.stop().await;
}

#[tokio::test]
async fn a_refused_send_pauses_the_account_and_resumes_without_a_burst() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let fake = h.fake.handle();
    fake.inject(Endpoint::SendMessage, Fault::ret(-2));
    let started = std::time::Instant::now();
    fake.push_text(OWNER, "a");
    h.wait_health("the hold is reported", |s| {
        s.state == ComponentState::Connected
            && s.error.as_deref().is_some_and(|e| {
                e.starts_with(
                    "sends failing: WeChat refused a send (throttled, or the send window is used up); 1 waiting; retry in ",
                )
            })
    })
    .await;
    fake.push_text(OWNER, "b");
    assert_eq!(h.wait_sent(2).await, ["echo: a", "echo: b"]);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the hold was honoured"
    );
    // One refused request, then one per message: nothing retried into the hold.
    assert_eq!(fake.requests_to(Endpoint::SendMessage).len(), 3);
    h.wait_health("the note clears", |s| s.error.is_none())
        .await;
    h.stop().await;
}

#[tokio::test]
async fn a_proactive_message_waits_for_the_owner_and_says_why() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let account = AccountKey::new(Channel::Wechat, "phone");
    h.conversation()
        .send_proactive(&account, &ChatId::new(OWNER), "digest ready", None, "p1")
        .await
        .expect("queued");
    h.wait_health("the waiting note", |s| {
        s.error.as_deref()
            == Some("1 message waits: WeChat lets the bot write only after the owner writes; send the bot any message")
    })
    .await;
    let fake = h.fake.handle();
    // The poll loop keeps the note while connected.
    let polls = fake.requests_to(Endpoint::GetUpdates).len();
    assert!(
        fake.wait_for_requests(Endpoint::GetUpdates, polls + 2, PATIENCE)
            .await
    );
    let s = h.status().await;
    assert_eq!(s.state, ComponentState::Connected);
    assert!(
        s.error
            .is_some_and(|e| e.contains("send the bot any message"))
    );
    assert!(fake.requests_to(Endpoint::SendMessage).is_empty());
    assert_eq!(
        h.conversation().delivery_state("p1").await.expect("state"),
        Some(scv_bridge::ids::DeliveryState::Pending)
    );

    fake.push_text(OWNER, "hi");
    assert_eq!(h.wait_sent(2).await, ["digest ready", "echo: hi"]);
    h.wait_health("the note clears", |s| s.error.is_none())
        .await;
    h.stop().await;
}

#[tokio::test]
async fn a_poll_that_outlasts_its_timeout_shows_disconnected_with_the_reason() {
    // The server suggests 100 ms holds; with a 100 ms margin a poll is unanswered at 200 ms.
    let fake_config = FakeConfig {
        hold: Duration::from_millis(20),
        suggested_hold_ms: Some(100),
        ..FakeConfig::default()
    };
    let mut h = Harness::new(fake_config, "").await;
    h.tuning = Some(scv_bridge::adapters::wechat::Tuning {
        poll_margin: Duration::from_millis(100),
        ..fast_tuning()
    });
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let fake = h.fake.handle();
    // Polls now hang far past the client's timeout.
    fake.set_hold(Duration::from_secs(30));
    h.wait_health("the hanging poll is reported", |s| {
        s.state == ComponentState::Disconnected
            && s.error
                .as_deref()
                .is_some_and(|e| e.contains("WeChat did not answer the long poll within 0.2 s"))
    })
    .await;
    // It polls again at once; the first answered poll is `connected` again, the reason gone.
    fake.set_hold(Duration::from_millis(20));
    h.wait_health("connected again", |s| {
        s.state == ComponentState::Connected && s.error.is_none()
    })
    .await;
    h.stop().await;
}

#[tokio::test]
async fn a_restart_mid_send_never_sends_the_item_again() {
    // WeChat takes the answer at once and replies only when the test says; meanwhile a
    // person's `channel set` restarts the account. The new run's sender must wait for the old
    // one's send to be stored rather than take the same item.
    let mut h = connected_with_wechat_answering_after_ten_minutes().await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "hello");
    assert!(
        fake.wait_for_answers_waiting(Endpoint::SendMessage, 1, PATIENCE)
            .await
    );
    let restart = DaemonCommand::ChannelSet {
        channel: "wechat".into(),
        account: "phone".into(),
        enabled: None,
        workspace: None,
        remote_tools: None,
        senders: None,
        purpose: None,
    };
    let s = scv_bridge::client::request(&h.socket(), restart)
        .await
        .expect("channel set");
    assert_eq!(s.reload.map(|r| r.restarted), Some(vec![ID.to_string()]));
    h.wait_state(ComponentState::Connected).await;
    fake.stop_delaying_answers();
    h.settle().await;
    assert_eq!(
        fake.requests_to(Endpoint::SendMessage).len(),
        1,
        "{:?}",
        fake.rejected()
    );
    assert_eq!(h.wait_sent(1).await, ["echo: hello"]);
    h.stop().await;
}

/// A connected daemon whose WeChat carries out sends, typing and its ticket on arrival but
/// answers them only after ten minutes (or once the test calls `stop_delaying_answers`).
async fn connected_with_wechat_answering_after_ten_minutes() -> Harness {
    let fake_config = FakeConfig {
        answer_delay: Duration::from_secs(600),
        ..FakeConfig::default()
    };
    let mut h = Harness::new(fake_config, "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    h
}
