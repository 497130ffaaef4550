//! The `acp` backend against the fake ACP agent (src/testing/fake_acp.rs): permissions allowed,
//! rejected, timed out and stopped, cancel mid-stream, the load replay dropped, unknown requests
//! answered, a crash mid-turn, and a stranger's session refusing every permission.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::agent::{
    AcpAgent, AcpOptions, Agent, AgentErrorKind, Approver, Decision, SessionKey, TurnEvent,
    TurnEvents, TurnRequest,
};
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::conversation::ChatId;
use scv_bridge::store::Store;
use scv_bridge::testing::fake_acp::{FakeAcp, ScriptedApprover};
use scv_bridge::testing::turn_request;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

fn key(chat: &str) -> SessionKey {
    SessionKey {
        account: AccountKey::new(Channel::Wechat, "phone"),
        chat: ChatId::new(chat),
    }
}

fn req(chat: &str, prompt: &str, approver: Option<Arc<dyn Approver>>) -> TurnRequest {
    TurnRequest {
        session: key(chat),
        approver,
        workspace: Some(PathBuf::from("/srv/work")),
        ..turn_request(chat, prompt)
    }
}

fn agent(fake: &FakeAcp, store: Option<Store>) -> Arc<AcpAgent> {
    let mut o = AcpOptions::new(Arc::new(fake.clone()));
    o.approval_timeout = Duration::from_secs(600);
    Arc::new(AcpAgent::new(o, store))
}

/// The error of a turn that must fail (`TurnOutput` has no Debug: it carries answer text).
fn failed<T>(r: Result<T, scv_bridge::agent::AgentError>) -> scv_bridge::agent::AgentError {
    match r {
        Ok(_) => panic!("the turn answered"),
        Err(e) => e,
    }
}

fn drain(rx: &mut UnboundedReceiver<TurnEvent>) -> Vec<TurnEvent> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

#[tokio::test]
async fn the_answer_streams_without_thoughts_and_the_agent_is_initialized_without_fs() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let (events, mut rx) = TurnEvents::channel();
    let mut r = req("c1", "hi", None);
    r.events = events;
    let out = a.turn(r, CancellationToken::new()).await.expect("answer");
    assert_eq!(out.text, "hello world");
    assert_eq!(out.usage.map(|u| u.total_tokens), Some(5));
    let got = drain(&mut rx);
    assert_eq!(
        got,
        vec![
            TurnEvent::Text("hello ".into()),
            TurnEvent::Text("world".into())
        ],
        "no thought reaches the chat"
    );
    let log = fake.log();
    assert_eq!(
        log.methods,
        vec!["initialize", "session/new", "session/prompt"]
    );
    let live = a.live();
    assert_eq!(live.agent.as_deref(), Some("fake-acp 9.9.9"));
    assert_eq!((live.running, live.sessions), (1, 1));
    // A second chat of the same account shares the process.
    a.turn(req("c2", "hi", None), CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(fake.log().launches, 1);
    assert_eq!(a.live().sessions, 2);
}

#[tokio::test]
async fn the_owners_yes_selects_allow_once_by_kind_and_no_ends_the_turn_as_stopped() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let (approver, mut asked) = ScriptedApprover::new();
    let approver: Arc<dyn Approver> = approver;
    let (events, mut ev) = TurnEvents::channel();
    let mut r = req("c1", "RUN:mkdir x", Some(approver.clone()));
    r.events = events;
    let turn = tokio::spawn({
        let a = a.clone();
        async move { a.turn(r, CancellationToken::new()).await }
    });
    let q = asked.recv().await.expect("asked");
    assert_eq!(q.request.tool, "mkdir x");
    assert!(q.request.summary.contains("/work"), "{}", q.request.summary);
    assert!(
        q.offer_always,
        "the agent offers allow_always: the approver decides whether the account allows it"
    );
    q.answer.send(Decision::AllowOnce).unwrap();
    let out = turn.await.unwrap().expect("answer");
    assert_eq!(out.text, "ran mkdir x");
    assert_eq!(
        fake.log().outcomes,
        vec![json!({"outcome": "selected", "optionId": "allow"})],
        "allow_once, though allow_always comes first"
    );
    assert!(drain(&mut ev).contains(&TurnEvent::Status("running: mkdir x".into())));

    let r = req("c1", "RUN:rm -rf /", Some(approver));
    let turn = tokio::spawn({
        let a = a.clone();
        async move { a.turn(r, CancellationToken::new()).await }
    });
    asked
        .recv()
        .await
        .unwrap()
        .answer
        .send(Decision::Reject)
        .unwrap();
    let out = turn.await.unwrap().expect("a stopped turn still answers");
    assert!(
        out.text.starts_with("Stopped: the command was not run"),
        "{}",
        out.text
    );
    assert_eq!(
        fake.log().outcomes[1],
        json!({"outcome": "selected", "optionId": "reject"})
    );
}

