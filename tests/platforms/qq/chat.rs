//! A QQ chat: the owner is answered in reply to their message, strangers get nothing, a message
//! QQ pushes twice is answered once, and answers are plain text QQ takes (links defanged, long
//! answers split within the limit, each piece with its own `msg_seq`).

use std::sync::Arc;

use scv_bridge::testing::InstantAgent;

use super::support::*;

#[tokio::test]
async fn the_owner_is_answered_in_reply_to_their_message() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let pushed = h.fake.push_c2c(OWNER, "hi");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    let sent = h.sent_to(&format!("user:{OWNER}"));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].content, "echo: hi");
    assert_eq!(sent[0].msg_type, 0, "plain text");
    assert_eq!(sent[0].msg_id.as_deref(), Some(pushed.id.as_str()));
    assert_eq!(sent[0].msg_seq, 1);
    assert!(h.fake.rejected().is_empty(), "{:?}", h.fake.rejected());
    h.stop().await;
}

#[tokio::test]
async fn a_stranger_gets_nothing_and_a_double_push_is_answered_once() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    h.fake
        .push_c2c("STRANGER000000000000000000000001", "let me in");
    let once = h.fake.push_c2c(OWNER, "once");
    h.fake.push_again(&once);
    h.fake.push_c2c(OWNER, "next");
    h.until("two answers", |f| f.sent().len() >= 2).await;
    h.settle().await;
    assert_eq!(
        h.texts_to(&format!("user:{OWNER}")),
        ["echo: once", "echo: next"]
    );
    assert_eq!(h.fake.sent().len(), 2, "nothing to the stranger");
    assert_eq!(h.agent.prompts(), ["once", "next"], "each message once");
    h.stop().await;
}

#[tokio::test]
async fn links_are_defanged_with_a_note_and_long_answers_split_within_the_limit() {
    let mut setup = Setup::owned();
    setup.agent = Arc::new(InstantAgent::new(|p| {
        if p == "long" {
            format!("{}\n\n{}", "a".repeat(1500), "b".repeat(1500))
        } else {
            "see [the docs](https://example.com/guide) now".into()
        }
    }));
    let h = Harness::start(setup).await;
    h.connected().await;
    h.fake.push_c2c(OWNER, "link");
    h.until("the link answer", |f| !f.sent().is_empty()).await;
    let long = h.fake.push_c2c(OWNER, "long");
    h.until("the long answer", |f| f.sent().len() >= 3).await;
    h.settle().await;
    assert!(h.fake.rejected().is_empty(), "{:?}", h.fake.rejected());
    let sent = h.sent_to(&format!("user:{OWNER}"));
    assert!(
        sent[0]
            .content
            .starts_with("see the docs (example[.]com/guide) now\n\n(QQ refuses links"),
        "{}",
        sent[0].content
    );
    let pieces: Vec<(usize, u64)> = sent[1..]
        .iter()
        .map(|s| (s.content.chars().count(), s.msg_seq))
        .collect();
    assert_eq!(pieces, [(1500, 1), (1500, 2)]);
    assert!(
        sent[1..]
            .iter()
            .all(|s| s.msg_id.as_deref() == Some(long.id.as_str()))
    );
    h.stop().await;
}
