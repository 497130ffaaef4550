//! The poll: restarts resume from the confirmed offset, conflicts stop instead of fighting,
//! hostile updates never panic, and button presses count only from the owner.

use std::sync::Arc;

use scv_bridge::protocol::ComponentState;
use scv_telegram::{Client, Offset, User};
use serde_json::json;

use super::support::*;

#[tokio::test]
async fn a_restart_resumes_from_the_confirmed_offset() {
    let agent = TestAgent::echo();
    let mut setup = Setup::owned();
    setup.agent = agent.clone();
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.push_text(h.fake.owner_chat(), "one");
    h.until("the first answer", |f| f.sent().len() == 1).await;
    h.drain().await;
    let (server, fake, dir, config) = h.stop().await;
    // The shutdown confirmed the offset: nothing waits on the server.
    assert_eq!(fake.pending(), 0);

    fake.push_text(fake.owner_chat(), "two");
    let h = Harness::start_daemon(server, fake, dir, config, agent.clone(), None).await;
    h.until("the second answer", |f| f.sent().len() == 2).await;
    h.drain().await;
    assert_eq!(h.texts_to(h.fake.owner().id), ["echo: one", "echo: two"]);
    assert_eq!(agent.prompts(), ["one", "two"], "nothing answered twice");
    h.stop().await;
}

#[tokio::test]
async fn a_second_poller_stops_the_account_with_its_fix_and_no_retries() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.until("the daemon's poll", |f| f.polls_in_flight() == 1)
        .await;
    let other = Client::new(&h.fake.base_url(), h.fake.token())
        .expect("client")
        .with_poll_timeout(std::time::Duration::ZERO);
    other
        .get_updates(Offset::START)
        .await
        .expect("the newer poll wins");
    h.until_health("failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(
        health.code.as_deref(),
        Some("telegram.other_poller"),
        "{health:?}"
    );
    let action = health.action.clone().unwrap_or_default();
    assert!(action.contains("stop the other program"), "{action}");
    assert!(
        action.contains("`scv-bridge"),
        "a command to copy: {action}"
    );
    assert!(health.command.is_some(), "{health:?}");
    let polls = h.fake.poll_requests();
    assert_eq!(h.fake.polls_in_flight(), 0, "the account stopped polling");
    assert_eq!(h.fake.poll_requests(), polls);
    h.stop().await;
}

#[tokio::test]
async fn a_webhook_is_deleted_once_and_polling_goes_on() {
    let fake_config = scv_telegram::fake::FakeConfig::default();
    let mut setup = Setup::owned();
    setup.fake = fake_config;
    let h = {
        // The webhook is set before the account starts.
        let server = scv_telegram::fake::FakeServer::start_with(setup.fake.clone())
            .await
            .expect("fake");
        server.handle().set_webhook("https://example.org/hook");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), &server.base_url(), &setup.table);
        let creds =
            scv_bridge::secrets::CredentialStore::Files(config.state_dir.join("credentials"));
        creds
            .save(ACCOUNT, setup.credentials.as_ref().expect("login"))
            .expect("save");
        let fake = server.handle();
        Harness::start_daemon(Some(server), fake, dir, config, setup.agent, None).await
    };
    h.fake.push_text(h.fake.owner_chat(), "still there?");
    h.until("the answer", |f| f.sent().len() == 1).await;
    assert!(!h.fake.webhook_set());
    assert_eq!(h.health().state, ComponentState::Connected);
    h.stop().await;
}

#[tokio::test]
async fn hostile_updates_never_panic_and_nothing_escapes_the_inbox() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    let owner = h.fake.owner_chat();
    h.fake.push_update("message", json!({}));
    h.fake.push_update(
        "message",
        json!({"message_id": "x", "chat": 5, "from": null}),
    );
    h.fake.push_update(
        "edited_message",
        json!({"message_id": 1, "date": 1, "edit_date": 2,
        "chat": owner, "from": h.fake.owner(), "text": "edited"}),
    );
    h.fake
        .push_update("message_reaction", json!({"chat": owner, "new": []}));
    h.fake
        .push_update("callback_query", json!({"id": "c", "from": {"id": "nope"}}));
    h.fake
        .push_message(json!({"chat": owner, "from": h.fake.owner(), "text": "t",
        "entities": [{"type": "bot_command", "offset": 9_000_000, "length": 3}]}));
    let huge = "字".repeat(300_000);
    h.fake.push_text(owner.clone(), &huge);
    h.fake.push_text(owner.clone(), "after");
    h.until("the answer after", |f| {
        f.sent().iter().any(|s| s.text == "echo: after")
    })
    .await;
    h.drain().await;
    assert_eq!(h.health().state, ComponentState::Connected);
    let prompts = h.agent.prompts();
    assert_eq!(
        prompts.len(),
        3,
        "t, the huge text (cut), after: {}",
        prompts.len()
    );
    assert!(
        prompts[1].len() < huge.len(),
        "the huge text is cut to max_message_bytes"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_button_press_counts_only_from_the_owner_and_is_answered_at_once() {
    let presses = Arc::new(Presses::default());
    let mut setup = Setup::owned();
    setup.presses = Some(presses.clone());
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let owner_chat = h.fake.owner_chat();
    h.fake.push_text(owner_chat.clone(), "hi");
    h.until("the answer", |f| f.sent().len() == 1).await;
    let sent = h.fake.sent().remove(0);
    let message: scv_telegram::Message = serde_json::from_value(json!({
        "message_id": sent.message_id, "date": 1_780_000_000, "chat": owner_chat, "text": sent.text
    }))
    .expect("message");
    let stranger = User {
        id: 42,
        is_bot: false,
        first_name: "Mallory".into(),
        username: None,
        language_code: None,
    };
    let refused = h.fake.press_button(stranger, &message, "q:q-1:y");
    h.until("the stranger's press answered", |f| {
        f.callback_answers().iter().any(|(id, _)| *id == refused)
    })
    .await;
    h.drain().await;
    assert!(
        presses.seen.lock().expect("presses").is_empty(),
        "a stranger's press never counts"
    );

    let taken = h.fake.press_button(h.fake.owner(), &message, "q:q-1:n");
    h.until("the owner's press answered", |f| {
        f.callback_answers().iter().any(|(id, _)| *id == taken)
    })
    .await;
    h.drain().await;
    let seen = presses.seen.lock().expect("presses").clone();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].question_id.as_str(), seen[0].yes), ("q-1", false));
    assert_eq!(seen[0].operator.as_str(), h.fake.owner().id.to_string());
    let answers = h.fake.callback_answers();
    assert!(
        answers.iter().all(|(_, text)| text.is_none()),
        "nothing said to anyone"
    );
    h.stop().await;
}
