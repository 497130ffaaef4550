//! `reload` with a changed `[agent]` table swaps the agent while the daemon runs (status shows
//! the new model at once); a change into the `acp` backend is refused with the reason (building
//! one kills the recorded agent process groups, which may be ours still answering).

use crate::wechat_support;

use scv_bridge::protocol::ComponentState;
use scv_wechat::fake::FakeConfig;

#[tokio::test]
async fn a_changed_agent_table_is_taken_by_a_reload() {
    let mut h = wechat_support::Harness::new(FakeConfig::default(), "").await;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let path = h.config().path.clone();
    let text = std::fs::read_to_string(&path).expect("config");
    let changed = format!(
        "{text}\n[agent]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"another-model\"\n"
    );
    std::fs::write(&path, changed).expect("write config");
    h.daemon()
        .core
        .reload()
        .await
        .expect("an [agent] change reloads");
    let agent = h.daemon().core.status().agent.expect("an agent row");
    assert_eq!(agent.model.as_deref(), Some("another-model"));

    let acp = format!("{text}\n[agent]\nbackend = \"acp\"\ncommand = \"true\"\n");
    std::fs::write(&path, acp).expect("write config");
    let err = h
        .daemon()
        .core
        .reload()
        .await
        .expect_err("a change into acp is refused");
    assert!(err.message.contains("[agent]"), "{}", err.message);
    assert!(err.message.contains("restart"), "{}", err.message);
    h.stop().await;
}
