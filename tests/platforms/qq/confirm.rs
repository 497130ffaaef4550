//! Confirm questions on QQ without the `buttons` setting (custom keyboards are by invitation
//! only; `buttons.rs` has the account with them): a question is text answered with its code. QQ lets the bot write only in reply, so a question waits,
//! said in status, until the owner writes, then goes out as a reply to that message; the owner's
//! text answer closes it.

use std::sync::{Arc, Mutex};

use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::Agent;
use scv_bridge::clock::wall_ms;
use scv_bridge::confirm::{Clock, ConfirmService};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, Wiring};
use scv_bridge::protocol::{ComponentState, ConfirmState};
use scv_bridge::secrets::CredentialStore;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::InstantAgent;
use scv_qq::fake::FakeQq;

use super::support::*;

#[tokio::test]
async fn a_question_waits_for_the_owner_then_a_text_answer_closes_it() {
    let setup = Setup::owned();
    let fake = FakeQq::start(setup.fake.clone()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let table = "senders = \"owner\"\n";
    let mut config = write_config(dir.path(), fake.base_url(), table);
    // Questions go to this account.
    let text = std::fs::read_to_string(&config.path).expect("config");
    std::fs::write(&config.path, format!("notify = \"{ACCOUNT}\"\n{text}")).expect("config");
    config = scv_bridge::config::Config::load(&config.path).expect("config");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));
    creds.save(ACCOUNT, &setup.credentials).expect("save");

    type Slot = Arc<Mutex<Option<(Arc<ConfirmService>, Arc<Conversation>)>>>;
    let slot: Slot = Arc::default();
    let (slot2, agent_config) = (slot.clone(), config.agent.clone());
    let wire = move |c: &CredentialStore, s: &scv_bridge::store::Store, r: &Arc<_>| {
        let agent: Arc<dyn Agent> = Arc::new(InstantAgent::default());
        let clock = Clock::manual(wall_ms());
        let (confirm, conversation) = daemon::confirm_and_pipeline(s, c, clock, r, agent);
        *slot2.lock().expect("lock") = Some((confirm.clone(), conversation.clone()));
        let factory: Arc<dyn ComponentFactory> = PlatformFactory::with_answers(
            PlatformParts {
                credentials: c.clone(),
                store: s.clone(),
                conversation: conversation.clone(),
                agent: agent_config,
                mail: Default::default(),
            },
            confirm.clone(),
        );
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: Some(confirm),
        }
    };
    let daemon = daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .expect("daemon");
    let registry = daemon.core.registry();
    let connected = tokio::time::timeout(
        WAIT,
        scv_bridge::testing::wait_for_state(&registry, ACCOUNT, ComponentState::Connected),
    )
    .await;
    assert!(connected.is_ok(), "connected");
    assert!(fake.wait_until(WAIT, |f| f.live()).await, "a live socket");
    let (confirm, _conversation) = slot.lock().expect("lock").clone().expect("wired");

    let asked = confirm
        .ask("Deploy now?", None, Some(600))
        .await
        .expect("asked");
    let code = confirm.view(&asked.id).expect("view").code;
    let cell = registry.cell(ACCOUNT).expect("cell");
    let mut changes = cell.subscribe();
    let noted = tokio::time::timeout(WAIT, async {
        loop {
            let h = cell.get();
            let waits = h
                .notes
                .iter()
                .any(|n| n.text.starts_with("1 message waits: QQ"));
            if waits {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
    assert!(noted.is_ok(), "the wait in status: {:?}", cell.get().notes);
    assert!(fake.sent().is_empty(), "nothing unprompted");

    let hello = fake.push_c2c(OWNER, "hello");
    assert!(
        fake.wait_until(WAIT, |f| f
            .sent()
            .iter()
            .any(|s| s.content.contains("Deploy now?")))
            .await,
        "the question once the owner wrote"
    );
    let question = fake
        .sent()
        .into_iter()
        .find(|s| s.content.contains("Deploy now?"))
        .expect("question");
    assert_eq!(question.msg_id.as_deref(), Some(hello.id.as_str()));
    assert!(
        question.content.contains(&code),
        "answered with its code: {}",
        question.content
    );
    assert_eq!(question.msg_type, 0, "plain text, no keyboard");

    fake.push_c2c(OWNER, "yes");
    let reply = format!("Got it: yes ({code}).");
    assert!(
        fake.wait_until(WAIT, |f| f.sent().iter().any(|s| s.content == reply))
            .await,
        "the answer acknowledged: {:?}",
        fake.sent()
    );
    assert_eq!(
        confirm.status(&asked.id).await.expect("status").state,
        ConfirmState::Yes
    );
    assert!(
        fake.rejected().is_empty(),
        "no reply was tried outside a window: {:?}",
        fake.rejected()
    );
    let report = daemon.stop().await;
    assert!(report.abandoned.is_empty());
}
