//! `approvals = "ask"` through a running daemon: the SCV agent's approval request becomes a confirm
//! question in the owner's chat, and the owner's answer becomes `approval.resolve`; with
//! `approvals = "ask_or_always"` an ACP agent's allow-always option is offered as `A <code>`.

use crate::confirm_support as support;

use std::path::Path;
use std::sync::Arc;

use scv_bridge::adapters::memory::{MemoryChannel, MemoryFactory};
use scv_bridge::agent::{AcpAgent, AcpOptions};
use scv_bridge::agent::{Agent, ApprovalRequest, ScvAgent, ScvOptions, SessionKey, Transport};
use scv_bridge::config::Config;
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::confirm::Clock;
use scv_bridge::conversation::ChatId;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::ComponentState;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::fake_acp::FakeAcp;
use scv_bridge::testing::fake_scv::FakeScv;
use support::{OWNER, STRANGER, T0_MS, msg, save_owner, within};
use tokio_util::sync::CancellationToken;

struct Bed {
    d: RunningDaemon,
    conv: Arc<Conversation>,
    channel: Arc<MemoryChannel>,
    fake: FakeScv,
}

async fn start(dir: &Path) -> Bed {
    let fake = FakeScv::start(&dir.join("agent.sock"))
        .await
        .expect("fake scv");
    let agent: Arc<dyn Agent> = Arc::new(ScvAgent::new(ScvOptions::new(Transport::Socket(
        fake.path().into(),
    ))));
    let (d, conv, channel) = start_with(dir, "ask", agent).await;
    Bed {
        d,
        conv,
        channel,
        fake,
    }
}

/// A daemon whose `wechat:phone` account (a memory channel) answers anyone, gives the owner
/// tools and approves them as `approvals` says, with `agent` answering.
async fn start_with(
    dir: &Path,
    approvals: &str,
    agent: Arc<dyn Agent>,
) -> (RunningDaemon, Arc<Conversation>, Arc<MemoryChannel>) {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\ntimezone = \"Asia/Shanghai\"\n\
         [wechat.phone]\nsenders = \"anyone\"\nremote_tools = \"owner\"\napprovals = \"{approvals}\"\n",
        state.display(),
        dir.join("run").join("daemon.sock").display()
    );
    std::fs::write(&path, text).expect("config");
    save_owner(&state);
    let config = Config::load(&path).expect("load config");
    let slot = Arc::new(std::sync::Mutex::new(None));
    let sl = slot.clone();
    let wire = move |creds: &scv_bridge::secrets::CredentialStore,
                     store: &scv_bridge::store::Store,
                     registry: &Arc<_>| {
        let (confirm, conv) =
            daemon::confirm_and_pipeline(store, creds, Clock::manual(T0_MS), registry, agent);
        let factory = MemoryFactory::new(
            Some(OWNER),
            scv_bridge::port::Ports::new(store.clone(), creds.clone(), conv.clone()),
        );
        *sl.lock().expect("lock") = Some((conv.clone(), factory.channel("wechat:phone")));
        let f: Arc<dyn ComponentFactory> = factory;
        Wiring {
            factory: f,
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
    let (conv, channel) = slot.lock().expect("lock").take().expect("wired");
    (d, conv, channel)
}

impl Bed {
    async fn say(&self, id: &str, from: &str, text: &str) {
        self.conv
            .accept(vec![msg(id, from, text)])
            .await
            .expect("accept");
    }

    /// Waits for the `n`th message to the owner and returns it.
    async fn owner_nth(&self, n: usize) -> String {
        within(async {
            loop {
                if let Some(t) = self.channel.texts(OWNER).get(n - 1) {
                    return t.clone();
                }
                self.channel.wait_sent(self.channel.sent().len() + 1).await;
            }
        })
        .await
    }

    fn resolved(&self) -> Vec<bool> {
        self.fake
            .recorded()
            .approvals
            .iter()
            .map(|a| a.approved)
            .collect()
    }
}

#[tokio::test]
async fn the_owner_approves_and_denies_tool_calls_in_chat() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = start(dir.path()).await;

    bed.say("m1", OWNER, "[approval] tidy up").await;
    let question = bed.owner_nth(1).await;
    assert!(
        question.contains("Allow the agent to run shell (risk: high)?")
            && question.contains("rm -rf build")
            && question.contains("Reply Y "),
        "{question}"
    );
    assert!(bed.resolved().is_empty(), "answered before the owner did");
    bed.say("m2", OWNER, "y").await;
    within(bed.fake.wait(|r| r.approvals.len() == 1)).await;
    assert_eq!(bed.resolved(), [true]);
    let mut texts = Vec::new();
    for n in 2.. {
        let t = bed.owner_nth(n).await;
        texts.push(t.clone());
        if t == "approved" {
            break;
        }
    }

    let asked_before = bed.channel.texts(OWNER).len();
    bed.say("m3", OWNER, "[approval] more").await;
    let q2 = bed.owner_nth(asked_before + 1).await;
    assert!(q2.contains("rm -rf build"), "{q2}");
    bed.say("m4", OWNER, "否").await;
    within(bed.fake.wait(|r| r.approvals.len() == 2)).await;
    assert_eq!(bed.resolved(), [true, false]);
    within(async {
        while !bed.channel.texts(OWNER).iter().any(|t| t == "denied") {
            bed.channel.wait_sent(bed.channel.sent().len() + 1).await;
        }
    })
    .await;

    let session = &bed.fake.recorded().sessions[0];
    assert_eq!(
        (session.no_tools, session.auto_approve),
        (Some(false), Some(false))
    );
    assert_eq!(
        bed.fake.recorded().prompts,
        ["[approval] tidy up", "[approval] more"],
        "answers never reach the agent"
    );
    bed.d.stop().await;
}

