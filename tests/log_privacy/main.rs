//! Full runs' logs, at every level and from every thread, carry no message text, answer text,
//! question text, approval summary, card content or secret.

// The voice run uses the WeChat bed only, not the re-exports the media tests share.
#[allow(unused_imports)]
#[path = "../platforms/media_support/mod.rs"]
mod media_support;
#[path = "../memory_support/mod.rs"]
mod memory_support;
mod qq;
#[path = "../platforms/qq/support.rs"]
mod qq_support;
mod telegram;
#[path = "../platforms/telegram/support.rs"]
mod telegram_support;
mod voice;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::feishu::{ConfirmCards, build_with};
use scv_bridge::adapters::memory::{MemoryChannel, MemoryFactory};
use scv_bridge::agent::openai::{OpenAiAgent, OpenAiOptions};
use scv_bridge::agent::{Agent, ApprovalRequest, ScvAgent, ScvOptions, SessionKey, Transport};
use scv_bridge::client;
use scv_bridge::config::{AccountKey, AccountSpec, Config};
use scv_bridge::confirm::{Clock, ConfirmService};
use scv_bridge::conversation::*;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::{ComponentState, ConfirmState, DaemonCommand};
use scv_bridge::secrets::{CredentialStore, Credentials, Secret};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::InstantAgent;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::fake_scv::FakeScv;
use scv_bridge::testing::wait_for_state;
use scv_feishu::fake::{FakeConfig, FakeFeishu};
use scv_feishu::frame::FrameType;
use tokio_util::sync::CancellationToken;

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

/// Everything logged in this test binary at TRACE, from every thread (the store's writer, the
/// fakes' servers, blocking tasks), not only the test's own.
fn captured() -> &'static Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        captured
    })
}

/// Fails if any of `needles` is in the logs so far.
fn assert_logs_clean(needles: &[&str]) {
    let logs = String::from_utf8_lossy(&captured().0.lock().expect("lock")).into_owned();
    assert!(logs.len() > 200, "the run logged something: {logs}");
    for needle in needles {
        assert!(!logs.contains(needle), "{needle} leaked into the logs");
    }
}

/// Fails the test if `f` takes longer than 20 s of real time (it never should; nothing sleeps).
async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out waiting")
}

const OWNER: &str = "owner-7f3a";
const SECRET_TEXT: &str = "my-bank-pin-is-4921";
const ANSWER: &str = "the-private-answer-8812";
const STRANGER_TEXT: &str = "stranger-says-hello-5531";
const API_KEY: &str = "sk-test-key-0c1d2e3f";
const QUESTION: &str = "Wire 9300 to account 55-ask-7716?";
const SUMMARY: &str = "transfer --to 55-summary-2291";
/// What the fake scv agent asks to run (its approval summary).
const AGENT_SUMMARY: &str = "rm -rf build";
const CARD_QUESTION: &str = "Ship the card-secret-6604 build?";
const CARD_TEXT_QUESTION: &str = "Publish the card-secret-7719 notes?";

#[tokio::test]
async fn no_message_text_or_secret_reaches_the_logs() {
    captured();
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
    let (d, factory, conv) = memory_support::start(config, OWNER, move |_| agent).await;
    conv.accept(vec![
        msg("1", "stranger", STRANGER_TEXT),
        msg("2", OWNER, SECRET_TEXT),
    ])
    .await
    .expect("accept");
    let ch = factory.channel("wechat:phone");
    ch.wait_sent(1).await;
    assert_eq!(ch.texts(OWNER), [ANSWER]);
    let headers = fake.requests()[0].authorization.clone().unwrap_or_default();
    assert!(headers.contains(API_KEY), "the key was really sent");
    d.stop().await;
    assert_logs_clean(&[SECRET_TEXT, ANSWER, STRANGER_TEXT, API_KEY]);
}

/// A message on `wechat:phone` in `from`'s direct chat.
fn msg(id: &str, from: &str, text: &str) -> Inbound {
    Inbound {
        account: AccountKey::parse("wechat:phone").expect("key"),
        chat: ChatId::new(from),
        sender: SenderId::new(from),
        msg_id: PlatformMsgId::new(id),
        text: text.into(),
        at_unix_ms: 0,
        reply: ReplyContext::default(),
        media: Vec::new(),
    }
}

/// Waits until a message to the owner contains `needle`.
async fn owner_gets(channel: &MemoryChannel, needle: &str) {
    within(async {
        while !channel.texts(OWNER).iter().any(|t| t.contains(needle)) {
            channel.wait_sent(channel.sent().len() + 1).await;
        }
    })
    .await
}

