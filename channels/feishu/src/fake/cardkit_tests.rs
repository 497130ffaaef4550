//! The fake's CardKit routes are as strict as the platform (media-and-streaming.md §5.4).

use std::time::Duration;

use serde_json::json;

use super::{FakeConfig, FakeFeishu};
use crate::cardkit::{ANSWER_ELEMENT, streaming_card};
use crate::error::Error;
use crate::rest::{Client, ClientOptions, MessageContent, ReceiveId};

async fn setup() -> (FakeFeishu, Client) {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let client =
        Client::new(ClientOptions::new(fake.domain(), fake.credentials())).expect("client");
    (fake, client)
}

fn code(r: Result<(), Error>) -> i64 {
    match r {
        Ok(()) => 0,
        Err(Error::Api { code, .. }) => code,
        Err(e) => panic!("not an API refusal: {e}"),
    }
}

#[tokio::test]
async fn sequences_strictly_increase_across_every_operation_and_closed_streaming_refuses() {
    let (fake, c) = setup().await;
    let id = c.create_card(&streaming_card("a")).await.expect("create");
    assert_eq!(
        code(c.put_card_content(&id, ANSWER_ELEMENT, "ab", 1).await),
        0
    );
    assert_eq!(
        code(c.put_card_content(&id, ANSWER_ELEMENT, "abc", 1).await),
        300317
    );
    assert_eq!(code(c.set_card_streaming(&id, false, 2).await), 0);
    assert_eq!(
        code(c.set_card_streaming(&id, true, 2).await),
        300317,
        "settings count too"
    );
    assert_eq!(
        code(c.put_card_content(&id, ANSWER_ELEMENT, "abc", 3).await),
        300309
    );
    assert_eq!(code(c.set_card_streaming(&id, true, 4).await), 0);
    assert_eq!(
        code(c.put_card_content(&id, ANSWER_ELEMENT, "x", 5).await),
        0
    );
    let card = &fake.cards()[0];
    assert_eq!(card.sequences, [1, 2, 4, 5]);
    let typed: Vec<bool> = card.updates.iter().map(|u| u.typewriter).collect();
    assert_eq!(
        typed,
        [true, false],
        "a prefix types on, anything else replaces"
    );
    assert_eq!(card.text(ANSWER_ELEMENT).as_deref(), Some("x"));
    assert_eq!(code(c.put_card_content(&id, "nope", "x", 6).await), 300310);
}

#[tokio::test]
async fn streaming_closes_itself_after_ten_minutes_of_the_fake_clock() {
    let (_fake, c) = setup().await;
    let id = c.create_card(&streaming_card("a")).await.expect("create");
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(601)).await;
    // Back to running time, ten minutes on: requests must not race a paused clock.
    tokio::time::resume();
    assert_eq!(
        code(c.put_card_content(&id, ANSWER_ELEMENT, "ab", 1).await),
        200850
    );
    assert_eq!(
        code(c.put_card_content(&id, ANSWER_ELEMENT, "ab", 2).await),
        300309
    );
    assert_eq!(
        code(c.set_card_streaming(&id, true, 3).await),
        0,
        "reopened"
    );
    assert_eq!(
        code(c.put_card_content(&id, ANSWER_ELEMENT, "ab", 4).await),
        0
    );
}

#[tokio::test]
async fn at_most_ten_operations_a_second_on_one_card_and_knobs_refuse() {
    let (fake, c) = setup().await;
    let id = c.create_card(&streaming_card("a")).await.expect("create");
    let mut codes = Vec::new();
    for seq in 1..=11 {
        codes.push(code(
            c.put_card_content(&id, ANSWER_ELEMENT, "ab", seq).await,
        ));
    }
    assert_eq!(codes[..10], [0; 10]);
    assert_eq!(codes[10], 230020);
    let other = c.create_card(&streaming_card("b")).await.expect("create");
    fake.limit_next_card_ops(1);
    assert_eq!(
        code(c.put_card_content(&other, ANSWER_ELEMENT, "bc", 1).await),
        230020
    );
    assert_eq!(
        code(c.put_card_content(&other, ANSWER_ELEMENT, "bc", 2).await),
        0
    );
    fake.expire_card(&other);
    assert_eq!(
        code(c.put_card_content(&other, ANSWER_ELEMENT, "bcd", 3).await),
        200750
    );
    fake.close_card_streaming(&id);
    assert!(!fake.cards()[0].streaming);
}

#[tokio::test]
async fn create_checks_the_card_and_an_entity_is_sent_once() {
    let (fake, c) = setup().await;
    let api = |r: Result<String, Error>| match r {
        Err(Error::Api { code, .. }) => code,
        other => panic!("{other:?}"),
    };
    let mut old = streaming_card("a");
    old["schema"] = json!("1.0");
    assert_eq!(api(c.create_card(&old).await), 300303);
    let mut single = streaming_card("a");
    single["config"]["update_multi"] = json!(false);
    assert_eq!(api(c.create_card(&single).await), 300302);
    let mut twice = streaming_card("a");
    let el = twice["body"]["elements"][0].clone();
    twice["body"]["elements"] = json!([el.clone(), el]);
    assert_eq!(api(c.create_card(&twice).await), 300301);
    assert_eq!(
        api(c.create_card(&streaming_card(&"长".repeat(11_000))).await),
        200860
    );

    let id = c.create_card(&streaming_card("a")).await.expect("create");
    let to = ReceiveId::OpenId("ou_owner".into());
    let content = MessageContent::card_entity(&id);
    let first = c.send(&to, &content, "u-1").await.expect("sent");
    let again = c.send(&to, &content, "u-1").await.expect("deduped by uuid");
    assert_eq!(first.message_id, again.message_id);
    let second = c.send(&to, &content, "u-2").await;
    assert!(
        matches!(second, Err(Error::Api { code: 230099, .. })),
        "{second:?}"
    );
    assert_eq!(
        fake.cards()[0].message_id.as_deref(),
        Some(first.message_id.as_str())
    );
    let patched = c.patch_card(&first.message_id, &streaming_card("b")).await;
    assert!(patched.is_err(), "a card sent by card_id is not IM-patched");
}
