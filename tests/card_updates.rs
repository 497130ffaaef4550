//! Messages updated in place: the pipeline's update items, and Feishu question cards updated when
//! the question closes, with a MemoryChannel account (it edits like Feishu) and a manual clock.

#[path = "confirm_support/mod.rs"]
mod support;

use std::time::Duration;

use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::confirm::ConfirmSettings;
use scv_bridge::conversation::{ChatId, SendError};
use scv_bridge::failure::Code;
use scv_bridge::protocol::ConfirmState;
use support::*;

const SEC: Duration = Duration::from_secs(1);

fn feishu() -> BedOptions {
    let key = AccountKey::new(Channel::Feishu, "work");
    BedOptions {
        account: key.clone(),
        settings: ConfirmSettings {
            notify: Some(key),
            timezone: Some(chrono_tz::Asia::Shanghai),
        },
        ..BedOptions::default()
    }
}

/// The rich content of the `n`-th update (waiting for it).
async fn nth_update(bed: &Bed, n: usize) -> String {
    within(bed.channel.wait_updates(n)).await;
    let u = &bed.channel.updates()[n - 1];
    assert_eq!(u.target.as_str(), "mem-1", "the question card");
    u.rich.clone().expect("a card")
}

#[tokio::test]
async fn expiry_updates_the_card_and_sends_nothing_new() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    let info = bed.svc.ask("Deploy?", None, Some(120)).await.expect("ask");
    bed.nth_sent(1).await;
    for _ in 0..4 {
        bed.clock.advance(30 * SEC);
        bed.svc.status(&info.id).await.expect("status");
    }
    assert_eq!(
        bed.svc.status(&info.id).await.expect("status").state,
        ConfirmState::Expired
    );
    let card = nth_update(&bed, 1).await;
    assert!(card.contains("Expired at 08:02"), "{card}");
    assert!(!card.contains("\"button\""), "{card}");
    assert_eq!(bed.channel.sent().len(), 1, "no second message");
    bed.shut().await;
}

#[tokio::test]
async fn withdrawal_updates_the_card() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    bed.nth_sent(1).await;
    bed.clock.advance(60 * SEC);
    let card = nth_update(&bed, 1).await;
    assert!(card.contains("Withdrawn"), "{card}");
    assert_eq!(
        bed.svc.status(&info.id).await.expect("status").state,
        ConfirmState::Withdrawn
    );
    assert_eq!(bed.channel.sent().len(), 1, "no second message");
    bed.shut().await;
}

#[tokio::test]
async fn a_card_that_cannot_be_updated_gets_a_new_closing_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    bed.channel.fail_next_updates([SendError::rejected(
        Code::new("test.recalled"),
        "the message was recalled",
    )]);
    let info = bed.svc.ask("Deploy?", None, Some(30)).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.nth_sent(1).await;
    bed.clock.advance(30 * SEC);
    assert_eq!(
        bed.nth_sent(2).await,
        format!("No answer before the deadline, so it counts as no: “Deploy?” ({code}).")
    );
    let notice = &bed.channel.sent()[1];
    let card = notice
        .rich
        .as_deref()
        .expect("the resolved card rides along");
    assert!(card.contains("Expired at"), "{card}");
    assert!(bed.channel.updates().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn a_restart_between_closing_and_updating_updates_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    let info = bed.svc.ask("Deploy?", None, Some(50)).await.expect("ask");
    bed.nth_sent(1).await;
    bed.shut().await;

    // The account is down when the question expires: the update waits in the outbox.
    let down = BedOptions {
        attach: false,
        ..feishu()
    };
    let bed = Bed::open(dir.path(), T0_MS + 10_000, down).await;
    bed.clock.advance(40 * SEC);
    assert_eq!(
        bed.svc.status(&info.id).await.expect("status").state,
        ConfirmState::Expired
    );
    bed.shut().await;

    let bed = Bed::open(dir.path(), T0_MS + 60_000, feishu()).await;
    let card = nth_update(&bed, 1).await;
    assert!(card.contains("Expired at"), "{card}");
    // Nothing else is queued: the question is not re-sent and the update does not repeat.
    bed.say("m1", OWNER, "hello").await;
    assert_eq!(bed.nth_sent(1).await, "echo: hello");
    assert_eq!(bed.channel.updates().len(), 1);
    bed.shut().await;
}

#[tokio::test]
async fn an_update_replaces_the_sent_message_and_the_outbox_keeps_its_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    let chat = ChatId::new(OWNER);
    bed.conv
        .send_proactive(&bed.account, &chat, "first", Some("{\"v\":1}"), "k/a")
        .await
        .expect("queue");
    bed.nth_sent(1).await;
    let d = bed.conv.delivery("k/a").await.expect("store").expect("row");
    assert_eq!(d.state, scv_bridge::ids::DeliveryState::Sent);
    assert_eq!(d.sent.msg_id.as_ref().map(|m| m.as_str()), Some("mem-1"));
    for _ in 0..2 {
        // Queued twice under one key: updated once.
        bed.conv
            .update_proactive(&bed.account, &chat, "k/a", "second", "{\"v\":2}", "k/b")
            .await
            .expect("queue");
    }
    within(bed.channel.wait_updates(1)).await;
    let u = &bed.channel.updates()[0];
    assert_eq!(
        (u.target.as_str(), u.rich.as_deref()),
        ("mem-1", Some("{\"v\":2}"))
    );
    bed.conv
        .send_proactive(&bed.account, &chat, "third", None, "k/c")
        .await
        .expect("queue");
    assert_eq!(bed.nth_sent(2).await, "third");
    assert_eq!(bed.channel.updates().len(), 1);
    assert_eq!(
        bed.conv.delivery_state("k/b").await.expect("store"),
        Some(scv_bridge::ids::DeliveryState::Sent)
    );
    bed.shut().await;
}

#[tokio::test]
async fn an_update_of_a_message_never_sent_goes_out_as_a_new_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    let chat = ChatId::new(OWNER);
    bed.conv
        .update_proactive(&bed.account, &chat, "k/none", "instead", "{\"v\":2}", "k/b")
        .await
        .expect("queue");
    assert_eq!(bed.nth_sent(1).await, "instead");
    assert_eq!(bed.channel.sent()[0].rich.as_deref(), Some("{\"v\":2}"));
    assert!(bed.channel.updates().is_empty());
    bed.shut().await;
}