#[tokio::test(start_paused = true)]
async fn no_answer_in_time_selects_reject_and_the_chat_is_told() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let (approver, mut asked) = ScriptedApprover::new();
    let (events, mut ev) = TurnEvents::channel();
    let mut r = req("c1", "RUN:make", Some(approver));
    r.events = events;
    let turn = tokio::spawn({
        let a = a.clone();
        async move { a.turn(r, CancellationToken::new()).await }
    });
    let q = asked.recv().await.expect("asked");
    // The question stays open; the paused clock runs past the approval timeout.
    let out = turn.await.unwrap().expect("answer");
    assert!(q.withdrawn.is_cancelled(), "the question is withdrawn");
    assert_eq!(
        fake.log().outcomes,
        vec![json!({"outcome": "selected", "optionId": "reject"})],
        "the reject option, not cancelled"
    );
    assert!(out.text.starts_with("Stopped"));
    assert!(
        drain(&mut ev)
            .iter()
            .any(|e| matches!(e, TurnEvent::Status(s) if s.starts_with("Stopped"))),
        "the chat is told"
    );
    drop(q.answer);
}

#[tokio::test]
async fn stop_answers_the_pending_permission_cancelled_then_sends_session_cancel() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let (approver, mut asked) = ScriptedApprover::new();
    let cancel = CancellationToken::new();
    let turn = tokio::spawn({
        let (a, c) = (a.clone(), cancel.clone());
        async move { a.turn(req("c1", "RUN:sleep 100", Some(approver)), c).await }
    });
    let q = asked.recv().await.expect("asked");
    cancel.cancel();
    let err = failed(turn.await.unwrap());
    assert_eq!(err.kind, AgentErrorKind::Cancelled);
    assert!(q.withdrawn.is_cancelled());
    let log = fake.log();
    assert_eq!(log.outcomes, vec![json!({"outcome": "cancelled"})]);
    assert!(log.methods.contains(&"session/cancel".to_string()));
}

#[tokio::test]
async fn cancel_mid_stream_ends_the_turn_cancelled() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let (events, mut ev) = TurnEvents::channel();
    let mut r = req("c1", "SLOW", None);
    r.events = events;
    let cancel = CancellationToken::new();
    let turn = tokio::spawn({
        let (a, c) = (a.clone(), cancel.clone());
        async move { a.turn(r, c).await }
    });
    assert_eq!(ev.recv().await, Some(TurnEvent::Text("partial".into())));
    cancel.cancel();
    let err = failed(turn.await.unwrap());
    assert_eq!(err.kind, AgentErrorKind::Cancelled);
    fake.until(|l| l.methods.iter().any(|m| m == "session/cancel"))
        .await;
}

