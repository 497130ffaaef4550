//! The owner tools with the REAL codex-acp (`SCV_ACP_AGENTS`), end to end in this process: the
//! daemon's pipeline with the `acp` backend running codex-acp against the fake Responses model,
//! and the daemon's own MCP endpoint. codex-acp says `mcpCapabilities.http: true`, so the
//! owner's session is created with the bridge's server in `mcpServers` (Streamable HTTP, its own
//! bearer secret); codex connects to it, lists the tools and offers them to the model, the model
//! calls `schedule`, and the owner receives the reminder at 12:30 on the hand-moved clock (not a
//! millisecond before), once. A stranger's identical request reaches the model with no such
//! tool, and nothing is scheduled for it.

use crate::acp_support;
use crate::confirm_support::{OWNER, STRANGER, msg_on};
use crate::owner_tools_support::{SAT_HALF_PAST_MS, SAT_NOON_MS, start};

use std::sync::Arc;
use std::time::Duration;

use scv_bridge::agent::acp::CommandLauncher;
use scv_bridge::agent::{AcpAgent, AcpOptions, Agent};
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::testing::fake_models::{
    CANNOT_REMIND, FakeModels, REMIND_ASK, REMINDED, REMINDER, schedule_tool,
};

/// How long the real agent may take over one message before the test fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(180);

async fn patiently<F: std::future::Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(PATIENCE, f).await {
        Ok(out) => out,
        Err(_) => panic!("{what} did not happen within {PATIENCE:?}"),
    }
}

async fn drive(dir: std::path::PathBuf) {
    let models = FakeModels::start().await.expect("fake models");
    let tmp = tempfile::tempdir().expect("tempdir");
    let cmd = acp_support::codex(&dir, &tmp.path().join("home"), &models);
    let launcher = CommandLauncher {
        program: cmd.program,
        args: cmd.args,
        env: cmd.env.into_iter().chain(cmd.secret_env).collect(),
        record_dir: None,
    };
    let lines = "senders = \"anyone\"\nremote_tools = \"owner\"\n";
    let t = start(tmp.path(), SAT_NOON_MS, lines, move |store| {
        let opts = AcpOptions::new(Arc::new(launcher));
        Arc::new(AcpAgent::new(opts, Some(store.clone()))) as Arc<dyn Agent>
    })
    .await;
    let phone = AccountKey::new(Channel::Wechat, "phone");
    let owner = t.d.core.owner().expect("owner service").clone();

    t.conv
        .accept(vec![msg_on(&phone, "m1", OWNER, REMIND_ASK)])
        .await
        .expect("accept");
    patiently("the owner's turn", t.conv.quiescent()).await;
    let asked = models.requests();
    let offered: Vec<_> = asked
        .iter()
        .filter_map(|r| schedule_tool(&r["tools"]))
        .collect();
    assert!(
        !offered.is_empty(),
        "codex offered the model the bridge's schedule tool: {:?}",
        asked.iter().map(|r| r["tools"].clone()).collect::<Vec<_>>()
    );
    let output = asked
        .iter()
        .flat_map(|r| r["input"].as_array().cloned().unwrap_or_default())
        .find(|i| i["type"] == "function_call_output")
        .expect("the tool's output came back to the model");
    eprintln!("acp_tools: codex named the tool {:?}", offered[0]);
    assert!(
        output.to_string().contains("scheduled"),
        "the tool scheduled: {output}"
    );
    let owner_texts = t.channel.texts(OWNER);
    assert!(
        owner_texts.iter().any(|x| x.contains(REMINDED)),
        "the owner got the answer: {owner_texts:?}"
    );
    assert_eq!(owner.scheduled().await.expect("listed").len(), 1);

    // A stranger's identical request: the model is offered no such tool.
    let before = models.requests().len();
    t.conv
        .accept(vec![msg_on(&phone, "m2", STRANGER, REMIND_ASK)])
        .await
        .expect("accept");
    patiently("the stranger's turn", t.conv.quiescent()).await;
    let theirs = &models.requests()[before..];
    assert!(
        !theirs.is_empty(),
        "the stranger's request reached the model"
    );
    assert!(
        theirs.iter().all(|r| schedule_tool(&r["tools"]).is_none()),
        "a stranger's session has no owner tools"
    );
    let stranger_texts = t.channel.texts(STRANGER);
    assert!(
        stranger_texts.iter().any(|x| x.contains(CANNOT_REMIND)),
        "{stranger_texts:?}"
    );
    assert_eq!(owner.scheduled().await.expect("listed").len(), 1);

    let reminders = || {
        t.channel
            .texts(OWNER)
            .iter()
            .filter(|x| x.as_str() == REMINDER)
            .count()
    };
    t.at(SAT_HALF_PAST_MS - 1).await;
    assert_eq!(reminders(), 0, "not a millisecond early");
    t.at(SAT_HALF_PAST_MS).await;
    assert_eq!(reminders(), 1, "at the time");
    t.at(SAT_NOON_MS + 90 * 60_000).await;
    assert_eq!(reminders(), 1, "once");
    t.d.stop().await;
}

/// This file's trials (run by `main.rs`).
pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![acp_support::agent_trial(
        "real_codex_acp_schedules_through_the_bridges_mcp_tools",
        acp_support::agents_dir(),
        drive,
    )]
}
