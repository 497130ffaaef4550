//! The long connection: another program taking the bot stops the account with its fix and no
//! reconnect; refused credentials stop it with the login fix; a dropped socket is dialled
//! again; hostile frames never panic.

use scv_bridge::protocol::ComponentState;
use scv_wecom::Options;

use crate::wecom::support::*;

#[tokio::test]
async fn another_program_taking_the_bot_stops_the_account_with_its_fix() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    // Another program subscribes as the same bot: the newest connection wins (§1.5).
    scv_wecom::login::check(&Options::with_url(h.fake.ws_url()), &h.fake.credentials())
        .await
        .expect("the other program subscribes");
    h.until_health("failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(
        health.code.as_deref(),
        Some("wecom.superseded"),
        "{health:?}"
    );
    let action = health.action.clone().unwrap_or_default();
    assert!(action.starts_with("stop the other program"), "{action}");
    assert!(
        action.ends_with("`scv-bridge channel enable wecom bot`"),
        "a command to copy: {action}"
    );
    assert_eq!(
        health.command.as_deref(),
        Some("scv-bridge channel enable wecom bot")
    );
    // Never dialled again: no kick-each-other loop.
    h.until("every socket closed", |f| f.live_connections() == 0)
        .await;
    let dialled = h.fake.accepted();
    h.settle().await;
    assert_eq!(h.fake.accepted(), dialled);
    assert_eq!(h.health().state, ComponentState::Failed);
    h.stop().await;
}

#[tokio::test]
async fn a_refused_secret_stops_the_account_with_the_login_fix() {
    let mut setup = Setup::owned();
    setup.credentials = Some(
        scv_bridge::secrets::Credentials::default()
            .with("bot_id", &setup.fake.bot_id)
            .with("secret", "not-the-secret"),
    );
    let h = Harness::start(setup).await;
    h.until_health("failed", |c| c.state == ComponentState::Failed)
        .await;
    let health = h.health();
    assert_eq!(
        health.code.as_deref(),
        Some("wecom.bad_credentials"),
        "{health:?}"
    );
    assert_eq!(
        health.command.as_deref(),
        Some("scv-bridge login wecom bot")
    );
    h.stop().await;
}

#[tokio::test]
async fn a_dropped_socket_is_dialled_again_and_messages_flow() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let first = h.fake.accepted();
    h.fake.drop_all();
    h.until("a new subscription", |f| {
        f.accepted() > first && f.subscribed()
    })
    .await;
    let back = h.fake.push_text(OWNER, "back?");
    assert!(back.delivered);
    h.until("the answer", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == back.req_id && b.finished)
    })
    .await;
    assert_eq!(h.health().state, ComponentState::Connected);
    assert_eq!(h.fake.pings_with_body(), 0, "pings carry no body");
    h.stop().await;
}

#[tokio::test]
async fn hostile_frames_never_panic_and_the_account_goes_on() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    h.fake.push_raw("not json at all");
    h.fake.push_raw("[1,2,3]");
    h.fake
        .push_raw(r#"{"cmd":"aibot_msg_callback","headers":{"req_id":"R1"},"body":{}}"#);
    h.fake.push_raw(
        "{\"cmd\":\"aibot_msg_callback\",\"headers\":{\"req_id\":\"R2\"},\"body\":{\"msgid\":\"C1\",\"chattype\":\"single\",\"from\":{\"userid\":\"ZhangSan\"},\"msgtype\":\"text\",\"text\":{\"content\":\"ctl\u{0b}bytes\u{1f}here\"}}}",
    );
    h.fake
        .push_other(OWNER, "appmsg", serde_json::json!({"title": "x"}));
    let huge = "字".repeat(200_000);
    h.fake.push_text(OWNER, &huge);
    let after = h.fake.push_text(OWNER, "after");
    h.until("the answer after", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == after.req_id && b.finished)
    })
    .await;
    h.settle().await;
    assert_eq!(h.health().state, ComponentState::Connected);
    let prompts = h.agent.prompts();
    assert_eq!(prompts.first().map(String::as_str), Some("ctlbyteshere"));
    assert_eq!(prompts.last().map(String::as_str), Some("after"));
    // The unsupported type is told to the owner, in a direct chat.
    h.until("the unsupported notice", |f| {
        f.sent().iter().any(|s| {
            s.body
                .pointer("/markdown/content")
                .and_then(|v| v.as_str())
                .is_some_and(|t| t.contains("appmsg"))
        })
    })
    .await;
    h.stop().await;
}

/// An agent that never answers: the turn says it started, then waits until it is cancelled
/// (the daemon stops).
struct Hanging(tokio::sync::watch::Sender<bool>);

impl scv_bridge::agent::Agent for Hanging {
    fn turn(
        &self,
        _req: scv_bridge::agent::TurnRequest,
        cancel: tokio_util::sync::CancellationToken,
    ) -> futures_util::future::BoxFuture<
        '_,
        Result<scv_bridge::agent::TurnOutput, scv_bridge::agent::AgentError>,
    > {
        Box::pin(async move {
            self.0.send_replace(true);
            cancel.cancelled().await;
            Err(scv_bridge::agent::AgentError::new(
                scv_bridge::agent::AgentErrorKind::Cancelled,
                "cancelled",
            ))
        })
    }

    fn reset<'a>(
        &'a self,
        _session: &'a scv_bridge::agent::SessionKey,
    ) -> futures_util::future::BoxFuture<'a, Result<(), scv_bridge::agent::AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_message_journaled_before_a_restart_is_answered_once_proactively() {
    let (started, mut turn) = tokio::sync::watch::channel(false);
    let mut setup = Setup::owned();
    setup.other_agent = Some(std::sync::Arc::new(Hanging(started)));
    let h = Harness::start(setup).await;
    h.connected().await;
    let asked = h.fake.push_text(OWNER, "still there after a restart?");
    // Journaled: the turn started, and hangs until the daemon stops.
    let began = tokio::time::timeout(WAIT, turn.wait_for(|s| *s)).await;
    assert!(matches!(began, Ok(Ok(_))), "the turn never started");
    let (fake, dir, config) = h.stop().await;
    // The old socket and its req_ids are gone: the answer goes through aibot_send_msg.
    let agent = TestAgent::echo();
    let h = Harness::start_daemon(fake, dir, config, agent.clone(), None).await;
    h.connected().await;
    h.until("the proactive answer", |f| {
        f.sent().iter().any(|s| s.cmd == "aibot_send_msg")
    })
    .await;
    h.settle().await;
    assert_eq!(h.sent_to(OWNER), ["echo: still there after a restart?"]);
    assert_eq!(h.reply_to(&asked.req_id), None);
    assert_eq!(agent.prompts(), ["still there after a restart?"]);
    h.stop().await;
}
