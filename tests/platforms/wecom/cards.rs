//! Questions: the text with its code, then a yes/no card; a click counts only from the owner,
//! once, and the card is replaced on the click's handle.

use scv_bridge::conversation::Body;
use scv_bridge::conversation::body::Question;
use scv_bridge::ids::{AccountKey, ChatId};
use scv_wecom::frame::cmd;
use std::sync::Arc;

use crate::wecom::support::*;

#[tokio::test]
async fn a_question_goes_as_text_and_card_and_only_the_owners_click_counts() {
    let presses = Arc::new(Presses::default());
    let mut setup = Setup::owned();
    setup.presses = Some(presses.clone());
    let h = Harness::start(setup).await;
    h.connected().await;
    // The owner wrote once, so the chat is known to WeCom.
    h.fake.push_text(OWNER, "hi");
    h.until("the answer", |f| f.bubbles().iter().any(|b| b.finished))
        .await;
    let q = Body::Question(Question {
        id: "q-7".into(),
        text: "Delete the build folder?".into(),
        code: "7F".into(),
        deadline: "14:30".into(),
        buttons: true,
    });
    let key = AccountKey::parse(ACCOUNT).expect("key");
    h.conversation
        .send_proactive(
            &key,
            &ChatId::new(OWNER),
            "Delete the build folder? Answer Y 7F or N 7F by 14:30",
            Some(&q),
            "confirm/q-7/ask",
        )
        .await
        .expect("queued");
    h.until("the card", |f| {
        f.sent().iter().any(|s| {
            s.body
                .pointer("/template_card/task_id")
                .and_then(|v| v.as_str())
                == Some("q-7")
        })
    })
    .await;
    assert_eq!(
        h.sent_to(OWNER),
        ["Delete the build folder? Answer Y 7F or N 7F by 14:30"],
        "the text with the code goes too"
    );

    // A stranger's click changes nothing; the owner's counts once however often it arrives.
    h.fake.click("LiSi", "q-7", "yes");
    let click = h.fake.click(OWNER, "q-7", "no");
    h.fake.repush(&click, false);
    h.until("the card replaced", |f| {
        f.sent().iter().any(|s| s.cmd == cmd::RESPOND_UPDATE)
    })
    .await;
    let after = h.fake.push_text(OWNER, "after");
    h.until("the answer after", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == after.req_id && b.finished)
    })
    .await;
    let seen = presses.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (
            seen[0].question_id.as_str(),
            seen[0].yes,
            seen[0].operator.as_str()
        ),
        ("q-7", false, OWNER)
    );
    let updates: Vec<_> = h
        .fake
        .sent()
        .into_iter()
        .filter(|s| s.cmd == cmd::RESPOND_UPDATE)
        .collect();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].to, click.req_id);
    assert_eq!(updates[0].body["userids"][0], OWNER);
    h.stop().await;
}
