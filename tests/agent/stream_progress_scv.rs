//! The `scv` backend reports each tool step while a turn runs, without naming the tool, so
//! the pipeline can tell the owner a long turn is still working.

use std::path::PathBuf;

use scv_bridge::agent::{
    Agent, ScvAgent, ScvOptions, SessionKey, Transport, TurnEvent, TurnEvents, TurnRequest,
};
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::conversation::ChatId;
use scv_bridge::testing::fake_scv::FakeScv;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_tool_step_is_reported_as_a_nameless_status() {
    let dir = tempfile::tempdir().expect("dir");
    let fake = FakeScv::start(&dir.path().join("agent.sock"))
        .await
        .expect("fake");
    let agent = ScvAgent::new(ScvOptions::new(Transport::Socket(fake.path().into())));
    let (events, mut rx) = TurnEvents::channel();
    let req = TurnRequest {
        session: SessionKey {
            account: AccountKey::new(Channel::Feishu, "work"),
            chat: ChatId::new("c1"),
        },
        prompt: "[steps]".into(),
        no_tools: false,
        auto_approve: true,
        approver: None,
        workspace: Some(PathBuf::from("/srv/work")),
        channel_label: "Feishu",
        language: Default::default(),
        attachments: Vec::new(),
        events,
        owner_tools: None,
    };
    let out = agent
        .turn(req, CancellationToken::new())
        .await
        .expect("answered");
    assert_eq!(out.text, "final answer");
    let got: Vec<TurnEvent> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    // One step (tool.started once); its name never reaches the chat.
    assert_eq!(got, [TurnEvent::Status(String::new())]);
}
