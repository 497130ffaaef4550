//! The owner tools as the `openai` backend's function tools, end to end over real sockets: the
//! daemon's pipeline, the `openai` backend and the fake model. The owner writes "remind me at
//! 12:30", the model calls `schedule`, the bridge runs it through the owner tools and hands the
//! result back, the model answers; the owner receives the reminder at 12:30 on the hand-moved
//! clock (not a millisecond before), once. A stranger's identical message reaches the model
//! with no tools at all, and nothing is scheduled for it.

use crate::confirm_support::*;
use crate::owner_tools_support::{SAT_HALF_PAST_MS, SAT_NOON_MS, start};

use std::sync::Arc;

use scv_bridge::agent::{Agent, OpenAiAgent, OpenAiOptions};
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::testing::fake_openai::{FakeOpenAi, RecordedRequest, Reply};
use serde_json::{Value, json};

const ASK: &str = "remind me at 12:30";
const REMINDER: &str = "Stand up";
const DONE: &str = "I will remind you at 12:30.";
const NO_TOOLS: &str = "I cannot set reminders here.";

/// The fake model's script: offered tools and asked to remind, it calls `schedule`; given the
/// result, it answers; without tools it says it cannot.
fn model(r: &RecordedRequest) -> Option<Reply> {
    let asked = r.messages.last().is_some_and(|m| m.content.contains(ASK));
    if !r.tool_results.is_empty() {
        return Some(Reply::text(DONE));
    }
    match (&r.tools, asked) {
        (Some(_), true) => Some(Reply::tool_call(
            "schedule",
            json!({"at": "12:30", "text": REMINDER}),
        )),
        (None, true) => Some(Reply::text(NO_TOOLS)),
        _ => None,
    }
}

fn tool_names(r: &RecordedRequest) -> Vec<String> {
    r.tools
        .iter()
        .flat_map(|t| t.as_array().into_iter().flatten())
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn reminders(channel: &scv_bridge::adapters::memory::MemoryChannel) -> usize {
    channel
        .texts(OWNER)
        .iter()
        .filter(|t| t.as_str() == REMINDER)
        .count()
}

#[tokio::test]
async fn the_owners_model_schedules_and_the_owner_gets_it_at_the_time_once() {
    let fake = FakeOpenAi::start().await.expect("fake model");
    fake.respond_with(model);
    let base = fake.base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let lines = "senders = \"anyone\"\nremote_tools = \"owner\"\n";
    let t = start(dir.path(), SAT_NOON_MS, lines, move |store| {
        let agent =
            OpenAiAgent::new(OpenAiOptions::new(base, "fake-model"), store.clone()).expect("agent");
        Arc::new(agent) as Arc<dyn Agent>
    })
    .await;
    let phone = AccountKey::new(Channel::Wechat, "phone");

    t.conv
        .accept(vec![msg_on(&phone, "m1", OWNER, ASK)])
        .await
        .expect("accept");
    within(t.conv.quiescent()).await;
    let asked = fake.requests();
    assert_eq!(asked.len(), 2, "the call, then the answer");
    assert_eq!(
        tool_names(&asked[0]),
        [
            "send_to_owner",
            "ask_owner",
            "schedule",
            "list_scheduled",
            "cancel_scheduled"
        ]
    );
    let (id, result) = &asked[1].tool_results[0];
    assert_eq!(id, "call_fake_0");
    let result: Value = serde_json::from_str(result).expect("a JSON result");
    assert_eq!(result["state"], "scheduled", "{result}");
    assert_eq!(result["due_unix_seconds"], SAT_HALF_PAST_MS / 1000);
    assert_eq!(
        t.channel.texts(OWNER),
        [DONE],
        "the answer, and nothing yet"
    );

    // A stranger's identical message: no tools offered, nothing scheduled.
    t.conv
        .accept(vec![msg_on(&phone, "m2", STRANGER, ASK)])
        .await
        .expect("accept");
    within(t.conv.quiescent()).await;
    let asked = fake.requests();
    assert_eq!(asked.len(), 3);
    assert!(
        asked[2].tools.is_none(),
        "a stranger's request has no tools"
    );
    assert_eq!(t.channel.texts(STRANGER), [NO_TOOLS]);
    let owner = t.d.core.owner().expect("owner service");
    assert_eq!(owner.scheduled().await.expect("listed").len(), 1);

    t.at(SAT_HALF_PAST_MS - 1).await;
    assert_eq!(reminders(&t.channel), 0, "not a millisecond early");
    t.at(SAT_HALF_PAST_MS).await;
    assert_eq!(reminders(&t.channel), 1, "at the time");
    t.at(SAT_NOON_MS + 90 * 60_000).await;
    assert_eq!(reminders(&t.channel), 1, "once");
    assert_eq!(fake.requests().len(), 3, "the reminder asked no model");
    t.d.stop().await;
}

/// An account that grants no tools: even its owner's request goes without them.
#[tokio::test]
async fn without_remote_tools_the_owners_model_gets_none() {
    let fake = FakeOpenAi::start().await.expect("fake model");
    fake.respond_with(model);
    let base = fake.base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(
        dir.path(),
        SAT_NOON_MS,
        "remote_tools = \"none\"\n",
        move |store| {
            let agent = OpenAiAgent::new(OpenAiOptions::new(base, "fake-model"), store.clone())
                .expect("agent");
            Arc::new(agent) as Arc<dyn Agent>
        },
    )
    .await;
    let phone = AccountKey::new(Channel::Wechat, "phone");
    t.conv
        .accept(vec![msg_on(&phone, "m1", OWNER, ASK)])
        .await
        .expect("accept");
    within(t.conv.quiescent()).await;
    let asked = fake.requests();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].tools.is_none());
    assert_eq!(t.channel.texts(OWNER), [NO_TOOLS]);
    t.d.stop().await;
}
