//! The real coding agents driven from the phone, end to end: the real binary, the WeChat fake
//! and the REAL codex-acp and claude-agent-acp (installed by `.ci/run` from npm into the
//! directory `SCV_ACP_AGENTS` names) against local fake models. The owner writes "make a
//! directory x", the fake model asks for the shell tool, the owner is asked in the chat and
//! answers; yes makes the directory and the answer arrives, no runs nothing and the chat says it
//! stopped, and a stranger's identical request never runs and asks nobody. Status shows the
//! agent process meanwhile.
//!
//! Without `SCV_ACP_AGENTS` the tests count as ignored, with the reason; with it set (CI) a
//! missing agent fails. A `harness = false` test (libtest-mimic), so the skip is decided when
//! the tests run and shows in the count.

use crate::acp_support;
use crate::process_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_support::AgentCmd;
use process_support::bed::{ProcessBed, wechat_login};
use process_support::{Daemon, terminate};
use scv_bridge::protocol::DaemonCommand;
use scv_bridge::testing::fake_models::{FakeModels, MADE, NOT_RUN};
use scv_wechat::fake::{FakeHandle, FakeServer, SentMessage};

/// How long one real agent step may take before the test fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(180);
const OWNER: &str = "owner@im.wechat";
const STRANGER: &str = "stranger@im.wechat";
const ASK: &str = "make a directory x";

struct Bed {
    bed: ProcessBed,
    /// The agent's own home (its config), kept for the test's length.
    _home: tempfile::TempDir,
    fake: FakeServer,
    _models: FakeModels,
    daemon: Daemon,
}

impl Bed {
    /// The daemon with `[agent] backend = "acp"` running `agent`, and one WeChat account that
    /// answers anyone, gives the owner tools and asks before each one.
    async fn start(make: impl Fn(&Path, &FakeModels) -> AgentCmd) -> Bed {
        let models = FakeModels::start().await.expect("fake models");
        let home = tempfile::tempdir().expect("agent home");
        let cmd = make(home.path(), &models);
        let fake = FakeServer::start().await.expect("fake ilink");
        // The key reaches the agent through the daemon's environment, never the config file.
        let env: Vec<(&str, &str)> = cmd
            .secret_env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let bed = ProcessBed::new(
            |dir| {
                std::fs::create_dir_all(dir.join("ws")).expect("workspace");
                format!(
                    "{}[wechat.phone]\nbase_url = \"{}\"\nworkspace = \"{}\"\n\
                     senders = \"anyone\"\nremote_tools = \"owner\"\napprovals = \"ask\"\n",
                    cmd.agent_table(),
                    fake.base_url(),
                    dir.join("ws").display(),
                )
            },
            &env,
        );
        bed.save_login("wechat:phone", &wechat_login(&fake, OWNER));
        let daemon = bed.spawn();
        Bed {
            bed,
            _home: home,
            fake,
            _models: models,
            daemon,
        }
    }

    fn h(&self) -> FakeHandle {
        self.fake.handle()
    }

    fn x(&self) -> PathBuf {
        self.bed.path("ws/x")
    }

    /// The first send after the first `skip` that `wanted` accepts; fails with the log if none
    /// comes in time.
    async fn next(
        &self,
        skip: usize,
        what: &str,
        wanted: impl Fn(&SentMessage) -> bool,
    ) -> SentMessage {
        match self.h().wait_for_sent_where(skip, PATIENCE, wanted).await {
            Some(m) => m,
            None => panic!(
                "timed out waiting for {what}; sent {:?}\nlog:\n{}",
                self.h()
                    .sent()
                    .into_iter()
                    .map(|s| s.text)
                    .collect::<Vec<_>>(),
                self.bed.log()
            ),
        }
    }

