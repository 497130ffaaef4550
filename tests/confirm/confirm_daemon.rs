//! Confirm questions over the daemon's real control socket, and `scv-bridge confirm`'s exit codes.

use crate::confirm_support as support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::client::{self, ClientError};
use scv_bridge::config::Config;
use scv_bridge::confirm::Clock;
use scv_bridge::confirm::cli::{self, Options, Outcome};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::*;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A daemon with one MemoryChannel account `wechat:phone` and a manual confirm clock.
struct TestDaemon {
    d: RunningDaemon,
    conv: Arc<Conversation>,
    agent: Arc<EchoAgent>,
    channel: Arc<MemoryChannel>,
    clock: Clock,
}

async fn start(dir: &Path, notify: bool) -> TestDaemon {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let path = dir.join("config.toml");
    let notify = if notify {
        "notify = \"wechat:phone\"\n"
    } else {
        ""
    };
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\ntimezone = \"Asia/Shanghai\"\n{notify}[wechat.phone]\n",
        state.display(),
        dir.join("run").join("daemon.sock").display()
    );
    std::fs::write(&path, text).expect("config");
    save_owner(&state);
    let config = Config::load(&path).expect("load config");
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let clock = Clock::manual(T0_MS);
    let slot = Arc::new(std::sync::Mutex::new(None));
    let (ch, ck, sl) = (channel.clone(), clock.clone(), slot.clone());
    let wire = move |creds: &scv_bridge::secrets::CredentialStore,
                     store: &scv_bridge::store::Store,
                     registry: &Arc<_>| {
        let agent = Arc::new(EchoAgent::default());
        let (confirm, conv) =
            daemon::confirm_and_pipeline(store, creds, ck, registry, agent.clone());
        let factory: Arc<dyn ComponentFactory> = Arc::new(MemoryFactory {
            conv: conv.clone(),
            channel: ch,
        });
        *sl.lock().expect("lock") = Some((conv.clone(), agent));
        Wiring {
            factory,
            conversation: Some(conv),
            confirm: Some(confirm),
        }
    };
    let d = daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .expect("daemon");
    scv_bridge::testing::wait_for_state(
        &d.core.registry(),
        "wechat:phone",
        ComponentState::Connected,
    )
    .await;
    let (conv, agent) = slot.lock().expect("lock").take().expect("conversation");
    TestDaemon {
        d,
        conv,
        agent,
        channel,
        clock,
    }
}

impl TestDaemon {
    async fn ask(&self, timeout: Option<u64>) -> Result<DaemonStatus, ClientError> {
        client::request(
            &self.d.socket,
            DaemonCommand::ConfirmAsk {
                question: "Deploy?".into(),
                parent: None,
                timeout_seconds: timeout,
            },
        )
        .await
    }

    async fn owner_says(&self, id: &str, text: &str) {
        self.conv
            .accept(vec![msg(id, OWNER, text)])
            .await
            .expect("accept");
    }
}

async fn raw_line(socket: &Path, line: &str) -> serde_json::Value {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .expect("connect");
    let (r, mut w) = stream.into_split();
    w.write_all(line.as_bytes()).await.expect("write");
    let mut answer = String::new();
    BufReader::new(r)
        .read_line(&mut answer)
        .await
        .expect("read");
    serde_json::from_str(&answer).expect("json")
}

