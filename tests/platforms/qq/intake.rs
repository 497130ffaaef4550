//! The gateway intake: a restart resumes from the journaled cursor and answers what came while
//! it was down, the platform's fatal closes stop the account with their fix instead of
//! fighting, and groups pass only what addresses the bot, under the owner policy.

use scv_bridge::protocol::ComponentState;

use super::support::*;

#[tokio::test]
async fn a_restart_resumes_from_the_journaled_cursor() {
    let setup = Setup::owned();
    let agent = setup.agent.clone();
    let h = Harness::start(setup).await;
    h.connected().await;
    h.fake.push_c2c(OWNER, "one");
    h.until("the first answer", |f| f.sent().len() == 1).await;
    h.settle().await;
    let (fake, dir, config) = h.stop().await;

    fake.push_c2c(OWNER, "two");
    let h = Harness::start_daemon(fake, dir, config, agent.clone()).await;
    h.until("the second answer", |f| f.sent().len() == 2).await;
    h.settle().await;
    assert_eq!(
        h.texts_to(&format!("user:{OWNER}")),
        ["echo: one", "echo: two"]
    );
    assert_eq!(agent.prompts(), ["one", "two"], "nothing answered twice");
    assert_eq!(h.fake.identifies(), 1, "the second run resumed");
    assert!(!h.fake.resumes().is_empty());
    h.stop().await;
}

#[tokio::test]
async fn a_reconnect_request_resumes_and_nothing_is_lost() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    assert!(h.fake.send_reconnect());
    h.until("a resume", |f| !f.resumes().is_empty() && f.live())
        .await;
    h.fake.push_c2c(OWNER, "after");
    h.until("the answer", |f| f.sent().len() == 1).await;
    h.settle().await;
    assert_eq!(h.fake.identifies(), 1);
    assert_eq!(h.health().state, ComponentState::Connected);
    h.stop().await;
}

#[tokio::test]
async fn a_banned_bot_stops_with_its_fix_and_no_reconnects() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    assert!(h.fake.close_socket(4915));
    h.until_health("failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(health.code.as_deref(), Some("qq.bot_banned"), "{health:?}");
    let action = health.action.clone().unwrap_or_default();
    assert!(action.contains("q.qq.com"), "{action}");
    assert!(
        action.contains("`scv-bridge"),
        "a command to copy: {action}"
    );
    assert!(health.command.is_some(), "{health:?}");
    let sockets = h.fake.connections();
    h.settle().await;
    assert_eq!(h.fake.connections(), sockets, "no fight for the link");
    h.stop().await;
}

#[tokio::test]
async fn events_the_bot_may_not_have_stop_the_account_at_identify() {
    let mut setup = Setup::owned();
    setup.fake.granted_intents = scv_qq::limits::INTENT_GROUP_AND_C2C;
    let h = Harness::start(setup).await;
    h.until_health("failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(
        health.code.as_deref(),
        Some("qq.intent_refused"),
        "{health:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn groups_pass_what_addresses_the_bot_and_strangers_there_get_nothing() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    h.fake.push_group_at(
        "GROUP00000000000000000000000001",
        "MEMBER0000000000000000000000001",
        "hi bot",
    );
    h.until_health("the group note", |c| {
        c.notes.iter().any(|n| n.text.contains("group member"))
    })
    .await;
    h.fake.push_c2c(OWNER, "private");
    h.until("the private answer", |f| f.sent().len() == 1).await;
    h.settle().await;
    assert_eq!(h.agent.prompts(), ["private"]);
    h.stop().await;
}

#[tokio::test]
async fn an_open_group_is_answered_in_the_group_in_reply() {
    let mut setup = Setup::owned();
    setup.table = "senders = \"anyone\"\n".into();
    let h = Harness::start(setup).await;
    h.connected().await;
    let group = "GROUP00000000000000000000000002";
    h.fake.push_group_all(
        group,
        "MEMBER0000000000000000000000002",
        "not for the bot",
        false,
    );
    let at = h
        .fake
        .push_group_at(group, "MEMBER0000000000000000000000002", "question");
    h.until("the group answer", |f| !f.sent().is_empty()).await;
    h.settle().await;
    let sent = h.sent_to(&format!("group:{group}"));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].content, "echo: question");
    assert_eq!(sent[0].msg_id.as_deref(), Some(at.id.as_str()));
    assert_eq!(
        h.agent.prompts(),
        ["question"],
        "the unaddressed one was dropped"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_silent_link_shows_and_is_replaced_then_resumes() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    assert!(h.health().last_success_unix_seconds.is_some());
    h.fake.ack_heartbeats(false);
    h.until_health("the zombie link shown", |c| {
        c.state == ComponentState::Disconnected
            && c.error.as_deref().is_some_and(|e| e.contains("heartbeat"))
    })
    .await;
    h.fake.ack_heartbeats(true);
    h.until("a resumed link", |f| !f.resumes().is_empty() && f.live())
        .await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.push_c2c(OWNER, "still here");
    h.until("the answer", |f| f.sent().len() == 1).await;
    assert_eq!(h.fake.identifies(), 1, "the session went on");
    h.stop().await;
}

#[tokio::test]
async fn a_session_qq_will_not_resume_is_said_in_status() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    h.fake.expire_sessions();
    assert!(h.fake.drop_socket());
    h.until_health("the gap note", |c| {
        c.notes
            .iter()
            .any(|n| n.text.contains("could not resume the gateway session"))
    })
    .await;
    h.until("a new session", |f| f.identifies() == 2 && f.live())
        .await;
    h.fake.push_c2c(OWNER, "new session");
    h.until("the answer", |f| f.sent().len() == 1).await;
    h.stop().await;
}
