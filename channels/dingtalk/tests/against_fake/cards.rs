//! AI cards: create, stream, finish; the card callback answered in the ACK; every refusal.

use std::time::Duration;

use scv_dingtalk::callback::card_update;
use scv_dingtalk::card::{AnswerCard, CardSpace, CardTemplate, new_id};
use scv_dingtalk::fake::{FakeConfig, Fault};
use scv_dingtalk::stream::{AckReply, Inbound};
use scv_dingtalk::{Call, Error, ErrorClass, NotSent};
use serde_json::json;

use crate::{OWNER, PROMPTLY, Running, start};

fn template() -> CardTemplate {
    CardTemplate {
        template_id: FakeConfig::default().card_templates[0].0.clone(),
        content_key: "content".into(),
    }
}

fn owner() -> CardSpace {
    CardSpace::Direct {
        staff_id: OWNER.into(),
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_streams_into_a_card_and_finishes_it() {
    let (fake, client) = start().await;
    let mut card = AnswerCard::start(&client, &template(), &owner())
        .await
        .expect("delivered");
    let id = card.out_track_id().to_string();
    let rec = fake.card(&id).expect("created");
    assert_eq!(rec.open_space_id, format!("dtv1.card//IM_ROBOT.{OWNER}"));
    assert_eq!(rec.params["flowStatus"], "1");
    card.update("First para").await.unwrap();
    card.update("First para\n\nSecond").await.unwrap();
    card.finish("First para\n\nSecond, done.", false)
        .await
        .unwrap();
    let rec = fake.card(&id).unwrap();
    assert_eq!(rec.streamed["content"], "First para\n\nSecond, done.");
    assert!(rec.finalized && !rec.reopened);
    assert_eq!(rec.stream_calls, 3);
    assert_eq!(rec.params["flowStatus"], "3");
    // Streaming into a finished card would reopen it: refused locally.
    let e = card.update("more").await.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected);
    assert_eq!(fake.card(&id).unwrap().stream_calls, 3);
    // After a restart the journaled id finishes the card.
    let other = AnswerCard::start(&client, &template(), &owner())
        .await
        .unwrap();
    let journaled = other.out_track_id().to_string();
    let mut resumed = AnswerCard::resume(&client, &template(), journaled.clone());
    resumed.finish("recovered", true).await.unwrap();
    assert_eq!(fake.card(&journaled).unwrap().params["flowStatus"], "5");
}

#[tokio::test(start_paused = true)]
async fn card_refusals_degrade_to_markdown() {
    let (fake, client) = start().await;
    let t = template();
    // Not delivered though HTTP 200.
    fake.fail_next(Call::CardCreate, Fault::NotDelivered);
    let e = AnswerCard::start(&client, &t, &owner()).await.unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotSent {
                reason: NotSent::CardRefused { .. },
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.class(), ErrorClass::Rejected);
    assert!(e.card_should_degrade());
    // Missing permission: fatal for cards, degrade.
    fake.fail_next(
        Call::CardCreate,
        Fault::missing_scope("Card.Instance.Write"),
    );
    let e = AnswerCard::start(&client, &t, &owner()).await.unwrap_err();
    assert!(e.card_should_degrade(), "{e}");
}

#[tokio::test(start_paused = true)]
async fn bad_cards_are_rejected() {
    let (fake, client) = start().await;
    let t = template();
    // Unknown template, unknown space, duplicate outTrackId, oversized value.
    let bad = CardTemplate {
        template_id: "nope.schema".into(),
        ..t.clone()
    };
    let e = AnswerCard::start(&client, &bad, &owner())
        .await
        .unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");
    let stranger = CardSpace::Group {
        open_conversation_id: "cidNotMine==".into(),
    };
    let e = AnswerCard::start(&client, &t, &stranger).await.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");
    let id = new_id("dup-");
    client
        .create_card(&t.template_id, &id, &owner(), &[("content", "")])
        .await
        .unwrap();
    let e = client
        .create_card(&t.template_id, &id, &owner(), &[("content", "")])
        .await
        .unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");
    let e = client
        .create_card(
            &t.template_id,
            &new_id("x"),
            &owner(),
            &[("content", &"x".repeat(1025))],
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    assert_eq!(fake.cards().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn streaming_refusals() {
    let (fake, client) = start().await;
    let t = template();
    let id = new_id("s-");
    client
        .create_card(&t.template_id, &id, &owner(), &[("content", "")])
        .await
        .unwrap();
    // Streaming: unknown card (200 success:false), unknown key, QPS.
    let e = client
        .stream_card("never-created", "content", "x", false, false)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotSent { .. }), "{e}");
    let e = client
        .stream_card(&id, "not_a_variable", "x", false, false)
        .await
        .unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");
    fake.fail_next(Call::CardStream, Fault::qps());
    let e = client
        .stream_card(&id, "content", "x", false, false)
        .await
        .unwrap_err();
    assert_eq!(e.class(), ErrorClass::SlowDown(Duration::from_secs(1)));
    assert!(e.card_should_degrade());
    // Quota spent: card updates are refused and degrade.
    fake.set_quota(Some(0));
    let e = client
        .stream_card(&id, "content", "y", false, false)
        .await
        .unwrap_err();
    assert!(e.card_should_degrade(), "{e}");
}

#[tokio::test(start_paused = true)]
async fn the_fake_treats_a_replayed_guid_as_a_no_op() {
    let (fake, client) = start().await;
    let t = template();
    let id = new_id("g-");
    client
        .create_card(&t.template_id, &id, &owner(), &[("content", "")])
        .await
        .unwrap();
    let token = fake.current_token().unwrap();
    let body = json!({"outTrackId": id, "guid": "same-guid", "key": "content", "content": "v1",
                      "isFull": true, "isFinalize": false, "isError": false});
    let http = reqwest::Client::new();
    for content in ["v1", "v2"] {
        let mut b = body.clone();
        b["content"] = json!(content);
        let r = http
            .put(format!("{}/v1.0/card/streaming", fake.base_url()))
            .header("x-acs-dingtalk-access-token", &token)
            .json(&b)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let rec = fake.card(&id).unwrap();
    assert_eq!(
        (rec.stream_calls, rec.streamed["content"].as_str()),
        (1, Some("v1"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_card_press_is_answered_in_its_ack_and_updates_the_card() {
    let mut r = Running::start(FakeConfig::default()).await;
    let t = template();
    let id = new_id("q-");
    r.client
        .create_card(&t.template_id, &id, &owner(), &[("content", "Deploy?")])
        .await
        .unwrap();
    r.fake.click_card(&id, OWNER, json!({"answer": "yes"}));
    let d = r.next().await;
    let Ok(Inbound::CardCallback(click)) = d.parse() else {
        panic!("not a card press")
    };
    assert_eq!(click.out_track_id, id);
    assert_eq!(click.owner_key().unwrap().staff_id, OWNER);
    assert_eq!(click.params()["answer"], "yes");
    d.ack
        .ack(AckReply::Card(card_update(&[("answered", "yes")])))
        .unwrap();
    assert!(
        r.fake
            .wait_until(PROMPTLY, |f| f
                .card(&id)
                .is_some_and(|c| c.params.contains_key("answered")))
            .await
    );
    // A stranger's press arrives too; the owner check is the caller's and sees a different key.
    r.fake.click_card(&id, "staff0002", json!({"answer": "no"}));
    let d = r.next().await;
    let Ok(Inbound::CardCallback(other)) = d.parse() else {
        panic!()
    };
    assert_ne!(other.owner_key().unwrap().staff_id, OWNER);
    d.ack.ack(AckReply::Done).unwrap();
    r.stop().await.unwrap();
}