#[tokio::test]
async fn confirm_ask_answers_at_once_with_a_pending_question_in_the_exact_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true).await;
    let v = raw_line(
        &t.d.socket,
        "{\"type\":\"daemon.control\",\"request_id\":\"r3\",\"command\":{\"action\":\"confirm_ask\",\"question\":\"Deploy release 1.4 to production?\",\"timeout_seconds\":600}}\n",
    )
    .await;
    assert_eq!(v["type"], "daemon.status");
    assert_eq!(v["request_id"], "r3");
    assert_eq!(v["status"]["components"], serde_json::json!([]));
    assert_eq!(
        v["status"]["delegations"],
        serde_json::json!({"active":0,"reaped":0})
    );
    let c = &v["status"]["confirm"];
    assert_eq!(c["state"], "pending");
    assert_eq!(c["chat"], "wechat:phone");
    assert_eq!(c["deadline_unix_seconds"], T0_MS / 1000 + 600);
    let id = c["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("q-"));
    assert_eq!(c.as_object().map(|o| o.len()), Some(4));

    // The default wait is 30 minutes; confirm_status reports the same question.
    let s = t.ask(None).await.expect("ask");
    let info = s.confirm.expect("confirm");
    assert_eq!(info.deadline_unix_seconds, T0_MS / 1000 + 1800);
    let again = client::request(
        &t.d.socket,
        DaemonCommand::ConfirmStatus {
            id: info.id.clone(),
        },
    )
    .await
    .expect("status");
    assert_eq!(again.confirm, Some(info));
    // A plain status carries no confirm.
    let plain = client::request(&t.d.socket, DaemonCommand::Status)
        .await
        .expect("status");
    assert_eq!(plain.confirm, None);
    t.d.stop().await;
}

#[tokio::test]
async fn too_long_a_timeout_is_invalid_and_an_unknown_id_is_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true).await;
    match t.ask(Some(14_401)).await {
        Err(ClientError::Daemon { code, message }) => {
            assert_eq!(code, ErrorCode::InvalidRequest);
            assert!(message.contains("14400"), "{message}");
        }
        other => panic!("expected invalid_request, got {other:?}"),
    }
    assert!(t.ask(Some(14_400)).await.is_ok());
    for id in ["q-999", "nonsense"] {
        match client::request(&t.d.socket, DaemonCommand::ConfirmStatus { id: id.into() }).await {
            Err(ClientError::Daemon { code, .. }) => assert_eq!(code, ErrorCode::NotFound),
            other => panic!("expected not_found, got {other:?}"),
        }
    }
    t.d.stop().await;
}

#[tokio::test]
async fn without_notify_or_parent_the_answer_is_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), false).await;
    let info = t.ask(None).await.expect("ask").confirm.expect("confirm");
    assert_eq!(info.state, ConfirmState::Failed);
    // `--chat wechat:phone` (a two-part parent) means that account's owner chat.
    let s = client::request(
        &t.d.socket,
        DaemonCommand::ConfirmAsk {
            question: "Deploy?".into(),
            parent: Some("wechat:phone".into()),
            timeout_seconds: None,
        },
    )
    .await
    .expect("ask");
    assert_eq!(s.confirm.map(|c| c.state), Some(ConfirmState::Pending));
    within(t.channel.wait_sent(1)).await;
    assert_eq!(t.channel.sent()[0].chat.as_str(), OWNER);
    t.d.stop().await;
}

fn opts(timeout: Option<u64>, chat: Option<&str>, poll_ms: u64) -> Options {
    Options {
        question: "Deploy?".into(),
        timeout_seconds: timeout,
        chat: chat.map(str::to_string),
        poll_every: Duration::from_millis(poll_ms),
    }
}

fn never() -> impl std::future::Future<Output = ()> {
    std::future::pending()
}

/// Runs the CLI in a task; the owner answers `answer` once the question is in the chat.
async fn cli_with_answer(t: &TestDaemon, answer: &str) -> Outcome {
    let socket = t.d.socket.clone();
    let run =
        tokio::spawn(async move { cli::run(&socket, &opts(None, None, 10), never(), None).await });
    within(t.channel.wait_sent(t.channel.sent().len() + 1)).await;
    t.owner_says(&format!("a-{answer}"), answer).await;
    within(run).await.expect("cli task")
}

#[tokio::test]
async fn the_command_exits_0_on_yes_and_1_on_no() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true).await;
    let yes = cli_with_answer(&t, "yes").await;
    assert_eq!(yes.exit_code(), 0, "{yes:?}");
    assert_eq!(yes.message(), "yes");
    // Wait for "Got it" before the next question, so the next one is the 3rd message.
    within(t.channel.wait_sent(2)).await;
    let no = cli_with_answer(&t, "n").await;
    assert_eq!(no.exit_code(), 1, "{no:?}");
    assert_eq!(no.message(), "no");
    t.d.stop().await;
}

