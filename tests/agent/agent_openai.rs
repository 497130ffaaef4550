//! The `openai` backend against the fake OpenAI-compatible server on loopback.

use std::time::Duration;

use scv_bridge::agent::openai::history::HistoryLimits;
use scv_bridge::agent::{
    Agent, AgentErrorKind, ChatMessage, OpenAiAgent, OpenAiOptions, Role, SessionKey, TurnRequest,
    Usage, daily_usage,
};
use scv_bridge::config::{AccountKey, AgentBackend, AgentConfig, Channel};
use scv_bridge::conversation::ChatId;
use scv_bridge::secrets::Secret;
use scv_bridge::store::{Store, StoreGuard};
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use tokio_util::sync::CancellationToken;

fn session(chat: &str) -> SessionKey {
    SessionKey {
        account: AccountKey::new(Channel::Wechat, "phone"),
        chat: ChatId::new(chat),
    }
}

fn req(chat: &str, prompt: &str) -> TurnRequest {
    TurnRequest {
        session: session(chat),
        prompt: prompt.to_string(),
        no_tools: true,
        auto_approve: false,
        approver: None,
        workspace: None,
        channel_label: "WeChat",
        language: Default::default(),
        attachments: Vec::new(),
        events: Default::default(),
        owner_tools: None,
    }
}

fn opts(fake: &FakeOpenAi) -> OpenAiOptions {
    let mut o = OpenAiOptions::new(fake.base_url(), "fake-model");
    o.api_key = Some(Secret::new("sk-test-123"));
    o.api_key_env = "FAKE_KEY_ENV".into();
    o.system_prompt = "You are Scv.".into();
    o
}

/// Options for paused-clock tests: with no other timer pending, the clock can only jump to the
/// waits under test, never to a deadline, while loopback IO is in flight.
fn paused_opts(fake: &FakeOpenAi) -> OpenAiOptions {
    let mut o = opts(fake);
    o.turn_timeout = None;
    o.connect_timeout = None;
    o
}

fn memory_store() -> (Store, StoreGuard) {
    Store::open_in_memory().expect("store")
}

async fn turn(agent: &OpenAiAgent, chat: &str, prompt: &str) -> scv_bridge::agent::TurnOutput {
    match agent
        .turn(req(chat, prompt), CancellationToken::new())
        .await
    {
        Ok(o) => o,
        Err(e) => panic!("turn failed: {e:?}"),
    }
}

/// The (role, content) pairs of a recorded request after the system prompt.
fn convo(messages: &[ChatMessage]) -> Vec<(Role, String)> {
    messages[1..]
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect()
}

#[tokio::test]
async fn the_system_prompt_names_the_platform_and_the_chats_language() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store).expect("agent");
    fake.push(Reply::text("好的"));
    fake.push(Reply::text("ok"));
    let zh = TurnRequest {
        language: scv_bridge::words::Lang::ZhCn,
        attachments: Vec::new(),
        events: Default::default(),
        ..req("c1", "你好")
    };
    agent
        .turn(zh, CancellationToken::new())
        .await
        .expect("turn");
    agent
        .turn(req("c2", "hi"), CancellationToken::new())
        .await
        .expect("turn");
    let r = fake.requests();
    let (zh, en) = (&r[0].messages[0].content, &r[1].messages[0].content);
    assert!(zh.contains("on WeChat"), "{zh}");
    assert!(zh.contains("answer in Simplified Chinese"), "{zh}");
    assert!(en.contains("answer in English"), "{en}");
    assert!(!en.contains("Chinese"), "{en}");
}

#[tokio::test]
async fn streams_the_answer_with_system_prompt_usage_and_key() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store.clone()).expect("agent");
    fake.push(Reply::text("Hello there, 你好 friend"));
    let out = turn(&agent, "c1", "hi").await;
    assert_eq!(out.text, "Hello there, 你好 friend");
    assert_eq!(
        out.usage,
        Some(Usage {
            prompt_tokens: 11,
            completion_tokens: 7,
            total_tokens: 18,
            estimated: false
        })
    );
    let r = &fake.requests()[0];
    assert_eq!(r.model, "fake-model");
    assert!(r.stream);
    assert_eq!(
        r.stream_options,
        Some(serde_json::json!({"include_usage": true}))
    );
    assert_eq!(r.authorization.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(r.messages[0].role, Role::System);
    assert!(r.messages[0].content.starts_with("You are Scv."));
    assert!(r.messages[0].content.contains("WeChat"));
    assert_eq!(convo(&r.messages), [(Role::User, "hi".to_string())]);
    // What the agent keeps of the turn goes with the answer; a caller storing none drops it.
    drop(out);
    let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let u = daily_usage(&store, "wechat:phone", &day)
        .await
        .expect("usage");
    assert_eq!((u.turns, u.prompt_tokens, u.completion_tokens), (1, 11, 7));
}

