//! The mail chat answers in the owner's language under `language = "auto"`: a Chinese message
//! makes `/digest`'s "nothing new", the `/reply` question and the answer to the yes Chinese.
//! Real Dovecot and SMTP receiver, the conversation pipeline, a memory chat.

use crate::support_mail;

use scv_bridge::protocol::ComponentState;
use support_mail::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chinese_owner_reads_the_mail_chat_in_chinese() {
    let mut h = Harness::new("").await;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    // Any other text in the mail chat gets the help, in the language it shows.
    h.owner_says("m0", "你好").await;
    h.wait_chat(1).await;
    assert!(
        h.digests()[0].starts_with("邮件对话："),
        "{:?}",
        h.digests()
    );
    // A command shows no language: the chat's remembered one answers.
    h.owner_says("m1", "/digest").await;
    h.wait_chat(2).await;
    assert_eq!(h.digests()[1], "没有新邮件。");

    h.mail("Pear-Subject", "Can you come?").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    h.owner_says("m2", "/digest").await;
    h.wait_chat(3).await;
    assert!(
        h.digests()[2].starts_with("邮件摘要（box）"),
        "{:?}",
        h.digests()
    );
    h.owner_says("m3", "/reply 1 好的，我会到。").await;
    h.wait_chat(4).await;
    let q = h.digests()[3].clone();
    assert!(
        q.starts_with("要把这封回复发给 sender@example.com 吗？（是/否）"),
        "{q}"
    );
    h.owner_says("m4", "是").await;
    h.wait_chat(5).await;
    assert!(h.digests()[4].starts_with("已发送"), "{:?}", h.digests());
    h.owner_says("m5", "否").await;
    h.wait_chat(6).await;
    assert_eq!(h.digests()[5], "没有等待确认的回复。");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_english_owner_keeps_english() {
    let mut h = Harness::new("").await;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h.owner_says("m0", "hello").await;
    h.wait_chat(1).await;
    assert!(
        h.digests()[0].starts_with("Mail chat:"),
        "{:?}",
        h.digests()
    );
    h.owner_says("m1", "/digest").await;
    h.wait_chat(2).await;
    assert_eq!(h.digests()[1], "Nothing new.");
    h.stop().await;
}