#[tokio::test]
async fn after_a_restart_the_session_is_loaded_and_its_replay_never_reaches_the_chat() {
    let fake = FakeAcp::new();
    let (store, _g) = Store::open_in_memory().expect("store");
    let a = agent(&fake, Some(store.clone()));
    a.turn(req("c1", "hi", None), CancellationToken::new())
        .await
        .expect("answer");
    a.close().await;
    // A new bridge on the same store: the stored session is loaded, not made anew.
    let b = agent(&fake, Some(store));
    let (events, mut ev) = TurnEvents::channel();
    let mut r = req("c1", "hi", None);
    r.events = events;
    let out = b.turn(r, CancellationToken::new()).await.expect("answer");
    assert_eq!(
        out.text, "hello world",
        "the replayed old answer is dropped"
    );
    assert!(
        !drain(&mut ev)
            .iter()
            .any(|e| matches!(e, TurnEvent::Text(t) if t.contains("old")))
    );
    let methods = fake.log().methods;
    assert_eq!(methods.iter().filter(|m| *m == "session/new").count(), 1);
    assert!(methods.contains(&"session/load".to_string()));
    // /new: a fresh session, not the stored one.
    b.reset(&key("c1")).await.unwrap();
    b.turn(req("c1", "hi", None), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        fake.log()
            .methods
            .iter()
            .filter(|m| *m == "session/new")
            .count(),
        2
    );
}

#[tokio::test]
async fn a_lost_session_is_replaced_with_a_note() {
    let fake = FakeAcp::new();
    let (store, _g) = Store::open_in_memory().expect("store");
    store
        .set_state(
            "wechat:phone",
            "acp_session:c1",
            r#"{"id":"gone","no_tools":false}"#,
        )
        .await
        .unwrap();
    let a = agent(&fake, Some(store));
    let out = a
        .turn(req("c1", "hi", None), CancellationToken::new())
        .await
        .expect("answer");
    assert!(
        out.text.starts_with("(The agent could not continue"),
        "{}",
        out.text
    );
    assert!(out.text.ends_with("hello world"));
}

#[tokio::test]
async fn fs_and_unknown_requests_are_answered_method_not_found() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let out = a
        .turn(req("c1", "FS", None), CancellationToken::new())
        .await
        .expect("the turn does not hang");
    assert_eq!(out.text, "fs answered");
    assert_eq!(fake.log().errors, vec![-32601, -32601]);
}

#[tokio::test(start_paused = true)]
async fn a_crash_mid_turn_is_an_end_with_the_stderr_tail_and_restarts() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let err = failed(
        a.turn(req("c1", "CRASH", None), CancellationToken::new())
            .await,
    );
    assert_eq!(err.kind, AgentErrorKind::Ended);
    assert!(err.message.contains("panic: boom"), "{}", err.message);
    assert_eq!(a.live().last_error.as_deref(), Some(err.message.as_str()));
    // The next turn restarts the agent (after the backoff) and resumes the session by load.
    let out = a
        .turn(req("c1", "hi", None), CancellationToken::new())
        .await
        .expect("answer after restart");
    assert_eq!(out.text, "hello world");
    let log = fake.log();
    assert_eq!(log.launches, 2);
    assert!(log.methods.contains(&"session/load".to_string()));
}

#[tokio::test]
async fn a_strangers_session_rejects_every_permission_in_read_only_mode() {
    let fake = FakeAcp::new();
    let a = agent(&fake, None);
    let (approver, mut asked) = ScriptedApprover::new();
    let mut r = req("stranger", "RUN:mkdir x", Some(approver));
    r.no_tools = true;
    r.auto_approve = true;
    let out = a.turn(r, CancellationToken::new()).await.expect("answer");
    assert!(out.text.starts_with("Stopped"));
    let log = fake.log();
    assert_eq!(
        log.outcomes,
        vec![json!({"outcome": "selected", "optionId": "reject"})]
    );
    assert_eq!(log.modes, vec!["read-only"]);
    assert!(
        log.prompts[0][0]["text"]
            .as_str()
            .unwrap()
            .contains("no tools")
    );
    assert!(asked.try_recv().is_err(), "nobody is asked");
}

#[tokio::test]
async fn auto_approve_selects_allow_once() {
    let fake = FakeAcp::new().with_resume();
    let a = agent(&fake, None);
    let mut r = req("c1", "RUN:ls", None);
    r.auto_approve = true;
    let out = a.turn(r, CancellationToken::new()).await.expect("answer");
    assert_eq!(out.text, "ran ls");
    assert_eq!(
        fake.log().outcomes,
        vec![json!({"outcome": "selected", "optionId": "allow"})]
    );
}