#[tokio::test]
async fn estimates_usage_when_the_server_reports_none() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store.clone()).expect("agent");
    fake.push(Reply::text_without_usage("abcdefgh 你好"));
    let out = turn(&agent, "c1", "hi").await;
    let u = out.usage.expect("usage");
    assert!(u.estimated);
    assert_eq!(u.completion_tokens, 3 + 2, "9 ASCII chars and 2 CJK chars");
    assert!(u.prompt_tokens > 0);
    assert_eq!(u.total_tokens, u.prompt_tokens + u.completion_tokens);
    drop(out);
    let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let d = daily_usage(&store, "wechat:phone", &day)
        .await
        .expect("usage");
    assert_eq!(d.estimated_turns, 1);
}

#[tokio::test]
async fn history_survives_a_restart_is_bounded_and_reset() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("state.db");
    {
        let (store, guard) = Store::open(&path).expect("store");
        let agent = OpenAiAgent::new(opts(&fake), store).expect("agent");
        turn(&agent, "c1", "one").await;
        turn(&agent, "c1", "two").await;
        turn(&agent, "other", "x").await;
        drop(agent);
        guard.close();
    }
    let (store, _g) = Store::open(&path).expect("reopen");
    let mut o = opts(&fake);
    o.history = HistoryLimits {
        max_turns: 2,
        max_bytes: 10_000,
    };
    let agent = OpenAiAgent::new(o, store.clone()).expect("agent");
    turn(&agent, "c1", "three").await;
    let pair = |u: &str| {
        [
            (Role::User, u.to_string()),
            (Role::Assistant, format!("echo: {u}")),
        ]
    };
    let r = fake.requests();
    let mut want: Vec<_> = pair("one").into_iter().chain(pair("two")).collect();
    want.push((Role::User, "three".into()));
    assert_eq!(
        convo(&r[3].messages),
        want,
        "history from before the restart"
    );
    turn(&agent, "c1", "four").await;
    let mut want: Vec<_> = pair("two").into_iter().chain(pair("three")).collect();
    want.push((Role::User, "four".into()));
    assert_eq!(
        convo(&fake.requests()[4].messages),
        want,
        "oldest dropped at 2 turns"
    );

    // A byte bound keeps only what fits, newest first.
    let mut o = opts(&fake);
    o.history = HistoryLimits {
        max_turns: 10,
        max_bytes: "four".len() + "echo: four".len(),
    };
    let small = OpenAiAgent::new(o, store.clone()).expect("agent");
    turn(&small, "c1", "five").await;
    let mut want: Vec<_> = pair("four").into_iter().collect();
    want.push((Role::User, "five".into()));
    assert_eq!(convo(&fake.requests()[5].messages), want);

    small.reset(&session("c1")).await.expect("reset");
    turn(&small, "c1", "fresh").await;
    assert_eq!(
        convo(&fake.requests()[6].messages),
        [(Role::User, "fresh".to_string())]
    );
    turn(&small, "other", "again").await;
    assert_eq!(
        convo(&fake.requests()[7].messages).len(),
        3,
        "another chat keeps its own history"
    );
}

#[tokio::test]
async fn a_failed_turn_is_not_remembered() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store).expect("agent");
    fake.push(Reply::status(404));
    let err = agent
        .turn(req("c1", "lost"), CancellationToken::new())
        .await
        .err()
        .expect("404 fails");
    assert_eq!(err.kind, AgentErrorKind::Failed);
    assert!(err.message.contains("404"), "{}", err.message);
    turn(&agent, "c1", "kept").await;
    assert_eq!(
        convo(&fake.requests()[1].messages),
        [(Role::User, "kept".to_string())]
    );
}

#[tokio::test(start_paused = true)]
async fn a_429_is_retried_after_its_retry_after() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(paused_opts(&fake), store).expect("agent");
    fake.push(Reply::too_many_requests("5"));
    fake.push(Reply::text("finally"));
    assert_eq!(turn(&agent, "c1", "hi").await.text, "finally");
    let r = fake.requests();
    assert_eq!(r.len(), 2);
    let gap = r[1].at - r[0].at;
    assert!(
        gap >= Duration::from_secs(5) && gap < Duration::from_secs(6),
        "waited {gap:?}, not the 5 s Retry-After"
    );
}

