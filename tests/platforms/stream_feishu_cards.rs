//! Long answers on Feishu fill in a CardKit card while the model writes, against the strict
//! fake: one card, content updates of strictly increasing sequence, the final text equal to
//! the answer; a card that can no longer be updated ends with the rest as a new message; a
//! short answer stays a plain message; a restart mid-answer finishes the same card.

use crate::stream_support;

use std::sync::Arc;

use scv_bridge::protocol::NoteSource;
use scv_feishu::cardkit::ANSWER_ELEMENT;
use stream_support::*;

/// Parts the agent writes the answer in (about 400 characters each).
const PARTS: usize = 5;

/// The owner asked for a long answer, and its first part went out as a card.
async fn first_part_in_a_card() -> (Arc<PartsAgent>, Harness) {
    let agent = PartsAgent::new(answer(), PARTS);
    let h = Harness::start(agent.clone()).await;
    h.fake.push_p2p_text(OWNER, "write a lot");
    agent.next_part();
    h.until("the card sent", |f| {
        f.cards().first().is_some_and(|c| c.message_id.is_some())
    })
    .await;
    (agent, h)
}

#[tokio::test]
async fn a_long_answer_fills_one_card_and_ends_with_the_whole_answer() {
    let (agent, h) = first_part_in_a_card().await;
    for k in 1..PARTS {
        agent.next_part();
        h.until("the next update", |f| f.cards()[0].updates.len() >= k)
            .await;
    }
    assert!(h.card().streaming, "still streaming while the model writes");
    agent.next_part();
    h.until("streaming closed", |f| {
        f.cards()[0].settings.last() == Some(&false)
    })
    .await;
    h.settle().await;

    let card = h.card();
    assert!(card.updates.len() >= 3, "{:?}", card.updates.len());
    assert!(strictly_increasing(&card.sequences), "{:?}", card.sequences);
    assert!(
        card.updates.iter().all(|u| u.typewriter),
        "each extends the last"
    );
    assert_eq!(
        card.text(ANSWER_ELEMENT).as_deref(),
        Some(answer().as_str())
    );
    assert!(!card.streaming);
    assert_eq!(h.fake.sent().len(), 1, "the card is the only message");
    assert!(h.plain_texts().is_empty());
    assert!(card.refused.is_empty(), "{:?}", card.refused);
    let mut h = h;
    h.down().await;
}

#[tokio::test]
async fn a_card_that_can_no_longer_be_updated_ends_with_the_rest_as_a_message() {
    let (agent, h) = first_part_in_a_card().await;
    for k in 1..3 {
        agent.next_part();
        h.until("the next update", |f| f.cards()[0].updates.len() >= k)
            .await;
    }
    // The card dies mid-answer (as one older than 14 days does: 200750 to everything).
    h.fake.expire_card(&h.card().card_id);
    for _ in 3..=PARTS {
        agent.next_part();
    }
    h.until("the rest as a new message", |f| f.sent().len() == 2)
        .await;
    h.settle().await;

    let card = h.card();
    assert!(card.refused.contains(&200750), "{:?}", card.refused);
    let mut texts = vec![card.text(ANSWER_ELEMENT).unwrap_or_default()];
    texts.extend(h.plain_texts());
    assert_eq!(tag_counts(&texts), vec![1; PARAGRAPHS], "{texts:?}");
    assert_eq!(non_blank(&texts.concat()), non_blank(&answer()));
    let mut h = h;
    h.down().await;
}

#[tokio::test]
async fn a_short_answer_stays_a_plain_message() {
    let agent = PartsAgent::new("Short answer.".into(), 1);
    let h = Harness::start(agent.clone()).await;
    h.fake.push_p2p_text(OWNER, "hi");
    agent.next_part();
    agent.next_part();
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    assert!(h.fake.cards().is_empty());
    assert_eq!(h.fake.cardkit_requests(), 0);
    assert_eq!(h.plain_texts(), ["Short answer."]);
    let mut h = h;
    h.down().await;
}

