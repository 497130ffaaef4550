//! DingTalk figures through the fake DingTalk over real sockets (loopback): the round trip of
//! one robot message (the push on the Stream WebSocket → the reply accepted by its session
//! webhook), and a streamed 2,000-character answer written at 20 tokens a second: into an AI
//! card (a card template configured: the first visible text, the card calls the answer took),
//! as a whole answer (no template), and, beside them, on WeChat (the first chunk), as
//! `benches/stream.rs` measures it.
//!
//! Run with `cargo bench --all-features --bench dingtalk --profile dev`. Takes about a minute
//! and a half (the model's pace is real time). Prints figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::Agent;
use scv_bridge::config::{AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::RunningDaemon;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::{InstantAgent, PacedAgent, WechatFactory, wait_for_state};
use scv_dingtalk::Call;
use scv_dingtalk::fake::{CardRecord, FakeConfig, FakeDingTalk, SentRecord};
use serde_json::Value;

const ACCOUNT: &str = "dingtalk:a";
/// Messages in the round-trip run, one at a time, each from a staff member of its own (each a
/// chat of its own, so no per-chat pace is what is measured).
const ROUND_TRIPS: usize = 50;
/// The rest before each round-trip message: longer than the send path's own gap (1/20 s, the
/// API's 20 calls a second), so the figure is the bridge's latency, not that pace.
const REST: Duration = Duration::from_millis(60);
/// Any wait; nothing takes this long unless broken.
const PATIENCE: Duration = Duration::from_secs(120);
/// The template the fake knows (its streaming key is `content`).
const TEMPLATE: &str = "fake-ai-card.schema";

/// The answer: about 2,000 characters of prose, in seven paragraphs of five sentences (the
/// stream bench's, so the figures compare).
fn answer() -> String {
    PacedAgent::long_answer()
}

/// Starts `make`'s daemon on the configuration `table` (the state lines are added) and waits
/// until `account` is connected.
async fn start_daemon(
    dir: &Path,
    table: &str,
    account: &str,
    make: impl Fn(&CredentialStore, &scv_bridge::store::Store) -> Arc<dyn ComponentFactory>
    + Send
    + Sync
    + 'static,
) -> RunningDaemon {
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{table}",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
    );
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write");
    let config = Config::load(&path).expect("config");
    let d = scv_bridge::daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon");
    wait_for_state(&d.core.registry(), account, ComponentState::Connected).await;
    d
}

/// A daemon with one DingTalk account on the fake, answering `senders` with `agent`, with the
/// extra table lines `extra`.
async fn start(
    dir: &Path,
    fake: &FakeDingTalk,
    senders: &str,
    extra: &str,
    agent: Arc<dyn Agent>,
) -> RunningDaemon {
    let c = fake.config();
    let login = Credentials::default()
        .with("client_id", &c.client_id)
        .with("client_secret", &c.client_secret)
        .with("owner_id", &c.staff[0]);
    CredentialStore::Files(dir.join("state/credentials"))
        .save(ACCOUNT, &login)
        .expect("save");
    let table = format!(
        "[dingtalk.a]\napi_base = \"{base}\"\noapi_base = \"{base}\"\nsenders = \"{senders}\"\n{extra}",
        base = fake.base_url()
    );
    let d = start_daemon(dir, &table, ACCOUNT, move |creds, store| {
        PlatformFactory::new(PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: Conversation::new(store.clone(), agent.clone()),
            agent: AgentConfig::default(),
            mail: Default::default(),
        })
    })
    .await;
    let ready = fake
        .wait_until(PATIENCE, |f| f.deliverable_connections() == 1)
        .await;
    assert!(ready, "no socket took pushes");
    d
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The text of one reply: a webhook body's markdown or text, or a robot send's param.
fn text_of(s: &SentRecord) -> String {
    let p = &s.param;
    [
        p.pointer("/markdown/text"),
        p.pointer("/text/content"),
        p.get("text"),
        p.get("content"),
    ]
    .into_iter()
    .flatten()
    .find_map(Value::as_str)
    .unwrap_or_default()
    .to_string()
}