#[tokio::test(start_paused = true)]
async fn a_500_storm_ends_as_unavailable_after_bounded_backoff() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(paused_opts(&fake), store).expect("agent");
    for _ in 0..5 {
        fake.push(Reply::status(500));
    }
    let err = agent
        .turn(req("c1", "hi"), CancellationToken::new())
        .await
        .err()
        .expect("fails");
    assert_eq!(err.kind, AgentErrorKind::Unavailable);
    assert_eq!(
        err.message,
        "the agent is unavailable (500 after 3 attempts)"
    );
    let r = fake.requests();
    assert_eq!(r.len(), 3, "three tries, then the pipeline's own retry");
    assert_eq!(r[1].at - r[0].at, Duration::from_secs(1));
    assert_eq!(r[2].at - r[1].at, Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_long_retry_after_is_handed_to_the_caller_not_slept() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(paused_opts(&fake), store).expect("agent");
    fake.push(Reply::too_many_requests("600"));
    let err = agent
        .turn(req("c1", "hi"), CancellationToken::new())
        .await
        .err()
        .expect("fails");
    assert_eq!(err.kind, AgentErrorKind::Unavailable);
    assert_eq!(err.retry_after, Some(Duration::from_secs(600)));
    assert_eq!(fake.requests().len(), 1, "not slept and retried");
}

#[tokio::test]
async fn a_401_is_an_auth_error_naming_the_variable_not_the_key() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store).expect("agent");
    for status in [401, 403] {
        fake.push(Reply::status(status));
        let err = agent
            .turn(req("c1", "hi"), CancellationToken::new())
            .await
            .err()
            .expect("fails");
        assert_eq!(err.kind, AgentErrorKind::Auth);
        assert_eq!(
            err.message,
            format!("the agent rejected the API key ({status}); check FAKE_KEY_ENV")
        );
        assert!(!err.message.contains("sk-test"));
    }
    assert_eq!(fake.requests().len(), 2, "auth errors are not retried");
}

#[tokio::test]
async fn a_context_length_error_trims_history_and_retries_once() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store).expect("agent");
    for p in ["a", "b", "c", "d"] {
        turn(&agent, "c1", p).await;
    }
    fake.push(Reply::context_length());
    fake.push(Reply::text("fits now"));
    assert_eq!(turn(&agent, "c1", "e").await.text, "fits now");
    let r = fake.requests();
    assert_eq!(r.len(), 6);
    assert_eq!(convo(&r[4].messages).len(), 9, "4 exchanges + the prompt");
    let retried = convo(&r[5].messages);
    assert_eq!(retried.len(), 5, "the older half dropped");
    assert_eq!(retried[0], (Role::User, "c".to_string()));
    turn(&agent, "c1", "f").await;
    let next = convo(&fake.requests()[6].messages);
    assert_eq!(next.len(), 7, "the stored history was trimmed too");
    assert_eq!(next[0], (Role::User, "c".to_string()));

    fake.push(Reply::context_length());
    fake.push(Reply::context_length());
    let err = agent
        .turn(req("c1", "g"), CancellationToken::new())
        .await
        .err()
        .expect("fails");
    assert_eq!(err.kind, AgentErrorKind::Failed);
    assert_eq!(fake.requests().len(), 9, "retried exactly once");
}

#[tokio::test]
async fn cancel_mid_stream_returns_promptly() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = std::sync::Arc::new(OpenAiAgent::new(opts(&fake), store).expect("agent"));
    fake.push(Reply::slow("Hel", Duration::from_secs(600), "lo"));
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel) = (agent.clone(), cancel.clone());
        tokio::spawn(async move { agent.turn(req("c1", "hi"), cancel).await })
    };
    fake.wait_requests(1).await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("prompt")
        .expect("join");
    assert_eq!(out.err().map(|e| e.kind), Some(AgentErrorKind::Cancelled));
}

#[tokio::test]
async fn a_slow_agent_hits_the_turn_timeout() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let mut o = opts(&fake);
    o.turn_timeout = Some(Duration::from_millis(200));
    let agent = OpenAiAgent::new(o, store).expect("agent");
    fake.push(Reply::slow("Hel", Duration::from_secs(600), "lo"));
    let err = agent
        .turn(req("c1", "hi"), CancellationToken::new())
        .await
        .err()
        .expect("times out");
    assert_eq!(err.kind, AgentErrorKind::Unavailable);
    assert!(err.message.contains("did not answer"), "{}", err.message);
}

