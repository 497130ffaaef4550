//! The pipeline through a running daemon: in-memory chat accounts, the real agent backends,
//! and fake OpenAI / SCV servers over real sockets.

use crate::memory_support;

use std::path::Path;
use std::sync::Arc;

use scv_bridge::adapters::memory::MemoryFactory;
use scv_bridge::agent::Agent;
use scv_bridge::agent::openai::{OpenAiAgent, OpenAiOptions};
use scv_bridge::agent::scv::{ScvAgent, ScvOptions, Transport};
use scv_bridge::config::{AccountKey, Config};
use scv_bridge::conversation::*;
use scv_bridge::daemon::RunningDaemon;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::fake_scv::FakeScv;

const OWNER: &str = "o9@im.wechat";

async fn start(
    dir: &Path,
    accounts: &str,
    agent: Arc<dyn Agent>,
) -> (RunningDaemon, Arc<MemoryFactory>, Arc<Conversation>) {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{accounts}",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display()
    );
    std::fs::write(&path, text).expect("config");
    let config = Config::load(&path).expect("config");
    memory_support::start(config, OWNER, move |_| agent).await
}

fn msg(account: &str, id: &str, from: &str, text: &str) -> Inbound {
    Inbound {
        account: AccountKey::parse(account).expect("account"),
        chat: ChatId::new(from),
        sender: SenderId::new(from),
        msg_id: PlatformMsgId::new(id),
        text: text.into(),
        at_unix_ms: 0,
        reply: ReplyContext::default(),
        media: Vec::new(),
    }
}

#[tokio::test]
async fn owner_answered_through_openai_and_strangers_never_reach_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let (store, _g) = scv_bridge::store::Store::open_in_memory().expect("store");
    let agent: Arc<dyn Agent> =
        Arc::new(OpenAiAgent::new(OpenAiOptions::new(fake.base_url(), "m"), store).expect("agent"));
    let (d, f, conv) = start(dir.path(), "[wechat.phone]\n", agent).await;
    conv.accept(vec![
        msg("wechat:phone", "s1", "stranger", "hi"),
        msg("wechat:phone", "o1", OWNER, "hello"),
    ])
    .await
    .expect("accept");
    let ch = f.channel("wechat:phone");
    ch.wait_sent(1).await;
    assert_eq!(ch.texts(OWNER), ["echo: hello"]);
    assert!(ch.texts("stranger").is_empty());
    assert_eq!(
        fake.requests().len(),
        1,
        "the stranger's message never reached the model"
    );
    // A redelivery after the answer changes nothing.
    conv.accept(vec![msg("wechat:phone", "o1", OWNER, "hello")])
        .await
        .expect("accept");
    conv.accept(vec![msg("wechat:phone", "o2", OWNER, "again")])
        .await
        .expect("accept");
    ch.wait_sent(2).await;
    assert_eq!(ch.texts(OWNER), ["echo: hello", "echo: again"]);
    assert_eq!(fake.requests().len(), 2);
    // The stranger's redelivery is a copy too, and its drop is not counted twice.
    conv.accept(vec![msg("wechat:phone", "s1", "stranger", "hi")])
        .await
        .expect("accept");
    // Every message not answered shows by reason in `status --json`, as on the metrics page.
    let status =
        scv_bridge::client::request(&d.socket, scv_bridge::protocol::DaemonCommand::Status)
            .await
            .expect("status");
    let phone = status
        .components
        .iter()
        .find(|c| c.id == "wechat:phone")
        .expect("the account");
    let dropped: Vec<(&str, u64)> = phone
        .dropped
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(dropped, [("duplicate", 2), ("not_owner", 1)]);
    let json = serde_json::to_value(phone).expect("json");
    assert_eq!(json["dropped"]["not_owner"], 1, "{json}");
    d.stop().await;
}

// Paused clock: the pipeline's retry backoff passes without real waiting.
#[tokio::test(start_paused = true)]
async fn agent_down_then_up_through_the_daemon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeOpenAi::start().await.expect("fake openai");
    for _ in 0..3 {
        fake.push(Reply::status(500));
    }
    let (store, _g) = scv_bridge::store::Store::open_in_memory().expect("store");
    let mut opts = OpenAiOptions::new(fake.base_url(), "m");
    opts.backoff_base = std::time::Duration::from_millis(1);
    // With a paused clock, deadlines would fire while the runtime waits on sockets.
    opts.connect_timeout = None;
    opts.turn_timeout = None;
    let agent: Arc<dyn Agent> = Arc::new(OpenAiAgent::new(opts, store).expect("agent"));
    let (d, f, conv) = start(dir.path(), "[wechat.phone]\n", agent).await;
    conv.accept(vec![msg("wechat:phone", "o1", OWNER, "still there?")])
        .await
        .expect("accept");
    let ch = f.channel("wechat:phone");
    ch.wait_sent(2).await;
    let texts = ch.texts(OWNER);
    assert!(
        texts[0].starts_with("The agent is not answering:"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "echo: still there?");
    d.stop().await;
}

#[tokio::test]
async fn scv_sessions_get_tools_only_for_the_owner() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeScv::start(&dir.path().join("agent.sock"))
        .await
        .expect("fake scv");
    let agent: Arc<dyn Agent> = Arc::new(ScvAgent::new(ScvOptions::new(Transport::Socket(
        fake.path().into(),
    ))));
    let accounts = "[wechat.phone]\nsenders = \"anyone\"\nremote_tools = \"owner\"\nworkspace = \"/srv/work\"\n";
    let (d, f, conv) = start(dir.path(), accounts, agent).await;
    conv.accept(vec![
        msg("wechat:phone", "s1", "stranger", "hi"),
        msg("wechat:phone", "o1", OWNER, "hi"),
    ])
    .await
    .expect("accept");
    let ch = f.channel("wechat:phone");
    ch.wait_sent(2).await;
    let rec = fake.recorded();
    assert_eq!(rec.sessions.len(), 2);
    let tool_free: Vec<_> = rec
        .sessions
        .iter()
        .filter(|s| s.no_tools == Some(true))
        .collect();
    let owner: Vec<_> = rec
        .sessions
        .iter()
        .filter(|s| s.auto_approve == Some(true))
        .collect();
    assert_eq!((tool_free.len(), owner.len()), (1, 1), "{:?}", rec.sessions);
    assert_ne!(owner[0].no_tools, Some(true));
    assert!(
        rec.sessions
            .iter()
            .all(|s| s.cwd == "/srv/work" && s.channel.as_deref() == Some("WeChat"))
    );
    assert_eq!(
        d.core
            .registry()
            .cell("wechat:phone")
            .expect("cell")
            .get()
            .user_id
            .as_deref(),
        Some(OWNER)
    );
    d.stop().await;
}
