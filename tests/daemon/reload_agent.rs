//! `reload` with a changed `[agent]` table is refused with the reason (the agent is built once,
//! at start), as for `metrics_listen`; it never reports "nothing changed" while the old agent
//! keeps answering.

use crate::wechat_support;

use scv_bridge::protocol::ComponentState;
use scv_wechat::fake::FakeConfig;

#[tokio::test]
async fn a_changed_agent_table_is_refused_with_the_reason() {
    let mut h = wechat_support::Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let path = h.config().path.clone();
    let text = std::fs::read_to_string(&path).expect("config");
    let changed = format!(
        "{text}\n[agent]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"another-model\"\n"
    );
    std::fs::write(&path, changed).expect("write config");
    let err = h
        .daemon()
        .core
        .reload()
        .await
        .expect_err("an [agent] change is refused");
    assert!(err.message.contains("[agent]"), "{}", err.message);
    assert!(err.message.contains("restart"), "{}", err.message);
    // Put back, the same file reloads as before.
    std::fs::write(&path, text).expect("write config");
    h.daemon().core.reload().await.expect("reload");
    h.stop().await;
}