#[tokio::test]
async fn a_stream_that_does_not_parse_is_unavailable_and_not_remembered() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store).expect("agent");
    let broken = [
        // The case: the only content event is cut off mid-JSON, then [DONE].
        Reply::truncated_event(""),
        // Part of the answer arrived before the broken event: still not an answer.
        Reply::truncated_event("Hel"),
        // Bytes that are no stream at all.
        Reply::Raw {
            body: "\u{1}\u{2}<html>502 Bad Gateway</html>\n".into(),
        },
    ];
    for reply in broken {
        fake.push(reply.clone());
        let err = agent
            .turn(req("c1", "lost"), CancellationToken::new())
            .await
            .err()
            .unwrap_or_else(|| panic!("{reply:?} is no answer"));
        assert_eq!(err.kind, AgentErrorKind::Unavailable, "{reply:?}: {err:?}");
    }
    turn(&agent, "c1", "kept").await;
    assert_eq!(
        convo(&fake.requests()[3].messages),
        [(Role::User, "kept".to_string())],
        "no broken turn is in the history"
    );
}

#[tokio::test]
async fn a_closed_port_is_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(OpenAiOptions::new(format!("http://{addr}/v1"), "m"), store)
        .expect("agent");
    let err = agent
        .turn(req("c1", "hi"), CancellationToken::new())
        .await
        .err()
        .expect("fails");
    assert_eq!(err.kind, AgentErrorKind::Unavailable);
}

#[tokio::test]
async fn complete_keeps_no_history() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let (store, _g) = memory_store();
    let agent = OpenAiAgent::new(opts(&fake), store).expect("agent");
    let msgs = [
        ChatMessage::new(Role::System, "Triage mail."),
        ChatMessage::new(Role::User, "Subject: invoice"),
    ];
    let (text, usage) = agent.complete(&msgs).await.expect("complete");
    assert_eq!(text, "echo: Subject: invoice");
    assert!(!usage.estimated);
    agent.complete(&msgs).await.expect("complete");
    let r = fake.requests();
    assert_eq!(r[1].messages, msgs, "no history between calls");
}

#[tokio::test]
async fn the_factory_builds_openai_and_reports_a_missing_key() {
    let (store, _g) = memory_store();
    let cfg = AgentConfig {
        backend: AgentBackend::Openai,
        base_url: Some("http://127.0.0.1:9/v1".into()),
        model: Some("m".into()),
        api_key_env: Some("SCV_TEST_SURELY_UNSET_KEY".into()),
        ..AgentConfig::default()
    };
    let err = scv_bridge::agent::from_config(&cfg, store.clone())
        .err()
        .expect("missing key");
    assert!(err.contains("SCV_TEST_SURELY_UNSET_KEY"), "{err}");
    let no_model = AgentConfig {
        model: None,
        api_key_env: None,
        ..cfg.clone()
    };
    let err = scv_bridge::agent::from_config(&no_model, store.clone())
        .err()
        .expect("missing model");
    assert!(err.contains("agent.model"), "{err}");
    let no_url = AgentConfig {
        base_url: None,
        api_key_env: None,
        ..cfg.clone()
    };
    let err = scv_bridge::agent::from_config(&no_url, store.clone())
        .err()
        .expect("no default endpoint");
    assert_eq!(err, "agent.base_url is not set");
    let ok = AgentConfig {
        api_key_env: None,
        max_message_bytes: Some(4096),
        ..cfg.clone()
    };
    let built = scv_bridge::agent::from_config(&ok, store.clone()).expect("builds");
    let info = built.describe();
    assert_eq!(
        (info.backend.as_str(), info.model.as_deref()),
        ("openai", Some("m"))
    );
    assert_eq!(info.max_message_bytes, 4096);
    assert_eq!(info.problem, None);

    // `build` never fails: what cannot work is a stand-in that says why, with the fix.
    let stand_in = scv_bridge::agent::build(&cfg, store);
    let info = stand_in.describe();
    let problem = info.problem.expect("a problem");
    assert!(problem.message.contains("SCV_TEST_SURELY_UNSET_KEY"));
    assert!(
        problem
            .fix
            .contains("Environment=SCV_TEST_SURELY_UNSET_KEY=")
    );
    let err = stand_in
        .turn(req("c1", "hi"), CancellationToken::new())
        .await
        .err()
        .expect("no answer");
    assert_eq!(err.kind, AgentErrorKind::Unavailable);
}
