//! QQ lets the bot write only in reply (spec §4.1): a message the bridge writes on its own waits
//! in the queue, visible in status, until the owner next writes, and then goes out as a reply to
//! that message without spending the replies its answer needs.

use scv_bridge::ids::{AccountKey, Channel, ChatId};

use super::support::*;

#[tokio::test]
async fn a_proactive_message_waits_for_the_owner_and_leaves_the_answer_its_replies() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let key = AccountKey::new(Channel::Qq, "bot");
    let chat = ChatId::new(OWNER);
    h.conversation
        .send_proactive(
            &key,
            &chat,
            "Proceed with the deploy?",
            None,
            "test/question-1",
        )
        .await
        .expect("queued");
    h.until_health("the waiting note", |c| {
        c.notes.iter().any(|n| {
            n.text
                == "1 message waits: QQ lets the bot write only in reply; send the bot any message"
        })
    })
    .await;
    assert!(h.fake.sent().is_empty(), "nothing went out unprompted");
    assert!(h.fake.rejected().is_empty(), "and nothing was tried");

    let hello = h.fake.push_c2c(OWNER, "hello");
    h.until("both messages", |f| f.sent().len() == 2).await;
    h.settle().await;
    let sent = h.sent_to(&format!("user:{OWNER}"));
    let seen: Vec<(&str, u64)> = sent
        .iter()
        .map(|s| (s.content.as_str(), s.msg_seq))
        .collect();
    assert_eq!(seen, [("Proceed with the deploy?", 1), ("echo: hello", 2)]);
    assert!(
        sent.iter()
            .all(|s| s.msg_id.as_deref() == Some(hello.id.as_str()))
    );
    h.until_health("the note cleared", |c| {
        !c.notes.iter().any(|n| n.text.contains("waits"))
    })
    .await;
    h.stop().await;
}
