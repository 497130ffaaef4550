//! Yes/no cards: sent as proactive cards, clicked by the owner or a stranger.

use crate::feishu_support;

use std::sync::Arc;

use feishu_support::*;
use scv_bridge::conversation::body::Question;
use scv_bridge::conversation::{Body, ChatId};
use scv_bridge::protocol::ComponentState;
use scv_feishu::frame::FrameType;
use serde_json::{Value, json};

/// The decoded response in the ACK of the click pushed as `event_id`.
fn response_to(h: &Harness, event_id: &str) -> Option<Value> {
    h.fake
        .acks()
        .into_iter()
        .find(|a| a.event_id.as_deref() == Some(event_id))
        .and_then(|a| a.data)
}

fn buttons(card: &Value) -> usize {
    card.to_string().matches("\"button\"").count()
}

#[tokio::test]
async fn owner_click_answers_stranger_click_changes_nothing() {
    let questions = Arc::new(Questions::default());
    let mut setup = Setup::owned();
    setup.cards = Some(questions.clone());
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;

    // A proactive card, as the confirm feature will queue it.
    let card = Body::Question(Question {
        id: "q1".into(),
        text: "Deploy now?".into(),
        code: "7F".into(),
        deadline: "14:30".into(),
        buttons: true,
    });
    h.conversation
        .send_proactive(
            &h.key(),
            &ChatId::new(p2p_chat(OWNER)),
            "Deploy now? (answer with the buttons)",
            Some(&card),
            "confirm/q1",
        )
        .await
        .expect("queued");
    h.until("the card", |f| !f.sent().is_empty()).await;
    let sent = h.fake.sent().remove(0);
    assert_eq!(sent.msg_type, "interactive");
    assert_eq!(sent.chat_id, p2p_chat(OWNER));
    let card_id = sent.message_id.clone();
    assert_eq!(
        buttons(&h.fake.message_content(&card_id).expect("stored")),
        2
    );

    // A stranger: an error toast, the card unchanged, the handler never asked.
    let yes = json!({"q": "q1", "a": "yes"});
    let click = h
        .fake
        .push_card_click("ou_stranger", &card_id, yes.clone(), FrameType::Event);
    h.until("the stranger's answer", |_| {
        response_to(&h, &click.event_id).is_some()
    })
    .await;
    let r = response_to(&h, &click.event_id).expect("response");
    assert_eq!(r["toast"]["type"], "error", "{r}");
    assert!(r.get("card").is_none());
    assert_eq!(
        buttons(&h.fake.message_content(&card_id).expect("stored")),
        2
    );
    assert!(questions.clicks.lock().expect("lock").is_empty());

    // The owner, delivered as a `type=card` frame: recorded, the card loses its buttons.
    let click = h
        .fake
        .push_card_click(OWNER, &card_id, yes.clone(), FrameType::Card);
    h.until("the owner's answer", |_| {
        response_to(&h, &click.event_id).is_some()
    })
    .await;
    let r = response_to(&h, &click.event_id).expect("response");
    assert_eq!(r["toast"]["type"], "success", "{r}");
    let now = h.fake.message_content(&card_id).expect("stored");
    assert_eq!(buttons(&now), 0, "{now}");
    assert!(
        now.to_string().contains("Approved by you at 14:03"),
        "{now}"
    );
    {
        let clicks = questions.clicks.lock().expect("lock");
        assert_eq!(clicks.len(), 1);
        assert_eq!(
            (clicks[0].question_id.as_str(), clicks[0].operator.as_str()),
            ("q1", OWNER)
        );
        assert_eq!(clicks[0].message_id.as_deref(), Some(card_id.as_str()));
    }

    // A double click gets the same answer and is not handed over twice.
    let again = h
        .fake
        .push_card_click(OWNER, &card_id, yes, FrameType::Event);
    h.until("the repeat's answer", |_| {
        response_to(&h, &again.event_id).is_some()
    })
    .await;
    assert_eq!(response_to(&h, &again.event_id), Some(r));
    assert_eq!(questions.clicks.lock().expect("lock").len(), 1);
    assert_eq!(h.fake.in_flight(), 0);
    h.stop().await;
}

#[tokio::test]
async fn without_a_handler_questions_are_no_longer_open() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    let click = h.fake.push_card_click(
        OWNER,
        "om_unknown",
        json!({"q": "q9", "a": "no"}),
        FrameType::Event,
    );
    h.until("the answer", |_| response_to(&h, &click.event_id).is_some())
        .await;
    let r = response_to(&h, &click.event_id).expect("response");
    assert_eq!(r["toast"]["type"], "info");
    assert!(
        r["toast"]["content"]
            .as_str()
            .is_some_and(|t| t.contains("no longer open"))
    );
    h.stop().await;
}
