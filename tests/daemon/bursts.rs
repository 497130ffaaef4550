//! Bursts and absences over the WeChat fake (issue 47): messages sent while a slow turn runs
//! are answered together by one further turn that sees them all; `/stop` during a burst
//! cancels at once; a message that waited through an outage gets the away note.

use std::time::Duration;

use scv_bridge::config::{AccountKey, Channel};
use scv_wechat::fake::FakeConfig;
use scv_wechat::message::{MessageItem, WeixinMessage};

use crate::agents_chosen::Recorder;
use crate::wechat_support::*;

/// Waits until the pipeline has journaled `n` messages of the account, woken by the fake's
/// changes (each poll it answers); the short timeout only re-checks the count.
async fn journaled(h: &Harness, n: u64) {
    let account = AccountKey::new(Channel::Wechat, "phone");
    let conv = h.conversation();
    within(
        async {
            while conv.stats().get(&account, "received") < n {
                let changed = h.fake.handle().changed();
                let _ = tokio::time::timeout(Duration::from_millis(20), changed).await;
            }
        },
        "the messages to be journaled",
    )
    .await;
}

async fn started_with(agent: std::sync::Arc<Recorder>) -> Harness {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.agent_override = Some(agent);
    h.start().await;
    h
}

#[tokio::test]
async fn three_messages_during_a_slow_turn_get_one_answer_that_saw_all_three() {
    let agent = Recorder::new("rec");
    let h = started_with(agent.clone()).await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "slow start");
    within(agent.started.notified(), "the slow turn to start").await;
    for text in ["one", "two", "three"] {
        fake.push_text(OWNER, text);
    }
    journaled(&h, 4).await;
    agent.release.notify_one();
    let sent = h.wait_sent(2).await;
    h.settle().await;
    let prompts: Vec<String> = agent.seen().into_iter().map(|(p, _)| p).collect();
    assert_eq!(prompts, ["slow start", "one\n\ntwo\n\nthree"]);
    assert_eq!(sent, ["rec: slow start", "rec: one\n\ntwo\n\nthree"]);
    assert_eq!(h.fake.handle().sent().len(), 2, "one answer for the burst");
}

#[tokio::test]
async fn stop_during_a_burst_cancels_at_once_and_drops_what_waited() {
    let agent = Recorder::new("rec");
    let h = started_with(agent.clone()).await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "slow work");
    within(agent.started.notified(), "the slow turn to start").await;
    fake.push_text(OWNER, "more");
    fake.push_text(OWNER, "and more");
    journaled(&h, 3).await;
    // Never released: only the cancel can end the turn.
    fake.push_text(OWNER, "/stop");
    within(agent.cancelled.notified(), "the turn to be cancelled").await;
    let sent = h.wait_sent(1).await;
    assert_eq!(
        sent,
        ["Stopped. 2 messages sent before /stop will not be answered."]
    );
    h.settle().await;
    assert_eq!(agent.seen().len(), 1, "the burst was not answered");
    assert_eq!(agent.cancels(), 1);
    fake.push_text(OWNER, "after");
    assert_eq!(h.wait_sent(2).await[1], "rec: after");
}

#[tokio::test]
async fn a_message_that_waited_through_an_outage_is_answered_with_the_note() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    let fake = h.fake.handle();
    // The bridge is down; the owner's messages wait at the platform for an hour.
    let hour_ago = scv_bridge::clock::wall_ms() as i64 - 3_600_000;
    let old = |text: &str| WeixinMessage {
        from_user_id: OWNER.to_string(),
        create_time_ms: Some(hour_ago),
        item_list: vec![MessageItem::text(text)],
        ..Default::default()
    };
    fake.push_message(old("are you there?"));
    h.start().await;
    let sent = h.wait_sent(1).await;
    assert!(
        sent[0].contains("sent while the bridge was away, more than 10 minutes ago"),
        "{sent:?}"
    );
    // In the chat's language.
    fake.push_message(old("你还在吗？"));
    let sent = h.wait_sent(2).await;
    assert!(sent[1].contains("桥接程序离线期间发送"), "{sent:?}");
    fake.push_text(OWNER, "now");
    assert_eq!(h.wait_sent(3).await[2], "echo: now");
    h.settle().await;
    assert_eq!(h.agent.turns("are you there?"), 0, "never asked as if new");
    assert_eq!(h.agent.turns("你还在吗？"), 0);
    h.stop().await;
}

#[tokio::test]
async fn merge_ms_waits_after_a_first_message_for_the_rest_of_its_burst() {
    let agent = Recorder::new("rec");
    let mut h = Harness::new(FakeConfig::default(), "[chats]\nmerge_ms = 300\n").await;
    h.agent_override = Some(agent.clone());
    h.start().await;
    let fake = h.fake.handle();
    // Sent together while the chat is quiet: without merge_ms each is a turn of its own.
    fake.push_text(OWNER, "first");
    fake.push_text(OWNER, "second");
    assert_eq!(h.wait_sent(1).await, ["rec: first\n\nsecond"]);
    h.settle().await;
    assert_eq!(agent.seen().len(), 1);
    assert_eq!(h.fake.handle().sent().len(), 1);
    h.stop().await;
}
