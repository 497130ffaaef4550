//! An ACP agent that misbehaves while answering, against the fake ACP agent: a death (its
//! output closing, a line that is not UTF-8, a line past the limit) is an `Ended` turn that
//! says why; silence past the idle timeout ends the turn (waiting for the owner does not
//! count), and an agent deaf to the cancel is replaced; a stranger's session runs in a process
//! of its own, so its death never touches the owner's turn.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::agent::{
    AcpAgent, AcpOptions, Agent, AgentError, AgentErrorKind, Approver, Decision, TurnEvents,
    TurnRequest,
};
use scv_bridge::testing::fake_acp::{FakeAcp, ScriptedApprover};
use scv_bridge::testing::turn_request;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn req(chat: &str, prompt: &str) -> TurnRequest {
    TurnRequest {
        workspace: Some(PathBuf::from("/srv/work")),
        ..turn_request(chat, prompt)
    }
}

fn agent(fake: &FakeAcp, tweak: impl FnOnce(&mut AcpOptions)) -> Arc<AcpAgent> {
    let mut o = AcpOptions::new(Arc::new(fake.clone()));
    tweak(&mut o);
    Arc::new(AcpAgent::new(o, None))
}

/// The error of a turn that must fail (`TurnOutput` has no Debug: it carries answer text).
fn failed<T>(r: Result<T, AgentError>) -> AgentError {
    match r {
        Ok(_) => panic!("the turn answered"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn a_death_while_answering_is_an_end_that_says_why() {
    let fake = FakeAcp::new();
    let a = agent(&fake, |o| {
        o.max_line = 4096;
        o.restart_base = Duration::ZERO;
    });
    let cases = [
        (
            "CRASH",
            "(its output ended): thread 'main' panicked | panic: boom",
        ),
        ("GARBAGE", "(it wrote a line that is not UTF-8)"),
        ("LONGLINE:10000", "(it wrote a line longer than 4096 bytes)"),
    ];
    for (prompt, why) in cases {
        let e = failed(a.turn(req("c1", prompt), CancellationToken::new()).await);
        assert_eq!(e.kind, AgentErrorKind::Ended, "{prompt}: {}", e.message);
        assert!(
            e.message
                .starts_with("the agent process ended while answering")
                && e.message.contains(why),
            "{prompt}: {}",
            e.message
        );
    }
    // Each death took its process; the next turn has a new one and is answered.
    let out = a
        .turn(req("c1", "hi"), CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(out.text, "hello world");
    assert_eq!(fake.log().launches, 4);
}

#[tokio::test(start_paused = true)]
async fn silence_past_the_idle_timeout_ends_the_turn_and_a_deaf_agent_is_replaced() {
    let fake = FakeAcp::new();
    let a = agent(&fake, |o| {
        o.idle_timeout = Some(Duration::from_secs(30));
        o.cancel_grace = Duration::from_secs(5);
        o.restart_base = Duration::ZERO;
    });
    let t0 = Instant::now();
    let e = failed(a.turn(req("c1", "HANG"), CancellationToken::new()).await);
    assert_eq!(e.kind, AgentErrorKind::Ended);
    assert_eq!(e.message, "the agent sent nothing for 30 s");
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(30),
        "ended at the timeout"
    );
    assert!(fake.log().methods.contains(&"session/cancel".to_string()));
    // It ended the turn when asked: the same process serves on.
    a.turn(req("c1", "hi"), CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(fake.log().launches, 1);

    // Deaf to the cancel too: after the grace the process goes, and the next turn gets another.
    let t1 = Instant::now();
    let e = failed(a.turn(req("c1", "DEAF"), CancellationToken::new()).await);
    assert_eq!(e.message, "the agent sent nothing for 30 s");
    assert_eq!(t1.elapsed(), Duration::from_secs(35));
    a.turn(req("c1", "hi"), CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(fake.log().launches, 2);
}

#[tokio::test(start_paused = true)]
async fn waiting_for_the_owner_is_not_the_agents_silence() {
    let fake = FakeAcp::new();
    let a = agent(&fake, |o| o.idle_timeout = Some(Duration::from_secs(30)));
    let (approver, mut asked) = ScriptedApprover::new();
    let approver: Arc<dyn Approver> = approver;
    let mut r = req("c1", "RUN:mkdir x");
    r.approver = Some(approver);
    let turn = tokio::spawn({
        let a = a.clone();
        async move { a.turn(r, CancellationToken::new()).await }
    });
    let q = asked.recv().await.expect("asked");
    // The owner takes ten times the idle timeout to answer.
    scv_bridge::testing::let_time_pass(Duration::from_secs(300)).await;
    assert!(!q.withdrawn.is_cancelled(), "the question is still open");
    q.answer.send(Decision::AllowOnce).expect("answer");
    let out = turn.await.expect("join").expect("answer");
    assert_eq!(out.text, "ran mkdir x");
}

#[tokio::test]
async fn a_strangers_death_never_touches_the_owners_turn() {
    let fake = FakeAcp::new();
    let a = agent(&fake, |_| {});
    let (events, mut streamed) = TurnEvents::channel();
    let mut owner = req("owner", "SLOW");
    owner.events = events;
    let cancel = CancellationToken::new();
    let running = tokio::spawn({
        let (a, cancel) = (a.clone(), cancel.clone());
        async move { a.turn(owner, cancel).await }
    });
    // The owner's turn is under way (its first chunk came) when the stranger's message kills
    // the stranger's agent.
    streamed.recv().await.expect("the owner's turn streams");
    let mut stranger = req("stranger", "CRASH");
    stranger.no_tools = true;
    let e = failed(a.turn(stranger, CancellationToken::new()).await);
    assert_eq!(e.kind, AgentErrorKind::Ended);
    // The owner's turn is still running on its own process: it ends only when stopped.
    assert!(!running.is_finished());
    cancel.cancel();
    let e = failed(running.await.expect("join"));
    assert_eq!(e.kind, AgentErrorKind::Cancelled, "{}", e.message);
    assert_eq!(
        fake.log().launched,
        vec!["wechat-phone", "wechat-phone-guest"]
    );
}

/// A log sink for one test thread, waking waiters on every write.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>, Arc<tokio::sync::Notify>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        self.1.notify_waiters();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }

    /// Waits for a log line holding `what`; a few seconds without one fail the test.
    async fn until(&self, what: &str) -> String {
        let wait = async {
            loop {
                let woken = self.1.notified();
                let text = self.text();
                if text.contains(what) {
                    return text;
                }
                woken.await;
            }
        };
        match tokio::time::timeout(Duration::from_secs(10), wait).await {
            Ok(t) => t,
            Err(_) => panic!("no log line with {what:?}:\n{}", self.text()),
        }
    }
}

/// Everything this test binary logs at INFO and above, from every thread.
fn captured() -> &'static Captured {
    static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        captured
    })
}

/// Answers initialize and session/new, then on the prompt writes to stderr and exits 7.
const DYING: &str = r#"#!/bin/sh
read line
printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"sh-agent","version":"1"}}}'
read line
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}'
read line
echo "fatal: the model went away" >&2
exit 7
"#;

