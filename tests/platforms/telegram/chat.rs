//! Text both ways: the round trip, rendering, splitting, pacing, who is answered.

use scv_bridge::protocol::ComponentState;
use scv_telegram::Method;

use super::support::*;

#[tokio::test]
async fn round_trip_in_html_and_strangers_get_nothing() {
    let mut setup = Setup::owned();
    setup.agent = TestAgent::answering(|p| format!("**{p}** <&> `x<y`"));
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let health = h.health();
    assert_eq!(health.bot_id.as_deref(), Some("5000000001"));
    assert_eq!(health.user_id, Some(h.fake.owner().id.to_string()));

    let owner = h.fake.owner_chat();
    h.fake.push_text(owner.clone(), "hello");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    let sent = h.fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].chat_id, owner.id);
    assert_eq!(sent[0].parse_mode.as_deref(), Some("HTML"));
    assert_eq!(
        sent[0].text, "<b>hello</b> &lt;&amp;&gt; <code>x&lt;y</code>",
        "escaped, and Markdown as tags the fake's HTML parser accepts"
    );
    assert_eq!(sent[0].reply_to, None, "private answers quote nothing");

    // A stranger gets nothing at all, but the update is confirmed and counted.
    let stranger = h.fake.stranger_chat(42);
    h.fake.push_text(stranger.clone(), "hi?");
    h.drain().await;
    assert!(h.texts_to(stranger.id).is_empty());
    assert_eq!(h.agent.prompts(), ["hello"], "never reached the agent");
    h.stop().await;
}

#[tokio::test]
async fn groups_are_answered_only_when_addressed_and_only_the_owner() {
    let mut setup = Setup::owned();
    // Privacy off: every group message reaches the bot, so the adapter's own filter is tested.
    setup.fake.can_read_all_group_messages = true;
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let group = h.fake.group(-100_200, "team");
    let owner = h.fake.owner();
    let push = |text: &str, entities: serde_json::Value| {
        h.fake.push_message(serde_json::json!({
            "chat": group, "from": owner, "text": text, "entities": entities
        }))
    };
    push("chatter among people", serde_json::json!([]));
    let cmd = push(
        "/help@scv_fake_bot",
        serde_json::json!([{"type": "bot_command", "offset": 0, "length": 18}]),
    );
    let mention = push(
        "@scv_fake_bot what time",
        serde_json::json!([{"type": "mention", "offset": 0, "length": 13}]),
    );
    h.until("two answers", |f| f.sent().len() >= 2).await;
    h.drain().await;
    let sent = h.fake.sent();
    assert_eq!(
        sent.len(),
        2,
        "{:?}",
        sent.iter().map(|s| &s.text).collect::<Vec<_>>()
    );
    assert!(sent.iter().all(|s| s.chat_id == group.id));
    assert_eq!(
        h.agent.prompts(),
        ["what time"],
        "the mention is taken out; /help is a command"
    );
    let quoted: Vec<Option<i64>> = sent.iter().map(|s| s.reply_to).collect();
    assert!(quoted.contains(&Some(mention.message_id)), "{quoted:?}");
    assert!(quoted.contains(&Some(cmd.message_id)), "{quoted:?}");
    h.stop().await;
}

#[tokio::test]
async fn a_long_answer_is_split_within_4096_utf16_units() {
    let mut setup = Setup::owned();
    // 3,000 characters, 6,000 UTF-16 units: one piece for the core, two for Telegram.
    let para = "😀".repeat(1500);
    let answer = format!("{para}\n\n{para}");
    let expect = answer.clone();
    setup.agent = TestAgent::answering(move |_| answer.clone());
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.push_text(h.fake.owner_chat(), "long please");
    h.until("both pieces", |f| f.sent().len() == 2).await;
    let texts = h.texts_to(h.fake.owner().id);
    assert!(texts.iter().all(|t| t.encode_utf16().count() <= 4096));
    assert_eq!(texts.join("\n\n"), expect, "nothing lost, nothing repeated");
    h.stop().await;
}

#[tokio::test]
async fn a_429_waits_exactly_retry_after_then_sends_once() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake
        .fail_next(Method::SendMessage, 429, "Too Many Requests: retry after 1");
    let t0 = std::time::Instant::now();
    h.fake.push_text(h.fake.owner_chat(), "ping");
    h.until("the answer", |f| f.sent().len() == 1).await;
    let waited = t0.elapsed();
    assert!(waited >= std::time::Duration::from_secs(1), "{waited:?}");
    assert!(
        waited < std::time::Duration::from_secs(5),
        "no backoff on top: {waited:?}"
    );
    assert_eq!(h.texts_to(h.fake.owner().id), ["echo: ping"]);
    h.stop().await;
}

/// A send Telegram may have taken without saying so (here a gateway's 502) is held, never
/// repeated: a note stands in its place, the owner's `/again` brings it once, and a second
/// `/again` is told there is nothing left. `/again` never reaches the agent.
#[tokio::test]
async fn a_send_in_doubt_is_held_with_a_note_and_again_brings_it_once() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    let owner = h.fake.owner_chat();
    let answers = |h: &Harness| {
        h.texts_to(owner.id)
            .iter()
            .filter(|t| *t == "echo: hello")
            .count()
    };
    h.fake.fail_next(Method::SendMessage, 502, "Bad Gateway");
    h.fake.push_text(owner.clone(), "hello");
    h.until("the note", |f| {
        f.sent().iter().any(|s| s.text.contains("/again"))
    })
    .await;
    let note = h.texts_to(owner.id).join("\n");
    assert!(note.contains("\"echo: hello\""), "quotes the reply: {note}");
    assert_eq!(answers(&h), 0, "the answer was not sent again on its own");

    h.fake.push_text(owner.clone(), "/again");
    h.until("the held answer", |f| {
        f.sent().iter().any(|s| s.text == "echo: hello")
    })
    .await;
    h.fake.push_text(owner.clone(), "/AGAIN");
    h.until("nothing left", |f| {
        f.sent()
            .iter()
            .any(|s| s.text.contains("Nothing is waiting"))
    })
    .await;
    h.drain().await;
    assert_eq!(answers(&h), 1);
    assert_eq!(
        h.agent.prompts(),
        ["hello"],
        "/again never reaches the agent"
    );
    h.stop().await;
}
