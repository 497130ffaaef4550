//! The Feishu account end to end: the daemon against the fake over the long connection.

use crate::feishu_support;

use feishu_support::*;
use scv_bridge::client;
use scv_bridge::protocol::{ComponentState, DaemonCommand, DaemonStatus};
use scv_bridge::secrets::Credentials;

#[tokio::test]
async fn chat_round_trip_over_the_long_connection() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    let health = h.health();
    assert_eq!(health.bot_id.as_deref(), Some("ou_bot"));
    assert_eq!(health.user_id.as_deref(), Some(OWNER));
    assert_eq!(health.error, None);

    let pushed = h.fake.push_p2p_text(OWNER, "hello");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    let sent = h.fake.sent();
    assert_eq!(sent.len(), 1);
    let s = &sent[0];
    assert_eq!(
        (s.receive_id_type.as_str(), s.receive_id.as_str()),
        ("chat_id", p2p_chat(OWNER).as_str())
    );
    assert_eq!(text_of(&s.content), "echo: hello");
    let uuid = s.uuid.as_deref().expect("uuid sent");
    assert!(!uuid.is_empty() && uuid.len() <= 50, "{uuid}");

    let acks = h.fake.acks();
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].event_id.as_deref(), Some(pushed.event_id.as_str()));
    assert_eq!(acks[0].code, Some(200));
    assert!(
        acks[0].echo_ok,
        "the ACK echoes the frame: {:?}",
        acks[0].headers
    );

    // A stranger gets nothing at all on an owner-only account, but is still ACKed.
    h.fake.push_p2p_text("ou_stranger", "hi?");
    h.until("the stranger's ACK", |f| f.acks().len() == 2).await;
    h.settle().await;
    assert!(h.texts_to(&p2p_chat("ou_stranger")).is_empty());
    assert_eq!(h.fake.in_flight(), 0);
    h.stop().await;
}

#[tokio::test]
async fn ack_precedes_processing_under_a_slow_agent() {
    let mut setup = Setup::owned();
    setup.agent = TestAgent::gated();
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;

    let pushed = h.fake.push_p2p_text(OWNER, "think hard");
    h.until("the ACK", |f| f.acks().iter().any(|a| a.code == Some(200)))
        .await;
    assert!(h.agent.wait_turns(1).await, "the turn never started");
    assert!(h.fake.sent().is_empty(), "the agent is still thinking");
    // The ACK matched the push within the fake's deadline, so the push left the fake's in-flight
    // set: the fake re-pushes only what is still in flight at its deadline, so none can follow.
    let ack = h.fake.acks().remove(0);
    assert_eq!(ack.event_id.as_deref(), Some(pushed.event_id.as_str()));
    let latency = ack.latency.expect("the ACK answered a waiting push");
    assert!(latency < h.fake.config().ack_timeout, "{latency:?}");
    let pushes = h.fake.pushes();
    assert_eq!(pushes.len(), 1, "no ACK deadline was missed: {pushes:?}");
    assert_eq!(h.fake.in_flight(), 0);

    h.agent.release();
    h.until("the answer", |f| f.sent().len() == 1).await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: think hard"]);
    h.stop().await;
}

#[tokio::test]
async fn a_repush_after_a_dropped_ack_is_answered_once() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.drop_next_acks(1);
    let pushed = h.fake.push_p2p_text(OWNER, "once please");
    h.until("the re-push and its ACK", |f| {
        f.pushes().len() >= 2 && f.in_flight() == 0
    })
    .await;
    let pushes = h.fake.pushes();
    assert_ne!(
        pushes[0].event_id, pushes[1].event_id,
        "a re-push has a new event_id"
    );
    assert_eq!(
        pushes[1].im_message_id.as_deref(),
        Some(pushed.message_id.as_str())
    );
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: once please"]);
    assert_eq!(h.agent.turns(), 1);
    h.stop().await;
}

