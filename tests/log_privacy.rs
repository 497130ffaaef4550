//! A full run's logs, at every level, carry no message text, answer text or secret.

use std::io::Write;
use std::sync::{Arc, Mutex};

use scv_bridge::adapters::memory::MemoryFactory;
use scv_bridge::agent::Agent;
use scv_bridge::agent::openai::{OpenAiAgent, OpenAiOptions};
use scv_bridge::config::{AccountKey, Config};
use scv_bridge::conversation::*;
use scv_bridge::daemon::{self, Wiring};
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::Secret;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::wait_for_state;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const OWNER: &str = "owner-7f3a";
const SECRET_TEXT: &str = "my-bank-pin-is-4921";
const ANSWER: &str = "the-private-answer-8812";
const STRANGER_TEXT: &str = "stranger-says-hello-5531";
const API_KEY: &str = "sk-test-key-0c1d2e3f";

#[tokio::test]
async fn no_message_text_or_secret_reaches_the_logs() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let fake = FakeOpenAi::start().await.expect("fake");
    fake.push(Reply::status(500));
    fake.push(Reply::text(ANSWER));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[wechat.phone]\nsenders = \"owner\"\n",
            dir.path().join("state").display(),
            dir.path().join("state/daemon.sock").display()
        ),
    )
    .expect("config");
    let config = Config::load(&path).expect("config");
    let (store, _g) = scv_bridge::store::Store::open_in_memory().expect("store");
    let mut opts = OpenAiOptions::new(fake.base_url(), "m");
    opts.api_key = Some(Secret::new(API_KEY));
    opts.backoff_base = std::time::Duration::from_millis(1);
    let agent: Arc<dyn Agent> = Arc::new(OpenAiAgent::new(opts, store).expect("agent"));
    let cell = Arc::new(std::sync::OnceLock::new());
    let c2 = cell.clone();
    let d = daemon::start_with(
        config,
        move |_c, store| {
            let conv = Conversation::new(store.clone(), agent);
            let f = MemoryFactory::new(Some(OWNER), conv.clone());
            let _ = c2.set((f.clone(), conv.clone()));
            let f: Arc<dyn ComponentFactory> = f;
            Wiring {
                factory: f,
                conversation: Some(conv),
                confirm: None,
            }
        },
        LifecyclePolicy::default(),
    )
    .await
    .expect("start");
    let (factory, conv) = cell.get().cloned().expect("wired");
    wait_for_state(
        &d.core.registry(),
        "wechat:phone",
        ComponentState::Connected,
    )
    .await;
    let m = |id: &str, from: &str, text: &str| Inbound {
        account: AccountKey::parse("wechat:phone").expect("key"),
        chat: ChatId::new(from),
        sender: SenderId::new(from),
        msg_id: PlatformMsgId::new(id),
        text: text.into(),
        at_unix_ms: 0,
        reply: ReplyContext::default(),
    };
    conv.accept(vec![
        m("1", "stranger", STRANGER_TEXT),
        m("2", OWNER, SECRET_TEXT),
    ])
    .await
    .expect("accept");
    let ch = factory.channel("wechat:phone");
    ch.wait_sent(1).await;
    assert_eq!(ch.texts(OWNER), [ANSWER]);
    let headers = fake.requests()[0].authorization.clone().unwrap_or_default();
    assert!(headers.contains(API_KEY), "the key was really sent");
    d.stop().await;

    let logs = String::from_utf8_lossy(&captured.0.lock().expect("lock")).into_owned();
    assert!(logs.len() > 200, "the run logged something: {logs}");
    for needle in [SECRET_TEXT, ANSWER, STRANGER_TEXT, API_KEY] {
        assert!(!logs.contains(needle), "{needle} leaked into the logs");
    }
}