#[tokio::test]
async fn why_the_agent_ended_is_logged_at_info_with_its_stderr_and_no_message_text() {
    let dir = tempfile::tempdir().expect("dir");
    let script = dir.path().join("agent.sh");
    std::fs::write(&script, DYING).expect("script");
    let launcher = scv_bridge::agent::acp::CommandLauncher {
        program: "sh".into(),
        args: vec![script.to_string_lossy().into_owned()],
        env: Vec::new(),
        record_dir: None,
    };
    let a = AcpAgent::new(AcpOptions::new(Arc::new(launcher)), None);
    let log = captured();
    let e = failed(
        a.turn(req("c1", "PRIVATE-PROMPT-TEXT"), CancellationToken::new())
            .await,
    );
    assert_eq!(e.kind, AgentErrorKind::Ended);
    // Other tests of this binary log their agents' ends too (`acp_process`'s script exits 3 with
    // the same stderr): this one's alone exits 7.
    let text = log.until("reason=it exited: exit status: 7").await;
    let line = text
        .lines()
        .find(|l| l.contains("reason=it exited: exit status: 7"))
        .expect("the line");
    assert!(
        line.contains(" INFO ")
            && line.contains("the agent process ended")
            && line.contains("stderr=fatal: the model went away"),
        "{line}"
    );
    assert!(!text.contains("PRIVATE-PROMPT-TEXT"), "{text}");
}
