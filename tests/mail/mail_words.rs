//! Mail digests in the owner's language: `language = "zh-CN"` on the mail account.

use crate::support_mail;

use scv_bridge::protocol::ComponentState;
use support_mail::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zh_cn_writes_the_digest_heading_and_hint_in_chinese() {
    let mut h = Harness::new("language = \"zh-CN\"\n").await;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h.mail("Kiwi-Subject-7", "Body-7").await;
    h.wait_health(5, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    let d = &h.digests()[0];
    assert!(d.starts_with("邮件摘要（box）：1 封新邮件\n1. "), "{d}");
    assert!(d.contains("Kiwi-Subject-7"), "{d}");
    assert!(
        d.ends_with("\n回复 /reply N <内容> 即可回复第 N 封。"),
        "{d}"
    );
    h.stop().await;
}
