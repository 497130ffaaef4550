//! A confirm question on Feishu: asked as a card in the owner's chat, answered by a click.

mod feishu_support;

use std::sync::{Arc, Mutex};

use feishu_support::*;
use scv_bridge::adapters::AdapterContext;
use scv_bridge::adapters::feishu::{ConfirmCards, build_with};
use scv_bridge::agent::Agent;
use scv_bridge::config::AccountSpec;
use scv_bridge::confirm::{Clock, ConfirmService};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, Wiring};
use scv_bridge::protocol::{ComponentState, ConfirmState};
use scv_bridge::secrets::CredentialStore;
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_feishu::fake::{FakeConfig, FakeFeishu};
use scv_feishu::frame::FrameType;
use serde_json::json;

struct Factory {
    ctx: AdapterContext,
    confirm: Arc<ConfirmService>,
}

impl ComponentFactory for Factory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        build_with(
            spec,
            &self.ctx,
            Some(Arc::new(ConfirmCards(self.confirm.clone()))),
        )
    }
}

#[tokio::test]
async fn owner_answers_a_confirm_question_with_a_click() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nnotify = \"{ACCOUNT}\"\n[feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\n",
        dir.path().join("state").display(),
        dir.path().join("run").join("daemon.sock").display(),
        fake.base_url(),
    );
    std::fs::write(&path, text).expect("write config");
    let config = scv_bridge::config::Config::load(&path).expect("config");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));
    creds
        .save(
            ACCOUNT,
            &good_credentials(fake.config()).with("owner_id", OWNER),
        )
        .expect("save");
    let slot: Arc<Mutex<Option<Arc<ConfirmService>>>> = Arc::default();
    let (slot2, agent_config) = (slot.clone(), config.agent.clone());
    let wire = move |c: &CredentialStore, s: &scv_bridge::store::Store| {
        let agent: Arc<dyn Agent> = TestAgent::open();
        let conversation = Conversation::new(s.clone(), agent);
        let confirm =
            ConfirmService::new(s.clone(), conversation.clone(), c.clone(), Clock::tokio());
        *slot2.lock().expect("lock") = Some(confirm.clone());
        let factory: Arc<dyn ComponentFactory> = Arc::new(Factory {
            ctx: AdapterContext {
                credentials: c.clone(),
                store: s.clone(),
                conversation: conversation.clone(),
                agent: agent_config,
                mail: Default::default(),
            },
            confirm: confirm.clone(),
        });
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: Some(confirm),
        }
    };
    let d = daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .expect("daemon");
    let waited = tokio::time::timeout(
        WAIT,
        scv_bridge::testing::wait_for_state(&d.core.registry(), ACCOUNT, ComponentState::Connected),
    )
    .await;
    assert!(waited.is_ok(), "connected");
    let confirm = slot.lock().expect("lock").clone().expect("confirm");

    let asked = confirm
        .ask("Deploy now?", None, Some(600))
        .await
        .expect("asked");
    assert_eq!(asked.state, ConfirmState::Pending, "{asked:?}");
    assert!(
        fake.wait_until(WAIT, |f| !f.sent().is_empty()).await,
        "the card"
    );
    let card = fake.sent().remove(0);
    assert_eq!(card.msg_type, "interactive");
    assert_eq!(
        card.receive_id_type, "open_id",
        "the owner's chat by open_id"
    );

    let click = fake.push_card_click(
        OWNER,
        &card.message_id,
        json!({"q": asked.id, "a": "yes"}),
        FrameType::Card,
    );
    let answered = fake
        .wait_until(WAIT, |f| {
            f.acks()
                .iter()
                .any(|a| a.event_id.as_deref() == Some(click.event_id.as_str()))
        })
        .await;
    assert!(answered, "the click is answered");
    let ack = fake
        .acks()
        .into_iter()
        .find(|a| a.event_id.as_deref() == Some(click.event_id.as_str()))
        .expect("ack");
    let data = ack.data.expect("a callback response");
    assert_eq!(data["toast"]["type"], "success", "{data}");
    let now = fake.message_content(&card.message_id).expect("card");
    assert!(
        !now.to_string().contains("\"button\""),
        "buttons removed: {now}"
    );
    let status = confirm.status(&asked.id).await.expect("status");
    assert_eq!(status.state, ConfirmState::Yes, "{status:?}");
    let report = d.stop().await;
    assert!(report.abandoned.is_empty());
}