#[tokio::test]
async fn stop_withdraws_the_question_and_strangers_are_never_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = start(dir.path()).await;

    bed.say("s1", STRANGER, "[approval] sneak").await;
    within(bed.fake.wait(|r| r.approvals.len() == 1)).await;
    assert_eq!(bed.resolved(), [false], "a stranger's tool call is refused");
    within(bed.channel.wait_sent(1)).await;
    assert_eq!(bed.channel.texts(STRANGER), ["denied"]);
    assert!(
        bed.channel.texts(OWNER).is_empty(),
        "the owner was asked about a stranger's turn"
    );

    bed.say("m1", OWNER, "[approval] tidy up").await;
    let question = bed.owner_nth(1).await;
    assert!(question.contains("rm -rf build"), "{question}");
    bed.say("m2", OWNER, "/stop").await;
    within(bed.fake.wait(|r| r.cancels.len() == 1)).await;
    within(async {
        while !bed
            .channel
            .texts(OWNER)
            .iter()
            .any(|t| t.contains("no longer needs an answer (withdrawn)"))
        {
            bed.channel.wait_sent(bed.channel.sent().len() + 1).await;
        }
    })
    .await;
    assert_eq!(
        bed.resolved(),
        [false],
        "no decision is sent for a stopped turn"
    );
    bed.d.stop().await;
}

#[tokio::test]
async fn a_service_stopping_mid_question_is_not_the_owner_saying_no() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = support::Bed::open(dir.path(), T0_MS, support::BedOptions::default()).await;
    let approver = bed
        .conv
        .approver()
        .expect("the confirm service is the approver");
    let request = ApprovalRequest {
        session: SessionKey {
            account: support::account(),
            chat: ChatId::new(OWNER),
        },
        tool: "shell".into(),
        summary: "rm -rf build".into(),
        risk: None,
    };
    let decided = tokio::spawn(approver.approve(request.clone(), CancellationToken::new()));
    let question = bed.nth_sent(1).await;
    assert!(
        question.starts_with("Allow the agent to run shell?\nrm -rf build"),
        "{question}"
    );
    bed.svc.stop();
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
    assert!(!decided.is_finished(), "the shutdown was taken as a no");
    decided.abort();

    // A question that cannot be asked at all is a no, at once.
    let elsewhere = ApprovalRequest {
        session: SessionKey {
            account: AccountKey::new(Channel::Wechat, "unknown"),
            chat: ChatId::new("x"),
        },
        ..request
    };
    let bed2dir = tempfile::tempdir().expect("tempdir");
    let bed2 = support::Bed::open(bed2dir.path(), T0_MS, support::BedOptions::default()).await;
    let approver = bed2.conv.approver().expect("approver");
    assert!(!within(approver.approve(elsewhere, CancellationToken::new())).await);
    bed2.shut().await;
    bed.shut().await;
}

/// Waits for the `n`th message to `to` on `channel` and returns it.
async fn nth_to(channel: &MemoryChannel, to: &str, n: usize) -> String {
    within(async {
        loop {
            if let Some(t) = channel.texts(to).get(n - 1) {
                return t.clone();
            }
            channel.wait_sent(channel.sent().len() + 1).await;
        }
    })
    .await
}

#[tokio::test]
async fn always_is_offered_only_where_the_account_allows_it_and_selects_allow_always() {
    for (approvals, offered) in [("ask_or_always", true), ("ask", false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = FakeAcp::new();
        let agent: Arc<dyn Agent> =
            Arc::new(AcpAgent::new(AcpOptions::new(Arc::new(fake.clone())), None));
        let (d, conv, channel) = start_with(dir.path(), approvals, agent).await;
        conv.accept(vec![msg("m1", OWNER, "RUN:cargo test")])
            .await
            .expect("accept");
        let question = nth_to(&channel, OWNER, 1).await;
        assert!(question.contains("cargo test"), "{question}");
        let code = question
            .split("Reply Y ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("a code")
            .to_string();
        assert_eq!(
            question.contains(&format!("A {code} (always")),
            offered,
            "{approvals}: {question}"
        );
        conv.accept(vec![msg("m2", OWNER, &format!("A {code}"))])
            .await
            .expect("accept");
        let log = within(fake.until(|l| !l.outcomes.is_empty())).await;
        // Where "always" was not offered, an "always" answer is a plain yes: never wider.
        let chosen = if offered { "allow_always" } else { "allow" };
        assert_eq!(
            log.outcomes[0]["optionId"], chosen,
            "{approvals}: {:?}",
            log.outcomes
        );
        let reply = within(async {
            loop {
                if let Some(t) = channel
                    .texts(OWNER)
                    .into_iter()
                    .find(|t| t.starts_with("Got it"))
                {
                    return t;
                }
                channel.wait_sent(channel.sent().len() + 1).await;
            }
        })
        .await;
        assert_eq!(
            reply.contains("always for this session"),
            offered,
            "{approvals}: {reply}"
        );
        d.stop().await;
    }
}
