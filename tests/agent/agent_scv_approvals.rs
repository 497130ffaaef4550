//! `approvals = "ask"` in the `scv` backend: approval requests go to an approver (the owner) and
//! its decision becomes `approval.resolve`, while the turn keeps reading and its deadline waits.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::agent::{
    Agent, AgentError, AgentErrorKind, ApprovalRequest, Approver, ScvAgent, ScvOptions, SessionKey,
    Transport, TurnOutput, TurnRequest,
};
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::conversation::ChatId;
use scv_bridge::testing::fake_scv::FakeScv;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// What the approver was asked: the request, where to answer, and the turn's cancel token.
struct Asked {
    request: ApprovalRequest,
    answer: oneshot::Sender<bool>,
    cancel: CancellationToken,
}

/// An approver the test answers by hand.
struct HandApprover {
    asked: mpsc::UnboundedSender<Asked>,
}

impl Approver for HandApprover {
    fn approve(
        &self,
        request: ApprovalRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, bool> {
        let (tx, rx) = oneshot::channel();
        let _ = self.asked.send(Asked {
            request,
            answer: tx,
            cancel,
        });
        Box::pin(async move { rx.await.unwrap_or(false) })
    }
}

fn hand_approver() -> (Arc<dyn Approver>, mpsc::UnboundedReceiver<Asked>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(HandApprover { asked: tx }), rx)
}

/// An owner's turn on an `approvals = "ask"` account.
fn asking(approver: &Arc<dyn Approver>, prompt: &str) -> TurnRequest {
    TurnRequest {
        session: SessionKey {
            account: AccountKey::new(Channel::Wechat, "phone"),
            chat: ChatId::new("o1@im.wechat"),
        },
        prompt: prompt.into(),
        no_tools: false,
        auto_approve: false,
        approver: Some(approver.clone()),
        workspace: Some(PathBuf::from("/srv/work")),
        channel_label: "WeChat",
        language: Default::default(),
        attachments: Vec::new(),
        events: Default::default(),
        owner_tools: None,
    }
}

async fn start(dir: &Path, turn_timeout: Duration) -> (FakeScv, Arc<ScvAgent>) {
    let fake = FakeScv::start(&dir.join("agent.sock")).await.expect("fake");
    let mut o = ScvOptions::new(Transport::Socket(fake.path().into()));
    o.turn_timeout = Some(turn_timeout);
    (fake, Arc::new(ScvAgent::new(o)))
}

fn run(
    agent: &Arc<ScvAgent>,
    req: TurnRequest,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<Result<TurnOutput, AgentError>> {
    let agent = agent.clone();
    tokio::spawn(async move { agent.turn(req, cancel).await })
}

fn failed(r: Result<TurnOutput, AgentError>) -> AgentError {
    match r {
        Ok(o) => panic!("the turn answered {:?}", o.text),
        Err(e) => e,
    }
}

fn resolved(fake: &FakeScv) -> Vec<bool> {
    fake.recorded()
        .approvals
        .iter()
        .map(|a| a.approved)
        .collect()
}

#[tokio::test]
async fn the_owner_decides_each_tool_call_and_the_session_is_not_auto_approved() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path(), Duration::from_secs(20)).await;
    let (approver, mut asked) = hand_approver();

    let turn = run(
        &agent,
        asking(&approver, "[approval] tidy"),
        CancellationToken::new(),
    );
    let a = asked.recv().await.expect("asked");
    assert_eq!(a.request.tool, "shell");
    assert_eq!(a.request.summary, "rm -rf build");
    assert_eq!(a.request.risk.as_deref(), Some("high"));
    assert_eq!(a.request.session.parent(), "wechat:phone:o1@im.wechat");
    assert!(
        resolved(&fake).is_empty(),
        "nothing is answered before the owner"
    );
    a.answer.send(true).expect("answer");
    let out = turn.await.expect("task").expect("turn");
    assert_eq!(out.text, "approved");

    let turn = run(
        &agent,
        asking(&approver, "[approval] again"),
        CancellationToken::new(),
    );
    let a = asked.recv().await.expect("asked");
    a.answer.send(false).expect("answer");
    assert_eq!(turn.await.expect("task").expect("turn").text, "denied");
    assert_eq!(resolved(&fake), [true, false]);

    let rec = fake.recorded();
    assert_eq!(rec.sessions.len(), 1, "one session serves both turns");
    assert_eq!(
        (rec.sessions[0].no_tools, rec.sessions[0].auto_approve),
        (Some(false), Some(false))
    );
}

#[tokio::test]
async fn a_tool_free_session_never_asks_even_with_an_approver() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path(), Duration::from_secs(20)).await;
    let (approver, mut asked) = hand_approver();
    let req = TurnRequest {
        no_tools: true,
        ..asking(&approver, "[approval] sneak")
    };
    let out = agent
        .turn(req, CancellationToken::new())
        .await
        .expect("turn");
    assert_eq!(out.text, "denied");
    assert_eq!(resolved(&fake), [false]);
    assert!(
        asked.try_recv().is_err(),
        "a stranger's request reached the owner"
    );
}

#[tokio::test]
async fn a_cancelled_turn_cancels_its_open_question() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path(), Duration::from_secs(20)).await;
    let (approver, mut asked) = hand_approver();
    let cancel = CancellationToken::new();
    let turn = run(&agent, asking(&approver, "[approval] tidy"), cancel.clone());
    let a = asked.recv().await.expect("asked");
    assert!(!a.cancel.is_cancelled());
    cancel.cancel();
    let e = failed(turn.await.expect("task"));
    assert_eq!(e.kind, AgentErrorKind::Cancelled);
    // The approver is told at once, so the question is withdrawn from the chat.
    a.cancel.cancelled().await;
    fake.wait(|r| r.cancels.len() == 1).await;
    assert!(resolved(&fake).is_empty());
}

// Paused clock: a minute of waiting for the owner passes at once.
#[tokio::test(start_paused = true)]
async fn waiting_for_the_owner_does_not_count_against_the_turn_deadline() {
    let dir = tempfile::tempdir().expect("dir");
    let (fake, agent) = start(dir.path(), Duration::from_secs(5)).await;
    let (approver, mut asked) = hand_approver();
    let turn = run(
        &agent,
        asking(&approver, "[approval] tidy"),
        CancellationToken::new(),
    );
    let a = asked.recv().await.expect("asked");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        !turn.is_finished(),
        "the turn timed out while the owner decided"
    );
    a.answer.send(true).expect("answer");
    assert_eq!(turn.await.expect("task").expect("turn").text, "approved");

    // Without an answer to wait for, the same deadline still stops a hung turn.
    let (tx, _) = mpsc::unbounded_channel();
    let silent: Arc<dyn Approver> = Arc::new(HandApprover { asked: tx });
    let e = failed(
        agent
            .turn(asking(&silent, "[hang]"), CancellationToken::new())
            .await,
    );
    assert_eq!(e.kind, AgentErrorKind::Unavailable);
    assert_eq!(resolved(&fake), [true]);
}

#[test]
fn approval_requests_keep_the_summary_out_of_debug() {
    let r = ApprovalRequest {
        session: SessionKey {
            account: AccountKey::new(Channel::Wechat, "phone"),
            chat: ChatId::new("c"),
        },
        tool: "shell".into(),
        summary: "cat ~/.ssh/id_ed25519".into(),
        risk: None,
    };
    assert!(!format!("{r:?}").contains("ssh"));
}
