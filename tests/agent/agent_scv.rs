//! The `scv` backend against the fake SCV server (Unix socket) and a fake agent child process.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::agent::{
    Agent, AgentErrorKind, ScvAgent, ScvOptions, SessionKey, Transport, TurnOutput, TurnRequest,
    Usage,
};
use scv_bridge::config::{AccountKey, AgentBackend, AgentConfig, Channel};
use scv_bridge::conversation::ChatId;
use scv_bridge::testing::fake_scv::{FakeScv, Resolved};
use tokio_util::sync::CancellationToken;

fn session(chat: &str) -> SessionKey {
    SessionKey {
        account: AccountKey::new(Channel::Feishu, "work"),
        chat: ChatId::new(chat),
    }
}

/// An owner's turn: tools allowed, approvals automatic.
fn owner(chat: &str, prompt: &str) -> TurnRequest {
    TurnRequest {
        session: session(chat),
        prompt: prompt.into(),
        no_tools: false,
        auto_approve: true,
        approver: None,
        workspace: Some(PathBuf::from("/srv/work")),
        channel_label: "Feishu",
        language: Default::default(),
        attachments: Vec::new(),
        events: Default::default(),
        owner_tools: None,
    }
}

/// A stranger's turn: no tools.
fn stranger(chat: &str, prompt: &str) -> TurnRequest {
    TurnRequest {
        no_tools: true,
        auto_approve: false,
        approver: None,
        ..owner(chat, prompt)
    }
}

fn opts(transport: Transport) -> ScvOptions {
    let mut o = ScvOptions::new(transport);
    o.restart_base = Duration::from_millis(20);
    o.restart_cap = Duration::from_millis(100);
    o.handshake_timeout = Duration::from_secs(10);
    o.turn_timeout = Some(Duration::from_secs(20));
    o
}

async fn start(dir: &Path) -> (FakeScv, ScvAgent) {
    let fake = FakeScv::start(&dir.join("agent.sock")).await.expect("fake");
    let agent = ScvAgent::new(opts(Transport::Socket(fake.path().into())));
    (fake, agent)
}

async fn ok(agent: &ScvAgent, req: TurnRequest) -> TurnOutput {
    match agent.turn(req, CancellationToken::new()).await {
        Ok(o) => o,
        Err(e) => panic!("turn failed: {e:?}"),
    }
}

async fn err(agent: &ScvAgent, req: TurnRequest) -> scv_bridge::agent::AgentError {
    match agent.turn(req, CancellationToken::new()).await {
        Ok(o) => panic!("turn answered {:?}", o.text),
        Err(e) => e,
    }
}

#[tokio::test]
async fn answers_over_one_session_per_chat_with_the_owner_policy() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path()).await;
    let out = ok(&agent, owner("c1", "hello")).await;
    assert_eq!(out.text, "echo: hello");
    assert_eq!(
        out.usage,
        Some(Usage {
            prompt_tokens: 12,
            completion_tokens: 3,
            total_tokens: 15,
            estimated: false
        })
    );
    assert_eq!(ok(&agent, owner("c1", "again")).await.text, "echo: again");
    let r = fake.recorded();
    assert_eq!(
        (r.connections, r.sessions.len()),
        (1, 1),
        "one session reused"
    );
    let s = &r.sessions[0];
    assert_eq!(s.cwd, "/srv/work");
    assert_eq!(s.channel.as_deref(), Some("Feishu"));
    assert_eq!((s.no_tools, s.auto_approve), (Some(false), Some(true)));
    assert_eq!(r.prompts, ["hello", "again"]);
    agent.close().await;
}

#[tokio::test]
async fn a_stranger_gets_a_tool_free_session_and_a_policy_change_a_new_one() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path()).await;
    let mut asks_auto = stranger("c1", "hi");
    asks_auto.auto_approve = true;
    ok(&agent, asks_auto).await;
    ok(&agent, owner("c1", "now the owner")).await;
    let r = fake.recorded();
    assert_eq!(r.sessions.len(), 2);
    assert_eq!(
        (r.sessions[0].no_tools, r.sessions[0].auto_approve),
        (Some(true), Some(false)),
        "a tool-free session never auto-approves"
    );
    assert_eq!(
        (r.sessions[1].no_tools, r.sessions[1].auto_approve),
        (Some(false), Some(true))
    );
}

