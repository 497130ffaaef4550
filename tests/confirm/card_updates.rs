//! Messages updated in place: the pipeline's update items, and Feishu question cards updated when
//! the question closes, with a MemoryChannel account (it edits like Feishu) and a manual clock.

use crate::confirm_support as support;

use std::sync::Arc;
use std::time::Duration;

use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::confirm::{CapabilityLookup, ConfirmSettings};
use scv_bridge::conversation::body::{Ending, Question, QuestionClosed};
use scv_bridge::conversation::{Body, ChatId, SendError};
use scv_bridge::failure::Code;
use scv_bridge::protocol::ConfirmState;
use scv_bridge::supervisor::Capabilities;
use support::*;

const SEC: Duration = Duration::from_secs(1);

fn feishu() -> BedOptions {
    let key = AccountKey::new(Channel::Feishu, "work");
    BedOptions {
        account: key.clone(),
        settings: ConfirmSettings {
            notify: Some(key),
            timezone: Some(chrono_tz::Asia::Shanghai),
            languages: Default::default(),
            always: Default::default(),
        },
        ..BedOptions::default()
    }
}

/// A question as a typed body.
fn first_body() -> Body {
    Body::Question(Question {
        id: "q-1".into(),
        text: "Deploy?".into(),
        code: "7F".into(),
        deadline: "08:30".into(),
        buttons: true,
    })
}

/// How that question ended, as a typed body.
fn closed_body() -> Body {
    Body::QuestionClosed(QuestionClosed {
        id: "q-1".into(),
        ended: Ending::Approved,
        text: "Deploy?".into(),
        code: "7F".into(),
        at: "08:01".into(),
    })
}

/// The card the `n`-th update renders to on Feishu (waiting for it).
async fn nth_update(bed: &Bed, n: usize) -> String {
    within(bed.channel.wait_updates(n)).await;
    let u = &bed.channel.updates()[n - 1];
    assert_eq!(u.target.as_str(), "mem-1", "the question card");
    feishu_card(&u.body).expect("a card")
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
    let card = feishu_card(&notice.body).expect("the resolved card rides along");
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
        .send_proactive(&bed.account, &chat, "first", Some(&first_body()), "k/a")
        .await
        .expect("queue");
    bed.nth_sent(1).await;
    let d = bed.conv.delivery("k/a").await.expect("store").expect("row");
    assert_eq!(d.state, scv_bridge::ids::DeliveryState::Sent);
    assert_eq!(d.sent.msg_id.as_ref().map(|m| m.as_str()), Some("mem-1"));
    for _ in 0..2 {
        // Queued twice under one key: updated once.
        bed.conv
            .update_proactive(&bed.account, &chat, "k/a", "second", &closed_body(), "k/b")
            .await
            .expect("queue");
    }
    within(bed.channel.wait_updates(1)).await;
    let u = &bed.channel.updates()[0];
    assert_eq!((u.target.as_str(), &u.body), ("mem-1", &closed_body()));
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
        .update_proactive(
            &bed.account,
            &chat,
            "k/none",
            "instead",
            &closed_body(),
            "k/b",
        )
        .await
        .expect("queue");
    assert_eq!(bed.nth_sent(1).await, "instead");
    assert_eq!(bed.channel.sent()[0].body, closed_body());
    assert!(bed.channel.updates().is_empty());
    bed.shut().await;
}

/// A lookup where every account can do what `caps` says, whatever its platform.
fn every_account(caps: Capabilities) -> CapabilityLookup {
    Arc::new(move |_: &AccountKey| caps)
}

#[tokio::test]
async fn confirm_goes_by_what_the_account_can_do_not_by_its_platform() {
    // A WeChat account that could edit and show buttons: the question is offered with buttons
    // and its end shown in place, as on Feishu.
    let dir = tempfile::tempdir().expect("tempdir");
    let caps = Capabilities {
        buttons: true,
        edit: true,
        questions: true,
        ..Capabilities::default()
    };
    let opts = BedOptions {
        capabilities: every_account(caps),
        ..BedOptions::default()
    };
    let bed = Bed::open(dir.path(), T0_MS, opts).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    bed.nth_sent(1).await;
    assert!(
        matches!(&bed.channel.bodies()[0], Body::Question(q) if q.buttons && q.id == info.id),
        "{:?}",
        bed.channel.bodies()
    );
    bed.svc.withdraw(&info.id).await.expect("withdraw");
    within(bed.channel.wait_updates(1)).await;
    assert!(matches!(
        &bed.channel.updates()[0].body,
        Body::QuestionClosed(c) if c.ended == Ending::Withdrawn
    ));
    assert_eq!(bed.channel.sent().len(), 1, "no notice");
    bed.shut().await;

    // A Feishu account that could do neither: text with the code, then a closing notice.
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = BedOptions {
        capabilities: every_account(Capabilities {
            questions: true,
            ..Capabilities::default()
        }),
        ..feishu()
    };
    let bed = Bed::open(dir.path(), T0_MS, opts).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.nth_sent(1).await;
    assert!(
        matches!(&bed.channel.bodies()[0], Body::Question(q) if !q.buttons),
        "{:?}",
        bed.channel.bodies()
    );
    bed.svc.withdraw(&info.id).await.expect("withdraw");
    assert_eq!(
        bed.nth_sent(2).await,
        format!("This no longer needs an answer (withdrawn): “Deploy?” ({code}).")
    );
    assert!(bed.channel.updates().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn an_account_that_takes_no_questions_is_refused_by_its_capabilities() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = BedOptions {
        capabilities: every_account(Capabilities::default()),
        ..feishu()
    };
    let bed = Bed::open(dir.path(), T0_MS, opts).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    assert_eq!(info.state, ConfirmState::Failed);
    assert!(
        info.reason
            .as_deref()
            .is_some_and(|r| r.contains("questions go to a WeChat or Feishu chat")),
        "{info:?}"
    );
    bed.shut().await;
}
