//! The `openai` backend's tool-call loop against the fake model, with a recording stand-in for
//! the owner tools: a looping model is stopped at the bound, bad arguments go back to the model
//! and are never run, the answer streams across rounds, a model failing after a tool ran is not
//! retried (that would run the tool twice), and a turn without the grant offers and runs nothing.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use scv_bridge::agent::tool_access::{Grant, ToolAccess, ToolSpec};
use scv_bridge::agent::{
    Agent, AgentErrorKind, OpenAiAgent, OpenAiOptions, TurnEvent, TurnEvents, TurnRequest,
};
use scv_bridge::store::Store;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::turn_request;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The owner tools' specs, every call recorded and answered `{"ok": true}`.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(String, Value)>>,
}

impl Recorder {
    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().expect("lock").clone()
    }
}

impl ToolAccess for Recorder {
    fn grant(&self) -> Grant {
        Grant::new("http://127.0.0.1:9/mcp".into(), "Bearer x".into(), || {})
    }

    fn specs(&self) -> Vec<ToolSpec> {
        scv_bridge::mcp::specs()
    }

    fn call<'a>(&'a self, name: &'a str, args: &'a Value) -> BoxFuture<'a, Result<String, String>> {
        self.calls
            .lock()
            .expect("lock")
            .push((name.to_string(), args.clone()));
        Box::pin(async { Ok(json!({"ok": true}).to_string()) })
    }
}

struct Bed {
    fake: FakeOpenAi,
    agent: OpenAiAgent,
    tools: Arc<Recorder>,
    _store: scv_bridge::store::StoreGuard,
}

async fn bed(max_tries: u32) -> Bed {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, guard) = Store::open_in_memory().expect("store");
    let mut o = OpenAiOptions::new(fake.base_url(), "fake-model");
    o.max_tries = max_tries;
    let agent = OpenAiAgent::new(o, store).expect("agent");
    Bed {
        fake,
        agent,
        tools: Arc::default(),
        _store: guard,
    }
}

/// The owner's turn, granted the tools.
fn granted(b: &Bed, prompt: &str) -> TurnRequest {
    let mut r = turn_request("owner", prompt);
    r.owner_tools = Some(b.tools.clone());
    r
}

#[tokio::test]
async fn a_model_that_keeps_calling_tools_is_stopped_at_the_bound() {
    let b = bed(1).await;
    b.fake.respond_with(|r| {
        r.tools
            .is_some()
            .then(|| Reply::tool_call("list_scheduled", json!({})))
    });
    let e = b
        .agent
        .turn(granted(&b, "loop"), CancellationToken::new())
        .await
        .err()
        .expect("stopped");
    assert_eq!(e.kind, AgentErrorKind::Failed, "{e}");
    assert!(e.message.contains("after 8 rounds"), "{}", e.message);
    assert!(
        e.message.contains("status`"),
        "says what to check: {}",
        e.message
    );
    assert_eq!(b.fake.requests().len(), 8);
    assert_eq!(b.tools.calls().len(), 8);
}

#[tokio::test]
async fn bad_arguments_go_back_to_the_model_and_the_answer_streams_across_rounds() {
    let b = bed(1).await;
    b.fake.push(Reply::ToolCalls {
        text: "Let me see.".into(),
        calls: vec![("schedule".into(), json!("12:30 stand up"))],
    });
    b.fake.push(Reply::tool_call(
        "schedule",
        json!({"at": "12:30", "text": "Stand up"}),
    ));
    b.fake.push(Reply::text("Done."));
    let (events, mut rx) = TurnEvents::channel();
    let mut r = granted(&b, "remind me");
    r.events = events;
    let out = b
        .agent
        .turn(r, CancellationToken::new())
        .await
        .expect("answered");
    assert_eq!(out.text, "Let me see.\n\nDone.");
    let streamed: String = std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|e| match e {
            TurnEvent::Text(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, out.text, "every round's text was streamed");
    assert_eq!(
        b.tools.calls(),
        [(
            "schedule".to_string(),
            json!({"at": "12:30", "text": "Stand up"})
        )],
        "the bad call never reached the tools"
    );
    let asked = b.fake.requests();
    assert_eq!(asked.len(), 3);
    assert!(asked[1].tool_results[0].1.contains("not a JSON object"));
    assert_eq!(asked[2].tool_results.len(), 2, "every round so far is sent");
    assert_eq!(asked[2].tool_results[1].1, json!({"ok": true}).to_string());
    let usage = out.usage.expect("usage");
    assert_eq!(
        usage.prompt_tokens,
        12 + 12 + 11,
        "the rounds' usage adds up"
    );
}

#[tokio::test]
async fn a_model_failing_after_a_tool_ran_is_not_retried() {
    let b = bed(1).await;
    b.fake
        .push(Reply::tool_call("send_to_owner", json!({"text": "hi"})));
    b.fake.push(Reply::status(503));
    let e = b
        .agent
        .turn(granted(&b, "tell me"), CancellationToken::new())
        .await
        .err()
        .expect("failed");
    assert_eq!(e.kind, AgentErrorKind::Failed, "not Unavailable: {e}");
    assert!(e.message.contains("send_to_owner"), "{}", e.message);
    assert_eq!(b.tools.calls().len(), 1);

    // Before any tool ran, the same failure is kept for a retry as always.
    b.fake.push(Reply::status(503));
    let e = b
        .agent
        .turn(granted(&b, "tell me"), CancellationToken::new())
        .await
        .err()
        .expect("failed");
    assert_eq!(e.kind, AgentErrorKind::Unavailable, "{e}");
}

#[tokio::test]
async fn a_turn_without_the_grant_offers_no_tools_and_runs_none() {
    let b = bed(1).await;
    // The pipeline gives a stranger no grant; a turn the policy marks tool-free is the same
    // even with one set.
    let mut r = granted(&b, "remind me");
    r.no_tools = true;
    b.fake.push(Reply::text("I cannot."));
    let out = b
        .agent
        .turn(r.clone(), CancellationToken::new())
        .await
        .expect("answered");
    assert_eq!(out.text, "I cannot.");
    assert!(b.fake.requests()[0].tools.is_none());

    // A model that asks for a tool anyway has nothing run.
    b.fake
        .push(Reply::tool_call("send_to_owner", json!({"text": "x"})));
    let e = b
        .agent
        .turn(r, CancellationToken::new())
        .await
        .err()
        .expect("no answer");
    assert_eq!(e.kind, AgentErrorKind::Failed);
    let stranger = turn_request("stranger", "remind me");
    b.fake
        .push(Reply::tool_call("send_to_owner", json!({"text": "x"})));
    let _ = b.agent.turn(stranger, CancellationToken::new()).await;
    assert!(b.fake.requests()[2].tools.is_none());
    assert!(b.tools.calls().is_empty(), "nothing ran");
}
