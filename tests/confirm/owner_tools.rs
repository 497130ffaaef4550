//! The owner tools for agents (`scv_bridge::mcp`) over their real transport: an rmcp client
//! speaks Streamable HTTP to the loopback endpoint of a running daemon, schedules a message and
//! the owner receives it at the time (hand-moved clock); a request without a live grant's
//! secret is refused. The real codex-acp through the same endpoint is
//! `tests/acp_real/acp_tools.rs`; the `openai` backend's function tools, `owner_tools_openai.rs`.

use crate::confirm_support::*;
use crate::owner_send::{SAT_NOON_MS, start, start_with};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use scv_bridge::mcp::{Grant, OwnerTools, ToolEndpoint};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// 12:30 in New York on the test's Saturday.
const SAT_HALF_PAST_MS: u64 = SAT_NOON_MS + 30 * 60_000;

async fn connect(url: &str, secret: &str) -> Result<RunningService<RoleClient, ()>, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(secret);
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.map_err(|e| e.to_string())
}

fn secret(g: &Grant) -> &str {
    g.authorization
        .strip_prefix("Bearer ")
        .expect("a bearer header")
}

/// Calls `name`; the tool's text result parsed as JSON, or the tool's error text.
async fn call(
    c: &RunningService<RoleClient, ()>,
    name: &'static str,
    args: Value,
) -> Result<Value, String> {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let r = within(c.call_tool(CallToolRequestParams::new(name).with_arguments(args)))
        .await
        .expect("the call is answered");
    let text = r
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .expect("a text result");
    match r.is_error {
        Some(true) => Err(text),
        _ => Ok(serde_json::from_str(&text).expect("a JSON result")),
    }
}

#[tokio::test]
async fn an_agent_schedules_over_mcp_and_the_owner_gets_it_at_the_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    let owner = t.d.core.owner().expect("owner service").clone();
    let confirm = t.d.core.confirm().cloned();
    let tools = OwnerTools::new(owner, confirm, CancellationToken::new());
    let endpoint = ToolEndpoint::start(tools).await.expect("endpoint");
    let grant = endpoint.grant();
    assert!(grant.url.starts_with("http://127.0.0.1:"), "{}", grant.url);
    let c = connect(&grant.url, secret(&grant)).await.expect("admitted");

    let listed = within(c.list_all_tools()).await.expect("tools/list");
    let names: Vec<_> = listed.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "send_to_owner",
            "ask_owner",
            "schedule",
            "list_scheduled",
            "cancel_scheduled"
        ]
    );

    let at = call(&c, "schedule", json!({"at": "12:30", "text": "Stand up"}))
        .await
        .expect("scheduled");
    assert_eq!(at["state"], "scheduled", "{at}");
    assert_eq!(at["due_unix_seconds"], SAT_HALF_PAST_MS / 1000);
    let later = call(&c, "schedule", json!({"at": "13:00", "text": "Never"}))
        .await
        .expect("scheduled");
    let list = call(&c, "list_scheduled", json!({})).await.expect("listed");
    let ids: Vec<_> = list["scheduled"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    assert_eq!(ids, [at["id"].clone(), later["id"].clone()]);
    let cancelled = call(&c, "cancel_scheduled", json!({"id": later["id"]}))
        .await
        .expect("cancelled");
    assert_eq!(cancelled["state"], "cancelled");

    // Nothing before the time; at the time, the owner has it, once.
    t.at(SAT_HALF_PAST_MS - 1).await;
    assert!(t.channel.texts(OWNER).is_empty());
    t.at(SAT_HALF_PAST_MS).await;
    assert_eq!(t.channel.texts(OWNER), vec!["Stand up".to_string()]);
    t.at(SAT_NOON_MS + 90 * 60_000).await;
    assert_eq!(t.channel.texts(OWNER), vec!["Stand up".to_string()]);

    // A bad argument is the tool's error, for the model to correct.
    let bad = call(&c, "schedule", json!({"at": "25:99", "text": "x"})).await;
    assert!(bad.is_err(), "{bad:?}");
    let now = call(&c, "send_to_owner", json!({"text": "Done"}))
        .await
        .expect("sent");
    assert_eq!(now["route"], "wechat:phone", "{now}");
    within(t.conv.quiescent()).await;
    assert_eq!(t.channel.texts(OWNER), ["Stand up", "Done"]);
    within(c.cancel()).await.expect("client closes");
    t.d.stop().await;
}

