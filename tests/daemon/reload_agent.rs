//! `reload` with a changed `[agent]` table swaps the agent while the daemon runs (status shows
//! the new model at once); a change into the `acp` backend is refused with the reason (building
//! one kills the recorded agent process groups, which may be ours still answering). A reload
//! that changes `[chats]` or an account's `agent = "NAME"` while a chat is mid-conversation
//! swaps the values in place: the account keeps its connection, the turn under way finishes
//! on its agent, and the next turn reads the new values.

use crate::wechat_support::{self, OWNER};

use scv_bridge::protocol::{ComponentState, DaemonCommand};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::Endpoint;
use scv_wechat::fake::FakeConfig;
use scv_wechat::message::{MessageItem, WeixinMessage};

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

#[tokio::test]
async fn a_reload_of_chats_and_an_account_s_agent_keeps_the_account_connected() {
    let default = FakeOpenAi::start().await.expect("the default model");
    let claude = FakeOpenAi::start().await.expect("claude's model");
    let tables = format!(
        "[agent]\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"m-default\"\n\
         [agents.claude]\nbackend = \"openai\"\nbase_url = \"{}\"\nmodel = \"m-claude\"\n",
        default.base_url(),
        claude.base_url(),
    );
    let mut h = wechat_support::Harness::new(FakeConfig::default(), &tables).await;
    h.agents_from_config = true;
    h.start().await;
    h.wait_state(ComponentState::Connected).await;
    let fake = h.fake.handle();
    let (since, notifies) = (h.status().await.since_unix_seconds, fake.notifies());
    assert_eq!(notifies, [Endpoint::NotifyStart]);

    // Mid-conversation: the default model holds its answer to the first message.
    default.answer_only(Some(0));
    fake.push_text(OWNER, "first");
    wechat_support::within(default.wait_requests(1), "the first turn to ask").await;
    let text = std::fs::read_to_string(&h.config_path).expect("config");
    let changed = text.replace("[wechat.phone]\n", "[wechat.phone]\nagent = \"claude\"\n")
        + "[chats]\naway_minutes = 1\n";
    assert_ne!(changed, text);
    std::fs::write(&h.config_path, changed).expect("write config");
    let status = scv_bridge::client::request(&h.daemon().socket, DaemonCommand::Reload)
        .await
        .expect("the reload is taken");
    let report = status.reload.expect("what the reload did");
    assert!(
        report.restarted.is_empty() && report.stopped.is_empty() && report.started.is_empty(),
        "no account restarted: {report:?}"
    );

    // The turn under way finishes on the agent it started with; the next one reads the new
    // choice, and a message older than the new away_minutes gets the note.
    default.answer_only(None);
    assert_eq!(h.wait_sent(1).await, ["echo: first"]);
    fake.push_text(OWNER, "second");
    assert_eq!(h.wait_sent(2).await[1], "echo: second");
    let five_minutes_ago = scv_bridge::clock::wall_ms() as i64 - 300_000;
    fake.push_message(WeixinMessage {
        from_user_id: OWNER.to_string(),
        create_time_ms: Some(five_minutes_ago),
        item_list: vec![MessageItem::text("held back")],
        ..Default::default()
    });
    let note = h.wait_sent(3).await[2].clone();
    assert!(note.contains("more than 1 minutes ago"), "{note}");
    h.settle().await;
    let asked = |fake: &FakeOpenAi| fake.requests().len();
    assert_eq!(
        (asked(&default), asked(&claude)),
        (1, 1),
        "second went to claude"
    );
    let last = claude.requests()[0]
        .messages
        .last()
        .map(|m| m.content.clone());
    assert_eq!(last.as_deref(), Some("second"));

    let row = h.status().await;
    assert_eq!(row.state, ComponentState::Connected);
    assert_eq!(
        row.since_unix_seconds, since,
        "the status row's since is unchanged"
    );
    assert_eq!(fake.notifies(), notifies, "no reconnect seen by WeChat");
    h.stop().await;
}
