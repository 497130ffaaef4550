//! Answers streamed into AI cards against the fake: with a card template configured, a long
//! answer fills one card while the model writes and ends finished with the whole answer and no
//! other message; a refused card sends the answer whole and says so in status.

use std::sync::Arc;

use scv_bridge::protocol::NoteSource;
use scv_dingtalk::Call;
use scv_dingtalk::fake::Fault;

use super::support::*;
use crate::stream_support::{PartsAgent, answer};

/// Parts the agent writes the answer in (about 400 characters each).
const PARTS: usize = 5;

fn carded(agent: Arc<PartsAgent>) -> Setup {
    let mut setup = Setup::owned();
    setup
        .table
        .push_str("card_template_id = \"fake-ai-card.schema\"\n");
    setup.turns = Some(agent);
    setup
}

#[tokio::test]
async fn a_long_answer_fills_one_card_and_ends_finished_with_the_whole_answer() {
    let agent = PartsAgent::new(answer(), PARTS);
    let h = Harness::start(carded(agent.clone())).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "write a lot");
    agent.next_part();
    h.until("the card", |f| !f.cards().is_empty()).await;
    for k in 1..PARTS {
        agent.next_part();
        h.until("the next update", |f| f.cards()[0].stream_calls >= k)
            .await;
    }
    assert!(!h.fake.cards()[0].finalized, "open while the model writes");
    agent.next_part();
    h.until("the finished card", |f| f.cards()[0].finalized)
        .await;
    h.acked_and_settled(&pushed.push.message_id).await;
    let card = h.fake.cards().remove(0);
    assert_eq!(card.streamed["content"], answer(), "the whole answer, once");
    assert_eq!(card.params["flowStatus"], "3", "marked finished");
    assert!(!card.reopened, "nothing streamed after the finish");
    assert!(
        card.open_space_id.contains(&owner),
        "{}",
        card.open_space_id
    );
    assert!(
        h.fake.sent().is_empty(),
        "the card is the only message: {:?}",
        h.texts()
    );
    h.stop().await;
}

#[tokio::test]
async fn a_refused_card_sends_the_answer_whole_and_says_so() {
    let agent = PartsAgent::new(answer(), PARTS);
    let h = Harness::start(carded(agent.clone())).await;
    h.connected().await;
    h.fake.fail_next(Call::CardCreate, Fault::NotDelivered);
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "write a lot");
    agent.next_part();
    h.until("the refused card", |f| f.calls(Call::CardCreate) == 1)
        .await;
    for _ in 0..PARTS {
        agent.next_part();
    }
    h.until("the answer as markdown", |f| !f.sent().is_empty())
        .await;
    h.acked_and_settled(&pushed.push.message_id).await;
    let joined: String = h.texts().concat();
    for i in 0..10 {
        assert_eq!(joined.matches(&format!("[p{i:03}]")).count(), 1, "{joined}");
    }
    let note = h
        .health()
        .notes
        .iter()
        .find(|n| n.source == NoteSource::Cards)
        .map(|n| n.text.clone())
        .unwrap_or_default();
    assert!(
        note.contains("answers go whole for 30 min"),
        "{:?}",
        h.health()
    );
    assert!(h.fake.cards().is_empty());
    h.stop().await;
}

#[tokio::test]
async fn a_restart_mid_answer_finishes_the_same_card() {
    let agent = PartsAgent::new(answer(), PARTS);
    let h = Harness::start(carded(agent.clone())).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    h.fake.push_text(&owner, "write a lot");
    agent.next_part();
    h.until("the card", |f| !f.cards().is_empty()).await;
    agent.next_part();
    h.until("an update", |f| f.cards()[0].stream_calls >= 1)
        .await;
    // Stopped mid-answer: the turn is asked again at the next start (it writes all at once).
    let test_agent = h.agent.clone();
    let (fake, dir, config) = h.stop().await;
    let h = Harness::start_daemon(fake, dir, config, test_agent, agent.clone()).await;
    h.until("the finished card", |f| {
        f.cards().first().is_some_and(|c| c.finalized)
    })
    .await;
    let quiet = tokio::time::timeout(WAIT, h.conversation.quiescent()).await;
    assert!(quiet.is_ok());
    let cards = h.fake.cards();
    assert_eq!(cards.len(), 1, "the same card, not a second one");
    assert_eq!(cards[0].streamed["content"], answer());
    assert!(!cards[0].reopened);
    assert!(
        h.fake.sent().is_empty(),
        "no message besides the card: {:?}",
        h.texts()
    );
    h.stop().await;
}