/// A daemon with a WeChat-like memory account, confirm questions and the fake scv agent asking
/// for approvals.
async fn confirm_daemon(
    dir: &Path,
) -> (
    RunningDaemon,
    Arc<Conversation>,
    Arc<MemoryChannel>,
    FakeScv,
) {
    let state = dir.join("state");
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nnotify = \"wechat:phone\"\n\
             [wechat.phone]\nsenders = \"owner\"\nremote_tools = \"owner\"\napprovals = \"ask\"\n",
            state.display(),
            dir.join("run").join("daemon.sock").display()
        ),
    )
    .expect("config");
    std::fs::create_dir_all(&state).expect("state dir");
    CredentialStore::Files(state.join("credentials"))
        .save(
            "wechat:phone",
            &Credentials::default()
                .with("bot_token", "t")
                .with("owner_id", OWNER),
        )
        .expect("owner");
    let config = Config::load(&path).expect("config");
    let fake = FakeScv::start(&dir.join("agent.sock"))
        .await
        .expect("fake scv");
    let agent: Arc<dyn Agent> = Arc::new(ScvAgent::new(ScvOptions::new(Transport::Socket(
        fake.path().into(),
    ))));
    let slot = Arc::new(OnceLock::new());
    let sl = slot.clone();
    let d = daemon::start_with(
        config,
        move |creds, store, registry| {
            let (confirm, conv) =
                daemon::confirm_and_pipeline(store, creds, Clock::tokio(), registry, agent);
            let factory = MemoryFactory::new(
                Some(OWNER),
                scv_bridge::port::Ports::new(store.clone(), creds.clone(), conv.clone()),
            );
            let _ = sl.set((conv.clone(), factory.channel("wechat:phone")));
            let f: Arc<dyn ComponentFactory> = factory;
            Wiring {
                factory: f,
                conversation: Some(conv),
                confirm: Some(confirm),
            }
        },
        LifecyclePolicy::default(),
    )
    .await
    .expect("daemon");
    wait_for_state(
        &d.core.registry(),
        "wechat:phone",
        ComponentState::Connected,
    )
    .await;
    let (conv, channel) = slot.get().cloned().expect("wired");
    (d, conv, channel, fake)
}

#[tokio::test]
async fn no_question_text_or_approval_summary_reaches_the_logs() {
    captured();
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, conv, channel, fake) = confirm_daemon(dir.path()).await;

    // A question asked over the control socket, answered by the owner.
    let asked = client::request(
        &d.socket,
        DaemonCommand::ConfirmAsk {
            question: QUESTION.into(),
            parent: None,
            timeout_seconds: Some(600),
        },
    )
    .await
    .expect("asked")
    .confirm
    .expect("question");
    owner_gets(&channel, QUESTION).await;
    conv.accept(vec![msg("a1", OWNER, "y")]).await.expect("y");
    // The answer is recorded by the pipeline's handling of the message, so once the pipeline is
    // quiet the question is closed.
    within(conv.quiescent()).await;
    let answered = client::request(
        &d.socket,
        DaemonCommand::ConfirmStatus {
            id: asked.id.clone(),
        },
    )
    .await
    .expect("status");
    assert_eq!(answered.confirm.map(|c| c.state), Some(ConfirmState::Yes));

    // An approval the bridge itself asks for.
    let approver = conv.approver().expect("the confirm service approves");
    let decided = tokio::spawn(approver.approve(
        ApprovalRequest {
            session: SessionKey {
                account: AccountKey::parse("wechat:phone").expect("key"),
                chat: ChatId::new(OWNER),
            },
            tool: "shell".into(),
            summary: SUMMARY.into(),
            risk: None,
        },
        CancellationToken::new(),
    ));
    owner_gets(&channel, SUMMARY).await;
    conv.accept(vec![msg("a2", OWNER, "n")]).await.expect("n");
    assert!(!within(decided).await.expect("task"), "the owner said no");

    // An approval the agent asks for in the middle of the owner's turn.
    conv.accept(vec![msg("t1", OWNER, "[approval] tidy up")])
        .await
        .expect("turn");
    owner_gets(&channel, AGENT_SUMMARY).await;
    conv.accept(vec![msg("a3", OWNER, "y")]).await.expect("y");
    within(fake.wait(|r| r.approvals.len() == 1)).await;
    owner_gets(&channel, "approved").await;
    d.stop().await;
    assert_logs_clean(&[QUESTION, SUMMARY, AGENT_SUMMARY]);
}