/// What a card shows: its streamed content, else the content it was created with.
fn card_text(c: &CardRecord) -> String {
    [c.streamed.get("content"), c.params.get("content")]
        .into_iter()
        .flatten()
        .find_map(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[tokio::main]
async fn main() {
    round_trip().await;
    card_stream().await;
    whole_answer().await;
    wechat().await;
}

/// The loopback round trip on a daemon answering anyone at once.
async fn round_trip() {
    let fake = FakeDingTalk::start(FakeConfig {
        staff: (0..=ROUND_TRIPS).map(|i| format!("staff{i:04}")).collect(),
        ..FakeConfig::default()
    })
    .await
    .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let agent: Arc<dyn Agent> = Arc::new(InstantAgent::default());
    let d = start(dir.path(), &fake, "anyone", "", agent).await;
    let mut rtt = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..ROUND_TRIPS {
        let staff = fake.config().staff[i + 1].clone();
        let before = fake.sent().len();
        tokio::time::sleep(REST).await;
        let at = Instant::now();
        fake.push_text(&staff, &format!("ping {i}"));
        fake.wait_until(PATIENCE, |f| f.sent().len() > before).await;
        rtt.push(at.elapsed());
    }
    rtt.sort();
    // Back to back, with no rest: each reply then waits out the path's 1/20 s gap.
    let mut paced = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..ROUND_TRIPS {
        let staff = fake.config().staff[i + 1].clone();
        let before = fake.sent().len();
        let at = Instant::now();
        fake.push_text(&staff, &format!("again {i}"));
        fake.wait_until(PATIENCE, |f| f.sent().len() > before).await;
        paced.push(at.elapsed());
    }
    paced.sort();
    let via = fake
        .sent()
        .iter()
        .filter(|s| s.call == Call::SessionWebhook)
        .count();
    println!(
        "dingtalk loopback round trip ({ROUND_TRIPS} messages, one at a time, {} ms apart, pushed on the Stream socket → reply accepted; {via} of {} replies by session webhook):",
        REST.as_millis(),
        fake.sent().len()
    );
    println!(
        "  p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(percentile(&rtt, 0.5)),
        ms(percentile(&rtt, 0.99)),
        ms(rtt.last().copied().unwrap_or_default())
    );
    println!(
        "  back to back (each reply waits out the 1/20 s send gap): p50 {:.1} ms, p99 {:.1} ms",
        ms(percentile(&paced, 0.5)),
        ms(percentile(&paced, 0.99))
    );
    d.stop().await;
}

/// The streamed answer in the owner's direct chat, with an AI card template configured.
async fn card_stream() {
    let fake = FakeDingTalk::start(FakeConfig::default())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Arc::new(PacedAgent::new(answer()));
    let extra = format!("card_template_id = \"{TEMPLATE}\"\n");
    let d = start(dir.path(), &fake, "owner", &extra, agent.clone()).await;
    let owner = fake.config().staff[0].clone();
    let started = Instant::now();
    fake.push_text(&owner, "write a long answer");
    fake.wait_until(PATIENCE, |f| {
        f.cards().iter().any(|c| !card_text(c).is_empty())
    })
    .await;
    let first_at = started.elapsed();
    fake.wait_until(PATIENCE, |f| f.cards().iter().any(|c| c.finalized))
        .await;
    let done_at = started.elapsed();
    // The calls after the finish (the card marked finished, the reaction recalled) count too.
    fake.wait_until(Duration::from_secs(5), |f| {
        f.calls(Call::CardUpdate) > 0 && f.calls(Call::Emotion) >= 2
    })
    .await;
    let cards = fake.cards();
    let equal = cards.len() == 1 && card_text(&cards[0]) == answer();
    let (create, stream, update) = (
        fake.calls(Call::CardCreate),
        fake.calls(Call::CardStream),
        fake.calls(Call::CardUpdate),
    );
    println!(
        "dingtalk AI card (template configured), {}-character answer at 20 tokens/s:",
        answer().chars().count()
    );
    println!(
        "  first visible text after   {:>6.2} s (the card showing the text so far)",
        first_at.as_secs_f64()
    );
    if let Some(m) = agent.finished_after(started) {
        println!(
            "  model finished after        {:>6.2} s (the wait without streaming)",
            m.as_secs_f64()
        );
    }
    println!(
        "  card finished after         {:>6.2} s (one card, equal to the answer: {equal})",
        done_at.as_secs_f64()
    );
    println!(
        "  card calls for the answer   {} ({create} createAndDeliver, {stream} streaming, {update} instances update; {} other messages; plus {} thinking-reaction calls)",
        create + stream + update,
        fake.sent().len(),
        fake.calls(Call::Emotion)
    );
    d.stop().await;
}

/// The same answer without a card template: one whole markdown answer.
async fn whole_answer() {
    let fake = FakeDingTalk::start(FakeConfig::default())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Arc::new(PacedAgent::new(answer()));
    let d = start(dir.path(), &fake, "owner", "", agent.clone()).await;
    let owner = fake.config().staff[0].clone();
    let started = Instant::now();
    fake.push_text(&owner, "write a long answer");
    fake.wait_until(PATIENCE, |f| !f.sent().is_empty()).await;
    let first_at = started.elapsed();
    let sent = fake.sent();
    let equal = sent.len() == 1 && text_of(&sent[0]) == answer();
    println!("dingtalk without a card template, the same answer:");
    println!(
        "  first visible text after   {:>6.2} s (the whole answer, {} message(s), equal: {equal})",
        first_at.as_secs_f64(),
        sent.len()
    );
    d.stop().await;
}

/// The same answer on the fake iLink server (as `benches/stream.rs`): its first chunk.
async fn wechat() {
    const OWNER: &str = "owner0001@im.wechat";
    let fake = scv_wechat::fake::FakeServer::start_with(scv_wechat::fake::FakeConfig::default())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let handle = fake.handle();
    let token = handle.bot_token().expect("token");
    let c = Credentials::default()
        .with("bot_token", token.expose())
        .with("bot_id", handle.bot_id())
        .with("owner_id", OWNER);
    CredentialStore::Files(dir.path().join("state/credentials"))
        .save("wechat:a", &c)
        .expect("save");
    let agent = Arc::new(PacedAgent::new(answer()));
    let table = format!("[wechat.a]\nbase_url = \"{}\"\n", fake.base_url());
    let turns: Arc<dyn Agent> = agent.clone();
    let d = start_daemon(dir.path(), &table, "wechat:a", move |creds, store| {
        let parts = PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: Conversation::new(store.clone(), turns.clone()),
            agent: AgentConfig::default(),
            mail: Default::default(),
        };
        let tuning = Tuning {
            min_send_interval: Duration::from_millis(1000),
            ..Tuning::default()
        };
        Arc::new(WechatFactory { parts, tuning })
    })
    .await;
    let started = Instant::now();
    handle.push_text(OWNER, "write a long answer");
    handle.wait_for_sent(1, PATIENCE).await;
    let first_at = started.elapsed();
    println!("wechat, the same answer (beside it):");
    println!(
        "  first visible text after   {:>6.2} s (the first chunk)",
        first_at.as_secs_f64()
    );
    d.stop().await;
}
