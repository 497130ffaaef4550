//! Yes/No buttons on QQ, only for an account whose `buttons` setting says QQ granted it
//! keyboards: the question carries them once the owner writes; a stranger's click is
//! acknowledged with "no permission" and counts for nothing; the owner's click answers the
//! question and the click is answered with the outcome. Where QQ refuses the keyboard after all
//! (the fake, as QQ, refuses it from an account without the permission), the question goes as
//! text and the owner's text answer with the code closes it.

use std::sync::{Arc, Mutex};

use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::Agent;
use scv_bridge::clock::wall_ms;
use scv_bridge::confirm::{Clock, ConfirmService};
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::{ComponentState, ConfirmState};
use scv_bridge::secrets::CredentialStore;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::InstantAgent;
use scv_qq::fake::{FakeConfig, FakeQq, SentRecord};

use super::support::*;

const STRANGER: &str = "STRANGER000000000000000000000002";

/// A daemon whose questions go to the QQ account (its table `table`) on a fake set by `fake`.
async fn start(
    fake: FakeConfig,
    table: &str,
) -> (
    FakeQq,
    RunningDaemon,
    Arc<ConfirmService>,
    tempfile::TempDir,
) {
    let setup = Setup::owned();
    let fake = FakeQq::start(fake).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), fake.base_url(), table);
    let text = std::fs::read_to_string(&config.path).expect("config");
    std::fs::write(&config.path, format!("notify = \"{ACCOUNT}\"\n{text}")).expect("config");
    let config = scv_bridge::config::Config::load(&config.path).expect("config");
    CredentialStore::Files(config.state_dir.join("credentials"))
        .save(ACCOUNT, &setup.credentials)
        .expect("save");
    let slot: Arc<Mutex<Option<Arc<ConfirmService>>>> = Arc::default();
    let (slot2, agent_config) = (slot.clone(), config.agent.clone());
    let wire = move |c: &CredentialStore, s: &scv_bridge::store::Store, r: &Arc<_>| {
        let agent: Arc<dyn Agent> = Arc::new(InstantAgent::default());
        let (confirm, conversation) =
            daemon::confirm_and_pipeline(s, c, Clock::manual(wall_ms()), r, agent);
        *slot2.lock().expect("lock") = Some(confirm.clone());
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
    let confirm = slot.lock().expect("lock").clone().expect("wired");
    (fake, daemon, confirm, dir)
}

/// Asks "Deploy now?", lets the owner write, and returns the question as QQ took it.
async fn ask(fake: &FakeQq, confirm: &ConfirmService) -> (String, String, SentRecord) {
    let asked = confirm
        .ask("Deploy now?", None, Some(600))
        .await
        .expect("asked");
    let code = confirm.view(&asked.id).expect("view").code;
    fake.push_c2c(OWNER, "hello");
    let shown = |f: &FakeQq| {
        f.sent()
            .into_iter()
            .find(|s| s.content.contains("Deploy now?"))
    };
    assert!(
        fake.wait_until(WAIT, |f| shown(f).is_some()).await,
        "the question once the owner wrote: {:?}",
        fake.rejected()
    );
    (asked.id, code, shown(fake).expect("question"))
}

/// Waits, on the service's own change signal, until question `id` is in `want`.
async fn state_becomes(confirm: &ConfirmService, id: &str, want: ConfirmState) -> bool {
    let mut changes = confirm.subscribe_changes();
    let waited = tokio::time::timeout(WAIT, async {
        while confirm.status(id).await.expect("status").state != want {
            if changes.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
    waited.is_ok() && confirm.status(id).await.expect("status").state == want
}

#[tokio::test]
async fn only_the_owners_click_answers_a_question_with_buttons() {
    let granted = FakeConfig {
        markdown_allowed: true,
        keyboard_allowed: true,
        ..fake_config()
    };
    let (fake, daemon, confirm, _dir) =
        start(granted, "senders = \"owner\"\nbuttons = true\n").await;
    let (id, code, question) = ask(&fake, &confirm).await;
    assert_eq!(question.msg_type, 2, "markdown with its keyboard");
    assert!(question.content.contains(&code), "the code still works");
    let buttons = &question.body["keyboard"]["content"]["rows"][0]["buttons"];
    let yes = buttons[0]["action"]["data"]
        .as_str()
        .expect("data")
        .to_string();
    let no = buttons[1]["render_data"]["label"].as_str().unwrap_or("");
    assert!(no.starts_with("No"), "{no}");

    let stranger = fake.push_click_c2c(STRANGER, &yes);
    assert!(
        fake.wait_until(WAIT, |f| f
            .interaction_acks()
            .iter()
            .any(|a| a.id == stranger.id))
            .await,
        "a stranger's click is acknowledged"
    );
    let acks = fake.interaction_acks();
    assert_eq!(acks[0].code, 4, "no permission: {acks:?}");
    assert_eq!(
        confirm.status(&id).await.expect("status").state,
        ConfirmState::Pending,
        "a stranger's click counts for nothing"
    );

    let owner = fake.push_click_c2c(OWNER, &yes);
    assert!(
        state_becomes(&confirm, &id, ConfirmState::Yes).await,
        "answered yes"
    );
    assert!(
        fake.wait_until(WAIT, |f| f
            .sent()
            .iter()
            .any(|s| s.event_id.as_deref() == Some(owner.id.as_str())))
            .await,
        "the click answered with the outcome"
    );
    let acks = fake.interaction_acks();
    let ack = acks.iter().find(|a| a.id == owner.id).expect("ack");
    assert_eq!(ack.code, 0);
    let outcome = fake
        .sent()
        .into_iter()
        .find(|s| s.event_id.as_deref() == Some(owner.id.as_str()))
        .expect("outcome");
    assert!(outcome.content.contains("Approved"), "{}", outcome.content);
    assert!(daemon.stop().await.abandoned.is_empty());
}

#[tokio::test]
async fn without_the_permission_the_question_goes_as_text_and_a_text_answer_closes_it() {
    // The account says it has buttons; QQ (the fake) has not granted them.
    let (fake, daemon, confirm, _dir) =
        start(fake_config(), "senders = \"owner\"\nbuttons = true\n").await;
    let (id, code, question) = ask(&fake, &confirm).await;
    assert_eq!(question.msg_type, 0, "plain text");
    assert!(question.body.get("keyboard").is_none());
    assert!(question.content.contains(&code));
    let refused: Vec<i64> = fake.rejected().iter().map(|r| r.code).collect();
    assert_eq!(refused, [304037], "QQ refused the keyboard once");

    fake.push_c2c(OWNER, &format!("Y {code}"));
    assert!(
        state_becomes(&confirm, &id, ConfirmState::Yes).await,
        "answered by text"
    );
    assert!(daemon.stop().await.abandoned.is_empty());
}

#[tokio::test]
async fn buttons_are_off_by_default() {
    let granted = FakeConfig {
        markdown_allowed: true,
        keyboard_allowed: true,
        ..fake_config()
    };
    let (fake, daemon, confirm, _dir) = start(granted, "senders = \"owner\"\n").await;
    let (_id, _code, question) = ask(&fake, &confirm).await;
    assert_eq!(question.msg_type, 0, "plain text without the setting");
    assert!(question.body.get("keyboard").is_none());
    assert!(daemon.stop().await.abandoned.is_empty());
}
