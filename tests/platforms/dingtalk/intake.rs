//! The Stream intake end to end: the owner is answered, a stranger gets nothing, a duplicate
//! push is answered once, a zombie socket and a `disconnect` are replaced, and the fatal cases
//! stop the account with their fix instead of retrying.

use scv_bridge::protocol::ComponentState;
use scv_dingtalk::Call;
use scv_dingtalk::fake::{Fault, Inbound};

use super::support::*;

#[tokio::test]
async fn the_owner_is_answered_through_the_reply_webhook_after_the_push_is_acked() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let started = std::time::Instant::now();
    let pushed = h.fake.push_text(&owner, "hello");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    // A figure for the closing note, not a bound: loopback, an agent that answers at once.
    eprintln!(
        "dingtalk round trip (push → reply webhook): {:?}",
        started.elapsed()
    );
    h.acked_and_settled(&pushed.push.message_id).await;
    assert_eq!(h.texts(), ["echo: hello"]);
    let sent = &h.fake.sent()[0];
    assert_eq!(
        sent.call,
        Call::SessionWebhook,
        "replies use the webhook while it lives"
    );
    assert_eq!(sent.msg_key, "markdown");
    let ack = h
        .fake
        .acks()
        .into_iter()
        .find(|a| a.message_id == pushed.push.message_id)
        .expect("acked");
    assert!(
        ack.known && ack.code == Some(200) && ack.data_is_string,
        "{ack:?}"
    );
    assert_eq!(h.fake.protocol_errors(), 0);
    let health = h.health();
    assert!(health.last_success_unix_seconds.is_some(), "{health:?}");
    h.stop().await;
}

#[tokio::test]
async fn a_stranger_an_outsider_and_an_unaddressed_group_message_get_nothing() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let stranger = h.fake.config().staff[1].clone();
    let group = h.fake.config().groups[0].clone();
    let mut pushes = vec![h.fake.push_text(&stranger, "let me in")];
    let mut outsider = Inbound::text("", "hi");
    outsider.corp_id = Some(String::new());
    pushes.push(h.fake.push(&outsider));
    let mut foreign = Inbound::text("manager4521", "same id, other corp");
    foreign.corp_id = Some("dingothercorp".into());
    pushes.push(h.fake.push(&foreign));
    let mut echo = Inbound::text("manager4521", "the robot's own");
    echo.from_bot = true;
    pushes.push(h.fake.push(&echo));
    // The real server delivers only @-mentions from groups; one that slips through is dropped.
    let owner = h.fake.config().staff[0].clone();
    pushes.push(
        h.fake
            .push(&Inbound::text(&owner, "not for you").in_group(&group, false)),
    );
    for p in &pushes {
        h.acked_and_settled(&p.push.message_id).await;
    }
    assert!(h.fake.sent().is_empty(), "{:?}", h.texts());
    assert!(
        h.agent.prompts().is_empty(),
        "no turn for anyone but the owner"
    );
    // The owner's group message that @-mentions the robot is answered in the group.
    let at = h
        .fake
        .push(&Inbound::text(&owner, "in the group").in_group(&group, true));
    h.until("the group answer", |f| !f.sent().is_empty()).await;
    h.acked_and_settled(&at.push.message_id).await;
    assert_eq!(
        h.texts(),
        ["echo: in the group"],
        "the @name's space is trimmed"
    );
    let dropped = h.health().dropped;
    for reason in ["foreign_corp", "self_echo", "not_addressed"] {
        assert_eq!(dropped.get(reason), Some(&1), "{reason}: {dropped:?}");
    }
    h.stop().await;
}

#[tokio::test]
async fn a_duplicate_push_is_answered_once() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "once");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.acked_and_settled(&pushed.push.message_id).await;
    let again = h.fake.repush(&pushed.msg_id).expect("pushed before");
    assert_ne!(again.message_id, pushed.push.message_id, "a new push id");
    h.acked_and_settled(&again.message_id).await;
    assert_eq!(h.texts(), ["echo: once"]);
    assert_eq!(h.agent.prompts(), ["once"]);
    h.stop().await;
}

#[tokio::test]
async fn a_zombie_socket_is_replaced_by_the_idle_watchdog() {
    let mut setup = Setup::owned();
    setup.table.push_str("idle_timeout_seconds = 2\n");
    let h = Harness::start(setup).await;
    h.connected().await;
    let first = h.fake.opens().len();
    // Open, WebSocket pings answered, nothing delivered (spec §1.8).
    h.fake.zombie_all();
    h.until("a fresh ticket and socket", |f| {
        f.opens().len() > first && f.deliverable_connections() == 1
    })
    .await;
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "after the zombie");
    assert!(pushed.push.connection.is_some(), "a live socket took it");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    assert_eq!(h.texts(), ["echo: after the zombie"]);
    h.stop().await;
}