    /// The owner asks for the directory in `words` (which must hold [`ASK`]; the same words
    /// twice within 30 s would be dropped as iLink's redelivered copy); returns the question's
    /// code and what it said.
    async fn owner_asks(&self, words: &str) -> (String, String) {
        let skip = self.h().sent().len();
        self.h().push_text(OWNER, words);
        let q = self
            .next(skip, "the permission question", |m| {
                m.to_user == OWNER && m.text.contains("Reply Y ")
            })
            .await;
        let code = q
            .text
            .split("Reply Y ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("the question names its code")
            .to_string();
        (code, q.text)
    }
}

/// Yes, no and a stranger against one real agent, all through the chat.
async fn drive(make: impl Fn(&Path, &FakeModels) -> AgentCmd) {
    let mut bed = Bed::start(make).await;
    let h = bed.h();

    // Yes: asked in the chat with the command named; the directory is made; the answer arrives.
    let (code, question) = bed.owner_asks(ASK).await;
    assert!(
        question.contains("mkdir x"),
        "the question names the command: {question}"
    );
    let skip = h.sent().len();
    h.push_text(OWNER, &format!("Y {code}"));
    bed.next(skip, "the answer after yes", |m| {
        m.to_user == OWNER && m.text.contains(MADE)
    })
    .await;
    assert!(bed.x().is_dir(), "the directory exists");

    // Status shows the agent process and the owner's session.
    let status = scv_bridge::client::request(&bed.bed.socket(), DaemonCommand::Status)
        .await
        .expect("status");
    let processes = status
        .agent
        .and_then(|a| a.processes)
        .expect("status shows the agent processes");
    assert_eq!(processes.running, 1, "{processes:?}");
    assert!(processes.sessions >= 1, "{processes:?}");
    assert!(
        processes.agent.is_some(),
        "the agent's name from initialize: {processes:?}"
    );

    // No: after /new (a fresh session, so the model asks again) nothing runs and the chat
    // hears that it stopped (codex ends the turn; claude's model says it did not run it).
    std::fs::remove_dir(bed.x()).expect("remove x");
    let skip = h.sent().len();
    h.push_text(OWNER, "/new");
    bed.next(skip, "the reply to /new", |m| m.to_user == OWNER)
        .await;
    let (code, _) = bed.owner_asks(&format!("{ASK} again")).await;
    let skip = h.sent().len();
    h.push_text(OWNER, &format!("N {code}"));
    let told = bed
        .next(skip, "the chat told it stopped", |m| {
            m.to_user == OWNER
                && (m.text.contains("Stopped: the command was not run") || m.text.contains(NOT_RUN))
        })
        .await;
    assert!(!bed.x().exists(), "nothing ran: {}", told.text);

    // A stranger: answered without tools; nothing runs and nobody is asked.
    let skip = h.sent().len();
    h.push_text(STRANGER, ASK);
    let answer = bed
        .next(skip, "the stranger's answer", |m| m.to_user == STRANGER)
        .await;
    assert!(!answer.text.contains(MADE), "{}", answer.text);
    assert!(!bed.x().exists(), "a stranger's request never runs");
    let asked: Vec<String> = h
        .sent()
        .into_iter()
        .skip(skip)
        .map(|m| m.text)
        .filter(|t| t.contains("Reply Y "))
        .collect();
    assert!(
        asked.is_empty(),
        "nobody was asked for a stranger: {asked:?}"
    );

    terminate(&mut bed.daemon);
}

/// This file's trials (run by `main.rs`).
pub fn trials() -> Vec<libtest_mimic::Trial> {
    let dir = acp_support::agents_dir();
    vec![
        acp_support::agent_trial(
            "real_codex_acp_from_the_wechat_chat_asks_and_obeys_the_owner",
            dir.clone(),
            |dir| async move { drive(|home, models| acp_support::codex(&dir, home, models)).await },
        ),
        acp_support::agent_trial(
            "real_claude_agent_acp_from_the_wechat_chat_asks_and_obeys_the_owner",
            dir,
            |dir| async move { drive(|home, models| acp_support::claude(&dir, home, models)).await },
        ),
    ]
}