#[tokio::test]
async fn no_secret_or_a_revoked_one_gets_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    let owner = t.d.core.owner().expect("owner service").clone();
    let tools = OwnerTools::new(owner, None, CancellationToken::new());
    let endpoint = ToolEndpoint::start(tools).await.expect("endpoint");
    let grant = endpoint.grant();
    let url = grant.url.clone();
    assert!(connect(&url, "guessed").await.is_err());
    let kept = secret(&grant).to_string();
    drop(grant);
    assert!(
        connect(&url, &kept).await.is_err(),
        "a dropped grant admits no one"
    );

    // Without [confirm], ask_owner says so instead of waiting.
    let g = endpoint.grant();
    let c = connect(&g.url, secret(&g)).await.expect("admitted");
    let asked = call(
        &c,
        "ask_owner",
        json!({"question": "Deploy?", "timeout_seconds": 60}),
    )
    .await;
    assert!(asked.expect_err("refused").contains("[confirm]"));
    within(c.cancel()).await.expect("client closes");
    assert!(t.channel.texts(OWNER).is_empty());
    t.d.stop().await;
}

/// The acp backend over the fake ACP agent (which takes MCP over HTTP): the owner's tool session
/// is created with the bridge's MCP server and its own grant, which admits an MCP client that
/// schedules through it; a stranger's identical request (`no_tools`) gets `mcpServers: []` even
/// though the endpoint is there, and so does a turn the pipeline gave no tools.
#[tokio::test]
async fn only_the_owners_tool_session_is_created_with_the_server() {
    use scv_bridge::agent::{AcpAgent, AcpOptions, Agent};
    use scv_bridge::testing::fake_acp::FakeAcp;
    use scv_bridge::testing::turn_request;

    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    let owner = t.d.core.owner().expect("owner service").clone();
    let tools = OwnerTools::new(owner, None, CancellationToken::new());
    let endpoint = std::sync::Arc::new(ToolEndpoint::start(tools).await.expect("endpoint"));
    let fake = FakeAcp::new();
    let agent = AcpAgent::new(AcpOptions::new(std::sync::Arc::new(fake.clone())), None);

    let mut owners = turn_request(OWNER, "remind me at 12:30");
    owners.owner_tools = Some(endpoint.clone());
    within(agent.turn(owners, CancellationToken::new()))
        .await
        .expect("answer");
    let mut strangers = turn_request(STRANGER, "remind me at 12:30");
    strangers.no_tools = true;
    strangers.owner_tools = Some(endpoint.clone());
    within(agent.turn(strangers, CancellationToken::new()))
        .await
        .expect("answer");
    within(agent.turn(turn_request("other", "hi"), CancellationToken::new()))
        .await
        .expect("answer");

    let servers = fake.log().mcp_servers;
    assert_eq!(servers.len(), 3, "{servers:?}");
    assert_eq!(servers[1], json!([]), "a stranger's session has no server");
    assert_eq!(servers[2], json!([]), "a turn without tools has no server");
    let s = &servers[0][0];
    assert_eq!(
        (&s["type"], &s["name"]),
        (&json!("http"), &json!("scv-bridge"))
    );
    assert_eq!(s["headers"][0]["name"], "Authorization");
    let url = s["url"].as_str().expect("a url");
    let header = s["headers"][0]["value"].as_str().expect("a header");
    let secret = header.strip_prefix("Bearer ").expect("bearer");
    let c = connect(url, secret)
        .await
        .expect("the session's grant admits");
    let at = call(&c, "schedule", json!({"at": "12:30", "text": "Stand up"}))
        .await
        .expect("scheduled");
    assert_eq!(at["state"], "scheduled");
    within(c.cancel()).await.expect("client closes");
    t.at(SAT_HALF_PAST_MS).await;
    assert_eq!(t.channel.texts(OWNER), vec!["Stand up".to_string()]);
    t.d.stop().await;
}