#[tokio::test]
async fn a_disconnect_brings_the_new_socket_up_before_the_old_one_closes() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    h.fake.disconnect_all();
    // The retiring socket is still open (the fake closes it 10 s later) when the new one takes
    // pushes: no gap in which a push would be lost.
    h.until("a second socket beside the retiring one", |f| {
        f.deliverable_connections() == 1 && f.live_connections() == 2
    })
    .await;
    let owner = h.fake.config().staff[0].clone();
    let pushed = h.fake.push_text(&owner, "on the new socket");
    assert!(pushed.push.connection.is_some());
    h.until("the answer", |f| !f.sent().is_empty()).await;
    assert_eq!(h.texts(), ["echo: on the new socket"]);
    assert_eq!(h.health().state, ComponentState::Connected);
    h.stop().await;
}

#[tokio::test]
async fn refused_credentials_stop_the_account_with_the_login_to_run() {
    let mut setup = Setup::owned();
    let creds = login(&setup.fake).with("client_secret", "wrong-secret");
    setup.credentials = Some(creds);
    let h = Harness::start(setup).await;
    h.until_health("failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(
        health.code.as_deref(),
        Some("dingtalk.bad_credentials"),
        "{health:?}"
    );
    let action = health.action.clone().unwrap_or_default();
    assert!(action.contains("developer console"), "{action}");
    let command = health.command.clone().unwrap_or_default();
    assert!(command.contains("login dingtalk team"), "{command}");
    let tokens = h.fake.token_requests();
    assert_eq!(
        h.fake.connections().len(),
        0,
        "no socket with refused credentials"
    );
    assert_eq!(h.fake.token_requests(), tokens, "no retries");
    h.stop().await;
}

#[tokio::test]
async fn an_app_not_in_stream_mode_stops_with_the_console_fix() {
    let mut setup = Setup::owned();
    setup.fake.ping_every = None;
    let h = {
        let fake = scv_dingtalk::fake::FakeDingTalk::start(setup.fake.clone())
            .await
            .expect("fake");
        // The robot is off, or its receive mode is not Stream (spec §5).
        fake.fail_next(
            Call::OpenConnection,
            Fault::Api {
                status: 400,
                code: "invalidParameter".into(),
                scopes: vec![],
            },
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), fake.base_url(), &setup.table);
        let creds =
            scv_bridge::secrets::CredentialStore::Files(config.state_dir.join("credentials"));
        creds
            .save(ACCOUNT, setup.credentials.as_ref().expect("login"))
            .expect("save");
        let turns = setup.agent.clone();
        Harness::start_daemon(fake, dir, config, setup.agent, turns).await
    };
    h.until_health("failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(
        health.code.as_deref(),
        Some("dingtalk.app_not_ready"),
        "{health:?}"
    );
    let action = health.action.clone().unwrap_or_default();
    assert!(
        action.contains("message receive mode to Stream"),
        "{action}"
    );
    assert!(
        health
            .command
            .clone()
            .unwrap_or_default()
            .contains("channel enable dingtalk team"),
        "{health:?}"
    );
    h.stop().await;
}

/// The platform's own gap: a robot message is not pushed again (spec §1.6), so one read but not
/// yet journaled when the daemon dies is lost. The window is from the push to its ACK (sent right
/// after the commit); this measures it under a burst and holds it to the spec's target (1 s).
#[tokio::test]
async fn every_push_is_acked_within_the_target_after_its_commit() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let pushes: Vec<_> = (0..30)
        .map(|i| h.fake.push_text(&owner, &format!("burst {i}")))
        .collect();
    h.until("every answer", |f| f.sent().len() == pushes.len())
        .await;
    for p in &pushes {
        h.acked_and_settled(&p.push.message_id).await;
    }
    let mut windows: Vec<_> = h
        .fake
        .acks()
        .into_iter()
        .filter(|a| pushes.iter().any(|p| p.push.message_id == a.message_id))
        .filter_map(|a| a.after)
        .collect();
    windows.sort();
    assert_eq!(windows.len(), pushes.len(), "one ACK per push");
    let (median, max) = (windows[windows.len() / 2], windows[windows.len() - 1]);
    eprintln!("dingtalk push → ACK (journaled first), 30 pushes: median {median:?}, max {max:?}");
    assert!(max < scv_dingtalk::limits::ACK_TARGET, "max {max:?}");
    assert_eq!(h.agent.prompts().len(), pushes.len(), "each answered once");
    h.stop().await;
}

#[tokio::test]
async fn a_dropped_link_shows_as_disconnected_with_its_cause_until_it_is_back() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let opens = h.fake.opens().len();
    // The socket is reset and the next ticket request fails: the account says so, then
    // reconnects by itself after its backoff (no restart of the run).
    h.fake.fail_next(Call::OpenConnection, Fault::Status(503));
    h.fake.reset_all();
    h.until_health("disconnected", |c| c.state == ComponentState::Disconnected)
        .await;
    let error = h.health().error.unwrap_or_default();
    assert!(error.contains("DingTalk Stream"), "{error}");
    h.until("a new socket", |f| {
        f.opens().len() > opens && f.deliverable_connections() == 1
    })
    .await;
    h.until_health("connected again", |c| c.state == ComponentState::Connected)
        .await;
    assert_eq!(
        h.health().restarts,
        0,
        "the connection healed inside the run"
    );
    h.stop().await;
}
