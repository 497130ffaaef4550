//! The thinking reaction (spec §4.8) against the fake: put on the owner's message while the
//! agent works, recalled once the answer is done, once per answer; a refused put costs the
//! answer nothing and is not retried; `thinking_reaction = false` puts none.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use scv_dingtalk::Call;
use scv_dingtalk::emotion::THINKING;
use scv_dingtalk::fake::Fault;

use super::support::*;
use crate::stream_support::PartsAgent;

/// The answer the agent writes, in one part.
const ANSWER: &str = "The answer.";

fn setup(agent: Arc<PartsAgent>, table: &str) -> Setup {
    let mut setup = Setup::owned();
    setup.table.push_str(table);
    setup.turns = Some(agent);
    setup
}

/// Lets the agent's first run write its one part and end.
fn finish(agent: &PartsAgent) {
    agent.next_part();
    agent.next_part();
}

#[tokio::test]
async fn the_owners_message_shows_thinking_while_the_agent_works_and_not_after() {
    let agent = PartsAgent::new(ANSWER.into(), 1);
    let h = Harness::start(setup(agent.clone(), "")).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "think about it");
    h.until("the thinking reaction", |f| !f.emotions().is_empty())
        .await;
    assert!(h.fake.sent().is_empty(), "shown while the agent works");
    let put = h.fake.emotions().remove(0);
    assert_eq!(
        (put.recall, put.msg_id.as_str(), put.name.as_str()),
        (false, pushed.msg_id.as_str(), THINKING)
    );
    assert!(!put.conversation_id.is_empty());
    finish(&agent);
    h.until("the answer and the recall", |f| {
        !f.sent().is_empty() && f.emotions().len() == 2
    })
    .await;
    h.acked_and_settled(&pushed.push.message_id).await;
    let recall = h.fake.emotions().remove(1);
    assert!(recall.recall, "{recall:?}");
    assert_eq!(
        (recall.msg_id, recall.conversation_id),
        (put.msg_id, put.conversation_id)
    );
    assert_eq!(h.texts(), [ANSWER]);
    assert_eq!(h.fake.calls(Call::Emotion), 2, "one put, one recall");
    h.stop().await;
}

#[tokio::test]
async fn a_refused_reaction_is_not_retried_and_the_answer_goes() {
    let agent = PartsAgent::new(ANSWER.into(), 1);
    let h = Harness::start(setup(agent.clone(), "")).await;
    h.connected().await;
    h.fake.fail_next(Call::Emotion, Fault::qps());
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "think about it");
    h.until("the refused put", |f| f.calls(Call::Emotion) == 1)
        .await;
    finish(&agent);
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.acked_and_settled(&pushed.push.message_id).await;
    assert_eq!(h.texts(), [ANSWER]);
    assert_eq!(
        h.fake.calls(Call::Emotion),
        1,
        "no retry, nothing to recall"
    );
    h.stop().await;
}

#[tokio::test]
async fn thinking_reaction_false_puts_none() {
    let agent = PartsAgent::new(ANSWER.into(), 1);
    let h = Harness::start(setup(agent.clone(), "thinking_reaction = false\n")).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "think about it");
    let runs = &agent.runs;
    h.until("the agent at work", |_| runs.load(Ordering::SeqCst) == 1)
        .await;
    // A sign would have been sent when the turn first waited, and is landed before the
    // answer's end is handled.
    finish(&agent);
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.acked_and_settled(&pushed.push.message_id).await;
    assert_eq!(h.fake.calls(Call::Emotion), 0);
    h.stop().await;
}