#[tokio::test]
async fn stray_approvals_are_denied_without_tools_and_approved_for_the_owner() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path()).await;
    assert_eq!(
        ok(&agent, stranger("c1", "[approval]")).await.text,
        "denied"
    );
    assert_eq!(ok(&agent, owner("c2", "[approval]")).await.text, "approved");
    let approvals: Vec<bool> = fake
        .recorded()
        .approvals
        .iter()
        .map(|a| a.approved)
        .collect();
    assert_eq!(approvals, [false, true]);
    let first: &Resolved = &fake.recorded().approvals[0];
    assert!(first.approval_id.starts_with('a'));
}

#[tokio::test]
async fn the_last_step_is_the_answer_and_unknown_events_are_ignored() {
    let dir = tempfile::tempdir().expect("dir");
    let (_fake, agent) = start(dir.path()).await;
    let out = ok(&agent, owner("c1", "[steps] [gap]")).await;
    assert_eq!(out.text, "final answer");
    assert_eq!(out.usage, None);
}

#[tokio::test]
async fn a_failed_turn_is_failed_and_the_session_goes_on() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path()).await;
    let e = err(&agent, owner("c1", "[fail]")).await;
    assert_eq!(e.kind, AgentErrorKind::Failed);
    assert!(e.message.contains("scripted failure"), "{}", e.message);
    ok(&agent, owner("c1", "next")).await;
    assert_eq!(fake.recorded().connections, 1);
}

#[tokio::test]
async fn cancel_sends_turn_cancel_and_returns_promptly() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path()).await;
    let agent = Arc::new(agent);
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel) = (agent.clone(), cancel.clone());
        tokio::spawn(async move { agent.turn(owner("c1", "[hang]"), cancel).await })
    };
    fake.wait(|r| r.prompts.len() == 1).await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("prompt")
        .expect("join");
    assert_eq!(out.err().map(|e| e.kind), Some(AgentErrorKind::Cancelled));
    fake.wait(|r| r.cancels.len() == 1).await;
    assert!(fake.recorded().cancels[0].starts_with('t'));
    // The late `turn.cancelled` of the old turn does not end the next one.
    assert_eq!(ok(&agent, owner("c1", "after")).await.text, "echo: after");
    assert_eq!(
        fake.recorded().connections,
        1,
        "the session survives a cancel"
    );
}

#[tokio::test]
async fn a_turn_past_its_timeout_is_cancelled_and_unavailable() {
    let dir = tempfile::tempdir().expect("dir");
    let fake = FakeScv::start(&dir.path().join("a.sock"))
        .await
        .expect("fake");
    let mut o = opts(Transport::Socket(fake.path().into()));
    o.turn_timeout = Some(Duration::from_millis(300));
    let agent = ScvAgent::new(o);
    let e = err(&agent, owner("c1", "[hang]")).await;
    assert_eq!(e.kind, AgentErrorKind::Unavailable);
    assert!(e.message.contains("did not answer"), "{}", e.message);
    fake.wait(|r| r.cancels.len() == 1).await;
}

#[tokio::test]
async fn reset_sends_session_clear() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path()).await;
    agent.reset(&session("c1")).await.expect("nothing to clear");
    ok(&agent, owner("c1", "remember me")).await;
    agent.reset(&session("c1")).await.expect("reset");
    fake.wait(|r| !r.clears.is_empty()).await;
    let r = fake.recorded();
    assert_eq!(r.clears, [r.sessions[0].session_id.clone()]);
}

#[tokio::test]
async fn a_dropped_connection_is_unavailable_then_reopened() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path()).await;
    ok(&agent, owner("c1", "first")).await;
    let e = err(&agent, owner("c1", "[die]")).await;
    assert_eq!(e.kind, AgentErrorKind::Unavailable);
    assert_eq!(agent.restarts(&session("c1")), 0);
    assert_eq!(ok(&agent, owner("c1", "back")).await.text, "echo: back");
    assert_eq!(agent.restarts(&session("c1")), 1);
    assert_eq!(fake.recorded().connections, 2);
}

#[tokio::test]
async fn an_overlong_line_is_an_error_not_a_buffer() {
    let dir = tempfile::tempdir().expect("dir");
    let fake = FakeScv::start(&dir.path().join("a.sock"))
        .await
        .expect("fake");
    fake.set_huge_line_bytes(200 * 1024);
    let mut o = opts(Transport::Socket(fake.path().into()));
    o.max_line = 64 * 1024;
    let agent = ScvAgent::new(o);
    let e = err(&agent, owner("c1", "[huge]")).await;
    assert_eq!(e.kind, AgentErrorKind::Unavailable);
    assert!(e.message.contains("longer than 65536"), "{}", e.message);
    assert_eq!(ok(&agent, owner("c1", "ok")).await.text, "echo: ok");
}

