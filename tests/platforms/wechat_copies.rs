//! Redelivered copies are dropped only when provably copies: a message with a creation time is
//! a copy only of one created at the same time; every drop is counted by reason.

use crate::wechat_support;

use scv_bridge::config::{AccountKey, Channel};
use scv_wechat::fake::FakeConfig;
use scv_wechat::message::{MessageItem, WeixinMessage};
use wechat_support::*;

fn text_at(from: &str, text: &str, created_ms: i64) -> WeixinMessage {
    WeixinMessage {
        from_user_id: from.to_string(),
        create_time_ms: Some(created_ms),
        item_list: vec![MessageItem::text(text)],
        ..Default::default()
    }
}

#[tokio::test]
async fn the_same_text_created_five_seconds_apart_is_answered_twice_and_a_copy_once() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let config = std::fs::read_to_string(&h.config_path).expect("config");
    std::fs::write(
        &h.config_path,
        format!("metrics_listen = \"127.0.0.1:{port}\"\n{config}"),
    )
    .expect("config");
    h.start().await;
    let fake = h.fake.handle();
    // The owner says "yes", then "yes" again five seconds later (by the creation times; both
    // reach the bridge at once, well inside any content window).
    let first = fake.push_text(OWNER, "yes");
    let created = first.create_time_ms.expect("created");
    fake.push_message(text_at(OWNER, "yes", created + 5_000));
    assert_eq!(h.wait_sent(2).await, ["echo: yes", "echo: yes"]);
    // WeChat delivers the first again under a new id, with its creation time: one copy.
    fake.redeliver(first.message_id.expect("id"), true)
        .expect("copy");
    fake.push_text(OWNER, "after");
    assert_eq!(
        h.wait_sent(3).await,
        ["echo: yes", "echo: yes", "echo: after"]
    );
    h.settle().await;
    assert_eq!(h.agent.turns("yes"), 2);
    let account = AccountKey::new(Channel::Wechat, "phone");
    let stats = h.conversation();
    assert_eq!(
        stats.stats().get(&account, "dropped_redelivered_copy"),
        1,
        "the copy is counted"
    );
    let url = format!("http://127.0.0.1:{port}/metrics");
    let page = within(reqwest::get(&url), "the scrape")
        .await
        .expect("scrape")
        .text()
        .await
        .expect("page");
    assert!(
        page.contains(
            "scv_bridge_messages_dropped_total{account=\"wechat:phone\",reason=\"redelivered_copy\"} 1"
        ),
        "{page}"
    );
    h.stop().await;
}