/// Builds Feishu accounts whose card clicks answer confirm questions.
struct CardFactory {
    ctx: PlatformParts,
    confirm: Arc<ConfirmService>,
}

impl ComponentFactory for CardFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        build_with(
            self.ctx.ports().port(spec),
            Some(Arc::new(ConfirmCards(self.confirm.clone()))),
        )
    }
}

#[tokio::test]
async fn no_card_content_reaches_the_logs() {
    captured();
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nnotify = \"feishu:work\"\n\
             [feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\n",
            dir.path().join("state").display(),
            dir.path().join("run").join("daemon.sock").display(),
            fake.base_url(),
        ),
    )
    .expect("config");
    let config = Config::load(&path).expect("config");
    let fc = FakeConfig::fast();
    CredentialStore::Files(config.state_dir.join("credentials"))
        .save(
            "feishu:work",
            &Credentials::default()
                .with("app_id", &fc.app_id)
                .with("app_secret", &fc.app_secret)
                .with("owner_id", "ou_owner"),
        )
        .expect("credentials");
    let slot = Arc::new(OnceLock::new());
    let (sl, agent_config) = (slot.clone(), config.agent.clone());
    let d = daemon::start_with(
        config,
        move |creds: &CredentialStore, store: &scv_bridge::store::Store, registry: &Arc<_>| {
            let agent: Arc<dyn Agent> = Arc::new(InstantAgent::default());
            let (confirm, conversation) =
                daemon::confirm_and_pipeline(store, creds, Clock::tokio(), registry, agent);
            let _ = sl.set(confirm.clone());
            let factory: Arc<dyn ComponentFactory> = Arc::new(CardFactory {
                ctx: PlatformParts {
                    credentials: creds.clone(),
                    store: store.clone(),
                    conversation: conversation.clone(),
                    agent: agent_config,
                    mail: Default::default(),
                },
                confirm: confirm.clone(),
            });
            Wiring {
                factory,
                conversation: Some(conversation),
                confirm: Some(confirm),
            }
        },
        LifecyclePolicy::default(),
    )
    .await
    .expect("daemon");
    within(wait_for_state(
        &d.core.registry(),
        "feishu:work",
        ComponentState::Connected,
    ))
    .await;
    let confirm = slot.get().cloned().expect("wired");

    // One card answered by a click (the click's answer replaces the card) ...
    let asked = confirm
        .ask(CARD_QUESTION, None, Some(600))
        .await
        .expect("asked");
    let wait = Duration::from_secs(20);
    assert!(fake.wait_until(wait, |f| f.sent().len() == 1).await);
    let card = fake.sent().remove(0);
    assert!(
        fake.message_content(&card.message_id)
            .is_some_and(|c| c.to_string().contains(CARD_QUESTION)),
        "the card carries the question"
    );
    let click = fake.push_card_click(
        "ou_owner",
        &card.message_id,
        serde_json::json!({"q": asked.id, "a": "yes"}),
        FrameType::Card,
    );
    // The click's ACK carries the handler's answer, so it follows the recorded close.
    assert!(
        fake.wait_until(wait, |f| f
            .acks()
            .iter()
            .any(|a| a.event_id.as_deref() == Some(click.event_id.as_str())))
            .await,
        "the click's ACK: {:?}",
        fake.acks()
    );
    let state = confirm.status(&asked.id).await.expect("status").state;
    assert_ne!(state, ConfirmState::Pending, "closed by the click");

    // ... and one answered by text, so the card is patched in place.
    let asked = confirm
        .ask(CARD_TEXT_QUESTION, None, Some(600))
        .await
        .expect("asked");
    assert!(fake.wait_until(wait, |f| f.sent().len() == 2).await);
    let card = fake.sent().remove(1);
    fake.push_p2p_text("ou_owner", "yes");
    // The card is patched once the answer closed the question, so the patch follows the close.
    assert!(
        fake.wait_until(wait, |f| f
            .message_content(&card.message_id)
            .is_some_and(|c| c.to_string().contains("Approved")))
            .await,
        "the card was updated"
    );
    let state = confirm.status(&asked.id).await.expect("status").state;
    assert_ne!(state, ConfirmState::Pending, "closed by the text answer");
    d.stop().await;
    assert_logs_clean(&[CARD_QUESTION, CARD_TEXT_QUESTION]);
}