#[tokio::test]
async fn the_command_exits_1_on_expired_and_withdrawn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true).await;
    let socket = t.d.socket.clone();
    let run =
        tokio::spawn(
            async move { cli::run(&socket, &opts(Some(60), None, 10), never(), None).await },
        );
    within(t.channel.wait_sent(1)).await;
    t.clock.advance(Duration::from_secs(60));
    let expired = within(run).await.expect("cli");
    assert_eq!((expired.exit_code(), &expired), (1, &expired),);
    assert!(matches!(&expired, Outcome::Final(i) if i.state == ConfirmState::Expired));

    // Polls too far apart: the daemon withdraws the question, and the command says so.
    let socket = t.d.socket.clone();
    let run =
        tokio::spawn(async move { cli::run(&socket, &opts(None, None, 200), never(), None).await });
    within(t.channel.wait_sent(3)).await;
    t.clock.advance(Duration::from_secs(61));
    let withdrawn = within(run).await.expect("cli");
    assert!(
        matches!(&withdrawn, Outcome::Final(i) if i.state == ConfirmState::Withdrawn),
        "{withdrawn:?}"
    );
    assert_eq!(withdrawn.exit_code(), 1);
    t.d.stop().await;
}

#[tokio::test]
async fn the_command_exits_2_on_failed_and_on_errors_and_1_when_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true).await;
    let failed = cli::run(
        &t.d.socket,
        &opts(None, Some("wechat:ghost"), 10),
        never(),
        None,
    )
    .await;
    assert!(
        matches!(&failed, Outcome::Final(i) if i.state == ConfirmState::Failed),
        "{failed:?}"
    );
    assert_eq!(failed.exit_code(), 2);

    let invalid = cli::run(&t.d.socket, &opts(Some(14_401), None, 10), never(), None).await;
    assert!(matches!(invalid, Outcome::Error(_)), "{invalid:?}");
    assert_eq!(invalid.exit_code(), 2);

    let absent = cli::run(
        &dir.path().join("nothing.sock"),
        &opts(None, None, 10),
        never(),
        None,
    )
    .await;
    assert_eq!(absent.exit_code(), 2);

    // Ctrl-C: stop polling at once, with a live line that is cleared at the end.
    let mut live = Vec::new();
    let stopped = cli::run(
        &t.d.socket,
        &opts(None, None, 10),
        async {},
        Some(&mut live as &mut (dyn std::io::Write + Send)),
    )
    .await;
    assert!(matches!(stopped, Outcome::Stopped(_)), "{stopped:?}");
    assert_eq!(stopped.exit_code(), 1);
    let live = String::from_utf8(live).expect("utf8");
    assert!(
        live.contains("waiting for an answer in wechat:phone"),
        "{live}"
    );
    assert!(live.ends_with("\r\x1b[2K"));
    t.d.stop().await;
}

#[tokio::test]
async fn answers_through_the_daemon_never_reach_the_agent_and_restart_keeps_questions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true).await;
    let info = t
        .ask(Some(600))
        .await
        .expect("ask")
        .confirm
        .expect("confirm");
    within(t.channel.wait_sent(1)).await;
    t.d.stop().await;

    let t = start(dir.path(), true).await;
    let s = client::request(
        &t.d.socket,
        DaemonCommand::ConfirmStatus {
            id: info.id.clone(),
        },
    )
    .await
    .expect("status");
    assert_eq!(s.confirm.as_ref(), Some(&info));
    t.owner_says("y1", "y").await;
    within(t.channel.wait_sent(1)).await;
    assert!(t.channel.sent()[0].text.starts_with("Got it: yes"));
    let s = client::request(
        &t.d.socket,
        DaemonCommand::ConfirmStatus {
            id: info.id.clone(),
        },
    )
    .await
    .expect("status");
    assert_eq!(s.confirm.map(|c| c.state), Some(ConfirmState::Yes));
    assert!(
        t.agent.prompts().is_empty(),
        "answers never reach the agent"
    );
    t.d.stop().await;
}
