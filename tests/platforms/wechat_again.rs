//! `/again` in a WeChat chat with no reply held (see `adapters/wechat/held.rs`) is an ordinary
//! message: the bridge takes it out of the batch only when it has something to send again.

use crate::wechat_support;

use scv_bridge::protocol::ComponentState;
use scv_wechat::fake::FakeConfig;
use wechat_support::*;

#[tokio::test]
async fn again_with_nothing_held_reaches_the_agent_like_any_text() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "/again");
    let sent = fake.wait_for_sent(1, PATIENCE).await;
    assert_eq!(sent[0].text, "echo: /again");
    h.stop().await;
}
