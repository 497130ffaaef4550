//! The `acp` backend driving the REAL codex-acp and claude-agent-acp (installed by `.ci/run` from
//! npm into the directory `SCV_ACP_AGENTS` names) against local fake models: the owner's "make a
//! directory x" asks for the shell tool, the owner is asked, a yes makes the directory and the
//! answer arrives; a no runs nothing; a stranger's identical request never runs.
//!
//! Without `SCV_ACP_AGENTS` the tests count as ignored, with the reason; with it set (CI) a
//! missing agent fails. A `harness = false` test (libtest-mimic), so the skip is decided when
//! the tests run and shows in the count.

use crate::acp_support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::agent::acp::CommandLauncher;
use scv_bridge::agent::{
    AcpAgent, AcpOptions, Agent, Approver, Decision, SessionKey, TurnEvents, TurnOutput,
    TurnRequest,
};
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::conversation::ChatId;
use scv_bridge::testing::fake_acp::ScriptedApprover;
use scv_bridge::testing::fake_models::{FakeModels, MADE};
use tokio_util::sync::CancellationToken;

/// How long one real turn may take before the test fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(180);

/// The agent started directly, every variable given to it (no daemon in between).
fn launcher(cmd: acp_support::AgentCmd) -> CommandLauncher {
    CommandLauncher {
        program: cmd.program,
        args: cmd.args,
        env: cmd.env.into_iter().chain(cmd.secret_env).collect(),
        record_dir: None,
    }
}

fn req(chat: &str, work: &Path, approver: Option<Arc<dyn Approver>>) -> TurnRequest {
    TurnRequest {
        session: SessionKey {
            account: AccountKey::new(Channel::Wechat, "phone"),
            chat: ChatId::new(chat),
        },
        prompt: "make a directory x".into(),
        no_tools: false,
        auto_approve: false,
        approver,
        workspace: Some(work.to_path_buf()),
        channel_label: "WeChat",
        language: Default::default(),
        attachments: Vec::new(),
        events: TurnEvents::none(),
        owner_tools: None,
    }
}

async fn within(a: &Arc<AcpAgent>, r: TurnRequest) -> TurnOutput {
    let turn = a.turn(r, CancellationToken::new());
    match tokio::time::timeout(PATIENCE, turn).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("the turn failed: {e}"),
        Err(_) => panic!("the turn did not end within {PATIENCE:?}"),
    }
}

/// Yes, no and a stranger against one agent; each in its own workspace.
async fn drive(make: impl Fn(&Path, &FakeModels) -> acp_support::AgentCmd) {
    let models = FakeModels::start().await.expect("fake models");
    let tmp = tempfile::tempdir().unwrap();
    let launcher = launcher(make(&tmp.path().join("home"), &models));
    let a = Arc::new(AcpAgent::new(AcpOptions::new(Arc::new(launcher)), None));
    let (approver, mut asked) = ScriptedApprover::new();
    let approver: Arc<dyn Approver> = approver;

    // Yes: asked, the directory is made, the answer arrives.
    let yes = tmp.path().join("yes");
    std::fs::create_dir(&yes).unwrap();
    let turn = tokio::spawn({
        let (a, r) = (a.clone(), req("yes", &yes, Some(approver.clone())));
        async move { within(&a, r).await }
    });
    let q = tokio::time::timeout(PATIENCE, asked.recv())
        .await
        .expect("asked in time")
        .expect("asked");
    assert!(
        format!("{} {}", q.request.tool, q.request.summary).contains("mkdir x"),
        "the question names the command: {} / {}",
        q.request.tool,
        q.request.summary
    );
    let said_yes = Instant::now();
    q.answer.send(Decision::AllowOnce).unwrap();
    let out = turn.await.unwrap();
    eprintln!("acp_real: yes to answer {:?}", said_yes.elapsed());
    assert!(yes.join("x").is_dir(), "the directory exists");
    assert!(out.text.contains(MADE), "the answer arrives: {}", out.text);

    // No: nothing runs, the chat hears it stopped (or the agent says it did not run it).
    let no = tmp.path().join("no");
    std::fs::create_dir(&no).unwrap();
    let turn = tokio::spawn({
        let (a, r) = (a.clone(), req("no", &no, Some(approver.clone())));
        async move { within(&a, r).await }
    });
    let q = tokio::time::timeout(PATIENCE, asked.recv())
        .await
        .expect("asked in time")
        .expect("asked");
    q.answer.send(Decision::Reject).unwrap();
    let out = turn.await.unwrap();
    assert!(!no.join("x").exists(), "nothing ran");
    assert!(!out.text.trim().is_empty(), "the chat is told");
    assert!(!out.text.contains(MADE), "{}", out.text);

    // A stranger: every permission refused without asking; nothing runs.
    let stranger = tmp.path().join("stranger");
    std::fs::create_dir(&stranger).unwrap();
    let mut r = req("stranger", &stranger, Some(approver));
    r.no_tools = true;
    let out = within(&a, r).await;
    assert!(
        !stranger.join("x").exists(),
        "a stranger's request never runs"
    );
    assert!(!out.text.contains(MADE), "{}", out.text);
    assert!(asked.try_recv().is_err(), "nobody was asked for a stranger");
    a.close().await;
}

/// This file's trials (run by `main.rs`).
pub fn trials() -> Vec<libtest_mimic::Trial> {
    let dir = acp_support::agents_dir();
    vec![
        acp_support::agent_trial(
            "real_codex_acp_asks_the_owner_and_obeys_the_answer",
            dir.clone(),
            |dir| async move { drive(|home, models| acp_support::codex(&dir, home, models)).await },
        ),
        acp_support::agent_trial(
            "real_claude_agent_acp_asks_the_owner_and_obeys_the_answer",
            dir,
            |dir| async move { drive(|home, models| acp_support::claude(&dir, home, models)).await },
        ),
    ]
}