#[tokio::test]
async fn a_restart_mid_answer_finishes_the_same_card_with_nothing_doubled() {
    let (agent, mut h) = first_part_in_a_card().await;
    agent.next_part();
    h.until("an update", |f| !f.cards()[0].updates.is_empty())
        .await;
    // Down mid-answer: the turn is cancelled, the message stays unanswered in the journal.
    h.down().await;
    assert!(h.card().streaming);

    h.up().await;
    h.until("streaming closed", |f| {
        f.cards()[0].settings.last() == Some(&false)
    })
    .await;
    h.settle().await;
    assert_eq!(agent.runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    let card = h.card();
    assert!(
        strictly_increasing(&card.sequences),
        "no sequence reused after the restart: {:?}",
        card.sequences
    );
    assert_eq!(
        card.text(ANSWER_ELEMENT).as_deref(),
        Some(answer().as_str())
    );
    assert_eq!(h.fake.sent().len(), 1, "the card was not sent again");
    assert!(h.plain_texts().is_empty(), "{:?}", h.plain_texts());
    assert!(card.refused.is_empty(), "{:?}", card.refused);
    h.down().await;
}

#[tokio::test]
async fn a_mail_digest_goes_through_the_feishu_renderer() {
    let agent = PartsAgent::new(String::new(), 1);
    let h = Harness::start(agent).await;
    let digest = "# Mail digest\n\n- **Alice**: invoice_2024 ![logo](https://x.io/l.png)\n- 张三：会议改到周五";
    let conv = h.conversation.clone().expect("running");
    conv.outbox()
        .send_proactive(
            &scv_bridge::config::AccountKey::parse(ACCOUNT).expect("account"),
            &scv_bridge::conversation::ChatId::new(format!("oc_p2p_{OWNER}")),
            digest,
            None,
            "digest/1",
        )
        .await
        .expect("queued");
    h.until("the digest", |f| !f.sent().is_empty()).await;
    let sent = h.fake.sent();
    assert_eq!(sent[0].msg_type, "post", "markdown goes as a post");
    assert_eq!(
        h.plain_texts(),
        ["#### Mail digest\n\n- **Alice**: invoice_2024 \n- 张三：会议改到周五"],
        "H1 as H4, the URL image removed, the rest as written"
    );
    let mut h = h;
    h.down().await;
}

#[tokio::test]
async fn without_the_cardkit_scope_answers_go_out_whole_after_one_try() {
    let agent = PartsAgent::new(answer(), 1);
    let h = Harness::start(agent.clone()).await;
    h.fake.refuse_card_create(Some(99991672));
    h.fake.push_p2p_text(OWNER, "write a lot");
    agent.next_part();
    h.until("the refused create", |f| f.cardkit_requests() == 1)
        .await;
    agent.next_part();
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    // The next long answer does not try again within the run.
    h.fake.push_p2p_text(OWNER, "and more");
    h.until("the second answer", |f| f.sent().len() == 2).await;
    h.settle().await;
    assert_eq!(h.fake.cardkit_requests(), 1, "no failure loop");
    assert!(h.fake.cards().is_empty());
    // The owner sees why in status, not only in the log.
    let health = h
        .daemon
        .as_ref()
        .and_then(|d| d.core.registry().cell(ACCOUNT))
        .expect("the account's health")
        .get();
    let note = health
        .notes
        .iter()
        .find(|n| n.source == NoteSource::Cards)
        .unwrap_or_else(|| panic!("no cards note: {health:?}"));
    assert!(
        note.text.contains("99991672")
            && note.text.contains("answers go out whole for an hour")
            && note.text.contains("cardkit:card:write"),
        "{note:?}"
    );
    assert!(
        health
            .error
            .as_deref()
            .is_some_and(|e| e.contains("cardkit:card:write")),
        "status's line carries it: {health:?}"
    );
    let texts = h.plain_texts();
    assert_eq!(texts.len(), 2);
    assert!(texts.iter().all(|t| non_blank(t) == non_blank(&answer())));
    let mut h = h;
    h.down().await;
}

#[tokio::test]
async fn streaming_closed_by_someone_else_is_reopened_and_the_card_ends_whole() {
    let (agent, h) = first_part_in_a_card().await;
    h.fake.close_card_streaming(&h.card().card_id);
    for _ in 1..=PARTS {
        agent.next_part();
    }
    h.until("streaming closed at the end", |f| {
        f.cards()[0].settings.last() == Some(&false) && f.cards()[0].settings.len() >= 2
    })
    .await;
    h.settle().await;
    let card = h.card();
    assert!(card.refused.contains(&300309), "{:?}", card.refused);
    assert_eq!(card.settings.first(), Some(&true), "reopened");
    assert_eq!(
        card.text(ANSWER_ELEMENT).as_deref(),
        Some(answer().as_str())
    );
    assert!(strictly_increasing(&card.sequences));
    assert!(h.plain_texts().is_empty());
    let mut h = h;
    h.down().await;
}