/// The daemon's pipeline offers the owner tools by the policy: on an account that answers anyone
/// and grants tools to its owner, the owner's turn gets them and a stranger's identical one
/// does not; on an account that grants no tools, not even the owner's.
#[tokio::test]
async fn the_pipeline_offers_the_tools_to_the_owner_with_tools_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lines = "senders = \"anyone\"\nremote_tools = \"owner\"\n";
    let t = start_with(dir.path(), true, SAT_NOON_MS, lines).await;
    let phone = scv_bridge::config::AccountKey::new(scv_bridge::config::Channel::Wechat, "phone");
    for (id, from) in [("m1", OWNER), ("m2", STRANGER)] {
        let m = msg_on(&phone, id, from, "remind me at 12:30");
        t.conv.accept(vec![m]).await.expect("accept");
        within(t.conv.quiescent()).await;
    }
    assert!(t.conv.owner_tools().is_some(), "the daemon set the tools");
    assert_eq!(t.agent.offered_owner_tools(), [true, false]);
    t.d.stop().await;

    let dir = tempfile::tempdir().expect("tempdir");
    let t = start_with(dir.path(), true, SAT_NOON_MS, "remote_tools = \"none\"\n").await;
    let m = msg_on(&phone, "m1", OWNER, "remind me at 12:30");
    t.conv.accept(vec![m]).await.expect("accept");
    within(t.conv.quiescent()).await;
    assert_eq!(t.agent.offered_owner_tools(), [false]);
    t.d.stop().await;
}

/// `ask_owner` is a confirm question: the owner's yes comes back as `yes`; a question nobody
/// answers comes back `expired` once the daemon's clock passes its deadline.
#[tokio::test]
async fn ask_owner_returns_the_owners_answer_or_expired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = start(dir.path(), true, SAT_NOON_MS).await;
    let owner = t.d.core.owner().expect("owner service").clone();
    let confirm = t.d.core.confirm().expect("confirm service").clone();
    let tools = OwnerTools::new(owner, Some(confirm.clone()), CancellationToken::new());
    let endpoint = ToolEndpoint::start(tools).await.expect("endpoint");
    let g = endpoint.grant();
    let c = std::sync::Arc::new(connect(&g.url, secret(&g)).await.expect("admitted"));

    let asking = {
        let c = c.clone();
        tokio::spawn(async move {
            let args = json!({"question": "Deploy now?", "timeout_seconds": 600});
            call(&c, "ask_owner", args).await
        })
    };
    within(t.channel.wait_sent(1)).await;
    assert!(t.channel.texts(OWNER)[0].contains("Deploy now?"));
    let q = confirm.open_questions().pop().expect("the open question");
    confirm.answer(&q.id, true, OWNER).await.expect("answered");
    let yes = within(asking).await.expect("task").expect("answered");
    assert_eq!(
        (yes["id"].as_str(), yes["answer"].as_str()),
        (Some(q.id.as_str()), Some("yes"))
    );

    let asking = {
        let c = c.clone();
        tokio::spawn(async move {
            let args = json!({"question": "Restart?", "timeout_seconds": 60});
            call(&c, "ask_owner", args).await
        })
    };
    within(t.channel.wait_sent(2)).await;
    t.clock.set(SAT_NOON_MS + 61_000);
    let expired = within(asking).await.expect("task").expect("answered");
    assert_eq!(expired["answer"], "expired", "{expired}");
    t.d.stop().await;
}