#[tokio::test]
async fn server_close_reconnects_with_a_fresh_ticket() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.until("one connection", |f| f.live_connections() == 1)
        .await;
    h.fake.close_connections();
    h.until("a second connection", |f| {
        f.connections().len() == 2 && f.live_connections() == 1
    })
    .await;
    let c = h.fake.connections();
    assert_ne!(c[0].ticket, c[1].ticket);
    assert_eq!(h.fake.refused_handshakes(), 0);
    assert_eq!(
        h.health().restarts,
        0,
        "the connection healed without a restart"
    );
    h.wait_state(ComponentState::Connected).await;

    h.fake.push_p2p_text(OWNER, "still there?");
    h.until("the answer", |f| !f.sent().is_empty()).await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: still there?"]);
    h.stop().await;
}

#[tokio::test]
async fn group_mentions_are_answered_in_thread_others_ignored() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.push_group_text("oc_team", OWNER, "lunch?", false);
    h.until("the ACK", |f| f.acks().len() == 1).await;
    let asked = h.fake.push_group_text("oc_team", OWNER, "status?", true);
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    let sent = h.fake.sent();
    assert_eq!(sent.len(), 1, "only the mention is answered");
    assert_eq!(sent[0].reply_to, Some((asked.message_id.clone(), true)));
    assert_eq!(sent[0].chat_id, "oc_team");
    assert_eq!(text_of(&sent[0].content), "echo: status?");
    assert_eq!(h.agent.turns(), 1);
    // The message the bot was not meant to see is counted, and shows in status.
    let status: DaemonStatus = client::request(&h.daemon.socket, DaemonCommand::Status)
        .await
        .expect("status");
    let work = &status.components[0];
    assert_eq!(
        work.dropped.get("group_without_mention"),
        Some(&1),
        "{work:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_bad_app_secret_fails_with_a_clear_hint() {
    let mut setup = Setup::owned();
    setup.credentials = Some(
        Credentials::default()
            .with("app_id", &setup.fake.app_id)
            .with("app_secret", "wrong-secret"),
    );
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Failed).await;
    let status: DaemonStatus = client::request(&h.daemon.socket, DaemonCommand::Status)
        .await
        .expect("status");
    let c = status
        .components
        .iter()
        .find(|c| c.id == ACCOUNT)
        .expect("account listed");
    assert_eq!(c.state, ComponentState::Failed);
    let error = c.error.as_deref().unwrap_or_default();
    assert!(error.contains("app secret"), "{error}");
    let action = c.action.as_deref().unwrap_or_default();
    assert!(action.contains("scv-bridge login feishu work"), "{action}");
    assert!(!error.contains("wrong-secret") && !action.contains("wrong-secret"));
    assert_eq!(h.fake.live_connections(), 0);
    h.stop().await;
}

#[tokio::test]
async fn last_success_follows_events_and_pongs_not_the_moment_the_socket_opened() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    // As if the socket had come up long ago and nothing had been heard since.
    let cell = h.daemon.core.registry().cell(ACCOUNT).expect("cell");
    cell.update(|c| c.last_success_unix_seconds = Some(1));
    h.fake.push_p2p_text(OWNER, "hello");
    let now = scv_bridge::supervisor::unix_now();
    h.until_health("last_success to follow what Feishu said", |c| {
        c.last_success_unix_seconds >= Some(now)
    })
    .await;
    assert_eq!(h.health().state, ComponentState::Connected);
    h.stop().await;
}

#[tokio::test]
async fn a_failing_send_api_shows_in_health_until_the_next_send_goes_through() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.fail_next_sends(1);
    h.fake.push_p2p_text(OWNER, "hello");
    h.until_health("a note while sends fail", |c| c.error.is_some())
        .await;
    let note = h.health().error.unwrap_or_default();
    assert!(
        note.starts_with("sends failing: HTTP 500") && note.contains("; 1 waiting; retry in "),
        "{note}"
    );
    assert_eq!(h.health().state, ComponentState::Connected);
    // The retry goes through (after the backoff's first step, under a second) and clears it.
    h.until("the answer", |f| !f.sent().is_empty()).await;
    h.until_health("the note cleared", |c| c.error.is_none())
        .await;
    h.stop().await;
}