#[tokio::test(start_paused = true)]
async fn restarts_back_off_instead_of_spinning() {
    let dir = tempfile::tempdir().expect("dir");
    let mut o = opts(Transport::Socket(dir.path().join("nobody-listens.sock")));
    o.restart_base = Duration::from_secs(1);
    o.restart_cap = Duration::from_secs(4);
    let agent = Arc::new(ScvAgent::new(o));
    let t0 = tokio::time::Instant::now();
    let mut at = Vec::new();
    for _ in 0..4 {
        let e = err(&agent, owner("c1", "hi")).await;
        assert_eq!(e.kind, AgentErrorKind::Unavailable);
        at.push(t0.elapsed().as_secs());
    }
    assert_eq!(at, [0, 1, 3, 7], "waits of 1, 2 and 4 s (the cap)");
    // A cancel during the backoff ends the turn at once.
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel) = (agent.clone(), cancel.clone());
        tokio::spawn(async move { agent.turn(owner("c1", "hi"), cancel).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    let out = task.await.expect("join");
    assert_eq!(out.err().map(|e| e.kind), Some(AgentErrorKind::Cancelled));
    assert_eq!(t0.elapsed().as_millis(), 7500);
}

fn fixture() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agent_fake_scv.py"
    )
    .to_string()
}

fn child_log(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn a_child_gets_scv_parent_is_restarted_after_death_and_killed_at_close() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("child.log");
    let agent = ScvAgent::new(opts(Transport::Command {
        program: "python3".into(),
        args: vec![
            fixture(),
            "--log".into(),
            log.to_string_lossy().into_owned(),
        ],
    }));
    let out = ok(&agent, stranger("chat-1", "hi")).await;
    assert!(
        out.text.starts_with("parent=feishu:work:chat-1 pid="),
        "{}",
        out.text
    );
    assert!(out.text.ends_with("echo: hi"));
    let e = err(&agent, stranger("chat-1", "[die]")).await;
    assert_eq!(e.kind, AgentErrorKind::Unavailable);
    let again = ok(&agent, stranger("chat-1", "again")).await;
    assert_eq!(agent.restarts(&session("chat-1")), 1);
    let entries = child_log(&log);
    let starts: Vec<_> = entries.iter().filter(|e| e["event"] == "start").collect();
    assert_eq!(starts.len(), 2);
    assert!(starts.iter().all(|s| s["parent"] == "feishu:work:chat-1"));
    let session_start = entries
        .iter()
        .find(|e| e["event"] == "session.start")
        .expect("session.start logged");
    assert_eq!(session_start["no_tools"], true);
    assert_eq!(session_start["channel"], "Feishu");
    assert_eq!(session_start["cwd"], "/srv/work");
    let pid = starts[1]["pid"].as_u64().expect("pid");
    assert!(again.text.contains(&format!("pid={pid} ")));
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    agent.close().await;
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the child is killed and reaped at close"
    );
}

#[tokio::test]
async fn a_missing_program_is_unavailable() {
    let agent = ScvAgent::new(opts(Transport::Command {
        program: "/nonexistent/scv-agent".into(),
        args: vec![],
    }));
    let e = err(&agent, owner("c1", "hi")).await;
    assert_eq!(e.kind, AgentErrorKind::Unavailable);
    assert!(e.message.contains("cannot start"), "{}", e.message);
}

#[tokio::test]
async fn the_factory_builds_scv_from_config() {
    let (store, _g) = scv_bridge::store::Store::open_in_memory().expect("store");
    let dir = tempfile::tempdir().expect("dir");
    let (fake, _) = start(dir.path()).await;
    let cfg = AgentConfig {
        backend: AgentBackend::Scv,
        socket: Some(fake.path().to_string_lossy().into_owned()),
        ..AgentConfig::default()
    };
    let agent = scv_bridge::agent::from_config(&cfg, store.clone()).expect("agent");
    let out = agent
        .turn(owner("c1", "via factory"), CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(out.text, "echo: via factory");
    let both = AgentConfig {
        command: Some("scv".into()),
        ..cfg
    };
    assert!(scv_bridge::agent::from_config(&both, store).is_err());
}
