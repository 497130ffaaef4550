//! Streamed answers against the fake: drafts then one final message in a private chat, one
//! edited message in a group, edits when drafts are refused; the command menu on connect.

use std::time::Duration;

use scv_bridge::protocol::{ComponentState, NoteSource};
use scv_telegram::Method;

use super::support::*;

/// Parts the agent writes the answer in.
const PARTS: usize = 5;

/// A 2,000-character answer of ten paragraphs that renders to itself in HTML (no markup, no
/// characters to escape), so the fake's copy can be compared with it as it is.
fn answer() -> String {
    (0..10)
        .map(|i| {
            // 198 characters each, the last 200: 2,000 with the nine blank lines between.
            let len = if i == 9 { 200 } else { 198 };
            let head = format!("Paragraph {i} says");
            let fill = " word".repeat((len - head.len()) / 5);
            let p = format!("{head}{fill}");
            format!("{p}{}", ".".repeat(len - p.len()))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Owner-only, with an agent writing `answer()` in `PARTS` parts.
fn streaming_setup() -> Setup {
    let mut setup = Setup::owned();
    setup.agent = TestAgent::streaming(answer(), PARTS);
    setup
}

#[tokio::test]
async fn a_private_answer_streams_as_drafts_and_ends_as_one_message_equal_to_it() {
    assert_eq!(answer().chars().count(), 2_000);
    let h = Harness::start(streaming_setup()).await;
    h.wait_state(ComponentState::Connected).await;
    let owner = h.fake.owner_chat();
    h.fake.push_text(owner.clone(), "write a lot");
    for k in 1..=PARTS {
        h.agent.next_part();
        h.until("the next draft frame", |f| f.drafts().len() >= k)
            .await;
    }
    h.agent.next_part();
    h.until("the final message", |f| !f.sent().is_empty()).await;
    h.settle().await;

    let drafts = h.fake.drafts();
    let sent = h.fake.sent();
    println!(
        "private 2,000-character answer in {PARTS} parts: {} draft frames + {} sendMessage = {} calls",
        drafts.len(),
        sent.len(),
        drafts.len() + sent.len()
    );
    assert_eq!(h.texts_to(owner.id), [answer()], "ends equal to the answer");
    assert_eq!(sent.len(), 1, "one message: drafts never become messages");
    assert!(
        drafts.len() >= PARTS && drafts.len() <= PARTS + 1,
        "{}",
        drafts.len()
    );
    assert!(drafts.iter().all(|d| d.chat_id == owner.id));
    assert!(
        drafts.iter().all(|d| d.can_stop),
        "the owner is offered a stop button"
    );
    assert!(
        drafts.iter().all(|d| d.draft_id == drafts[0].draft_id),
        "one draft id per answer: the frames animate"
    );
    assert!(
        drafts.iter().all(|d| answer().starts_with(&d.text)),
        "each frame is the answer so far"
    );
    for pair in drafts.windows(2) {
        assert!(pair[1].text.len() > pair[0].text.len(), "no frame repeated");
        let gap = pair[1].at - pair[0].at;
        assert!(gap >= Duration::from_millis(900), "frames {gap:?} apart");
    }
    assert!(
        h.health()
            .notes
            .iter()
            .all(|n| n.source != NoteSource::Cards),
        "drafts were taken: no note"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_group_answer_streams_into_one_edited_message_at_the_groups_pace() {
    let mut setup = streaming_setup();
    setup.fake.can_read_all_group_messages = true;
    setup.agent = TestAgent::streaming(answer(), 3);
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let group = h.fake.group(-100_300, "team");
    let asked = h.fake.push_message(serde_json::json!({
        "chat": group, "from": h.fake.owner(), "text": "@scv_fake_bot write a lot",
        "entities": [{"type": "mention", "offset": 0, "length": 13}]
    }));
    h.agent.next_part();
    h.until("the answer's message", |f| !f.sent().is_empty())
        .await;
    let opened = h.fake.sent()[0].clone();
    assert_eq!(opened.chat_id, group.id);
    assert_eq!(
        opened.reply_to,
        Some(asked.message_id),
        "quotes the question"
    );
    h.agent.next_part();
    let first = opened.text.clone();
    h.until("an edit", |f| {
        f.message(group.id, opened.message_id)
            .is_some_and(|(t, _)| t.len() > first.len())
    })
    .await;
    h.agent.next_part();
    h.agent.next_part();
    h.until("the answer in full", |f| {
        f.message(group.id, opened.message_id)
            .is_some_and(|(t, _)| t == answer())
    })
    .await;
    h.settle().await;
    assert_eq!(
        h.fake.sent().len(),
        1,
        "one message, edited: nothing sent twice"
    );
    assert!(h.fake.drafts().is_empty(), "no drafts in groups");
    h.stop().await;
}

#[tokio::test]
async fn refused_drafts_are_noted_once_and_private_answers_stream_by_edits() {
    let h = Harness::start(streaming_setup()).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.fail_next(
        Method::SendMessageDraft,
        400,
        "Bad Request: method is not available",
    );
    let owner = h.fake.owner_chat();
    h.fake.push_text(owner.clone(), "write a lot");
    h.agent.next_part();
    h.until("the answer's message instead", |f| !f.sent().is_empty())
        .await;
    h.until_health("the note", |c| {
        c.notes.iter().any(|n| n.source == NoteSource::Cards)
    })
    .await;
    for _ in 1..=PARTS {
        h.agent.next_part();
    }
    let id = h.fake.sent()[0].message_id;
    h.until("the answer in full", |f| {
        f.message(owner.id, id).is_some_and(|(t, _)| t == answer())
    })
    .await;
    h.settle().await;
    assert_eq!(h.fake.sent().len(), 1, "the edited message is the answer");
    assert!(
        h.fake.drafts().is_empty(),
        "the refused draft was not retried"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_command_menu_is_set_on_connect_in_english_and_chinese() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.until("both menus", |f| {
        f.commands("").is_some() && f.commands("zh").is_some()
    })
    .await;
    let names = |lang: &str| -> Vec<(String, String)> {
        h.fake
            .commands(lang)
            .expect("set")
            .as_array()
            .expect("a list")
            .iter()
            .map(|c| {
                (
                    c["command"].as_str().unwrap_or_default().to_string(),
                    c["description"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let en = names("");
    let zh = names("zh");
    let commands: Vec<&str> = en.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(commands, ["new", "stop", "status", "help"]);
    assert_eq!(en[0].1, "Start a fresh conversation");
    assert_eq!(zh[0], ("new".to_string(), "开始新对话".to_string()));
    h.stop().await;
}

#[tokio::test]
async fn a_restart_mid_answer_finishes_the_same_group_message_with_nothing_doubled() {
    let mut setup = streaming_setup();
    setup.fake.can_read_all_group_messages = true;
    setup.agent = TestAgent::streaming(answer(), 3);
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let group = h.fake.group(-100_400, "team");
    h.fake.push_message(serde_json::json!({
        "chat": group, "from": h.fake.owner(), "text": "@scv_fake_bot write a lot",
        "entities": [{"type": "mention", "offset": 0, "length": 13}]
    }));
    h.agent.next_part();
    h.until("the answer's message", |f| !f.sent().is_empty())
        .await;
    let opened = h.fake.sent()[0].clone();
    // Down mid-answer: the turn is cancelled, the message stays unanswered in the journal.
    let agent = h.agent.clone();
    let presses = h.presses.clone();
    let (server, fake, dir, config) = h.stop().await;

    let h = Harness::start_daemon(server, fake, dir, config, agent, presses).await;
    h.wait_state(ComponentState::Connected).await;
    for _ in 0..4 {
        h.agent.next_part();
    }
    h.until("the same message showing the whole answer", |f| {
        f.message(group.id, opened.message_id)
            .is_some_and(|(t, _)| t == answer())
    })
    .await;
    h.settle().await;
    assert_eq!(h.agent.turns(), 2, "the turn ran again after the restart");
    assert_eq!(
        h.fake.sent().len(),
        1,
        "the restart edited the message it had opened: nothing sent twice"
    );
    h.stop().await;
}

/// The stop button a private draft offers stops the turn, as `/stop` does: the rest of the
/// answer is never written and the owner is told it stopped.
#[tokio::test]
async fn the_drafts_stop_button_stops_the_turn() {
    let h = Harness::start(streaming_setup()).await;
    h.wait_state(ComponentState::Connected).await;
    let owner = h.fake.owner_chat();
    h.fake.push_text(owner.clone(), "write a lot");
    h.agent.next_part();
    h.until("the first draft frame", |f| !f.drafts().is_empty())
        .await;
    let draft = h.fake.drafts()[0].draft_id;
    h.fake.press_stop(owner.clone(), draft);
    h.until("the stop answered", |f| {
        f.sent().iter().any(|s| s.text.contains("Stopped"))
    })
    .await;
    h.drain().await;
    assert!(
        !h.texts_to(owner.id).contains(&answer()),
        "the whole answer never came"
    );
    assert_eq!(h.agent.prompts(), ["write a lot"], "the stop is no prompt");
    h.stop().await;
}
