//! Streaming figures against the fake iLink and fake Feishu servers on loopback: with a model
//! that writes 20 tokens a second (4 characters a token), the time from the owner's message to
//! the first visible answer text on each platform (WeChat: the first chunk; Feishu: the card
//! with the text so far), against the time the model needs for the whole answer (what the
//! owner waited before streaming), the sends the answer took on WeChat and the Feishu API calls
//! one streamed answer took.
//!
//! Run with `cargo bench --all-features --bench stream --profile dev`. Takes about a minute
//! (the model's pace is real time). Prints figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::testing::PacedAgent;

use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::agent::Agent;
use scv_bridge::config::{AccountSpec, AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::RunningDaemon;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::WechatFactory;
use scv_bridge::testing::wait_for_state;
use scv_feishu::fake::FakeFeishu;
use scv_wechat::fake::{FakeConfig, FakeServer};

const OWNER: &str = "owner0001@im.wechat";

/// The answer: about 2,000 characters of prose, in seven paragraphs of five sentences.
fn answer() -> String {
    PacedAgent::long_answer()
}

fn write_setup(dir: &Path, fake: &FakeServer) -> Config {
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[wechat.a]\nbase_url = \"{}\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
        fake.base_url()
    );
    let creds = CredentialStore::Files(dir.join("state/credentials"));
    let token = fake.handle().bot_token().expect("token");
    let c = Credentials::default()
        .with("bot_token", token.expose())
        .with("bot_id", fake.handle().bot_id())
        .with("owner_id", OWNER);
    creds.save("wechat:a", &c).expect("save");
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write");
    Config::load(&path).expect("config")
}

#[tokio::main]
async fn main() {
    declared_paces();
    wechat().await;
    feishu().await;
}

/// Each platform's declared pace, the figures its sends are kept to (the registry's value).
fn declared_paces() {
    println!("declared pace (least gap per chat / over the bot / into one group):");
    for p in scv_bridge::adapters::all() {
        let pace = p.pace();
        let bot = pace
            .bot_rate()
            .map_or("no bot-wide limit".to_string(), |r| {
                format!("{r:.0} sends/s over the bot")
            });
        println!(
            "  {:<9} {:>5} ms / {:>5} ms / {:>5} ms  ({bot})",
            p.label(),
            pace.per_chat.as_millis(),
            pace.per_bot.as_millis(),
            pace.per_group.as_millis()
        );
    }
}

/// Builds Feishu accounts as the daemon does.
struct FeishuFactory {
    ctx: PlatformParts,
}

impl ComponentFactory for FeishuFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        scv_bridge::adapters::feishu::build(self.ctx.ports().port(spec))
    }
}

/// The same answer on the fake Feishu: the card's first show, the model's end, and every
/// API call the answer took (token, CardKit, IM sends, the typing reaction).
async fn feishu() {
    const FEISHU_OWNER: &str = "ou_owner";
    let cfg = scv_feishu::fake::FakeConfig::default();
    let fake = FakeFeishu::start(cfg.clone()).await.expect("fake feishu");
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[feishu.a]\ndomain = \"{}\"\nsenders = \"owner\"\n",
        dir.path().join("state").display(),
        dir.path().join("state/daemon.sock").display(),
        fake.base_url()
    );
    let c = Credentials::default()
        .with("app_id", &cfg.app_id)
        .with("app_secret", &cfg.app_secret)
        .with("owner_id", FEISHU_OWNER);
    CredentialStore::Files(dir.path().join("state/credentials"))
        .save("feishu:a", &c)
        .expect("save");
    let path = dir.path().join("c.toml");
    std::fs::write(&path, text).expect("write");
    let config = Config::load(&path).expect("config");
    let (d, agent) = start(config, "feishu:a", |ctx| Arc::new(FeishuFactory { ctx })).await;
    let before = (
        fake.token_requests(),
        fake.cardkit_requests(),
        fake.sent().len(),
        fake.reaction_requests(),
    );
    let started = Instant::now();
    fake.push_p2p_text(FEISHU_OWNER, "write a long answer");
    let patience = Duration::from_secs(120);
    fake.wait_until(patience, |f| {
        f.cards().first().is_some_and(|c| c.message_id.is_some())
    })
    .await;
    let first_at = started.elapsed();
    fake.wait_until(patience, |f| {
        f.cards()
            .first()
            .is_some_and(|c| c.settings.last() == Some(&false))
    })
    .await;
    let done_at = started.elapsed();
    // The typing reaction is removed beside storing the answer; wait for it to count it.
    fake.wait_until(patience, |f| f.reactions().iter().all(|r| r.removed))
        .await;
    let model_done = agent.finished_after(started);
    let card = fake.cards().first().cloned();
    let calls = (
        fake.token_requests() - before.0,
        fake.cardkit_requests() - before.1,
        fake.sent().len() - before.2,
        fake.reaction_requests() - before.3,
    );
    println!(
        "feishu, {}-character answer at 20 tokens/s:",
        answer().chars().count()
    );
    println!(
        "  first visible text after   {:>6.2} s (the card sent with the text so far)",
        first_at.as_secs_f64()
    );
    if let Some(m) = model_done {
        println!(
            "  model finished after        {:>6.2} s (the wait without streaming)",
            m.as_secs_f64()
        );
    }
    println!(
        "  card finished after         {:>6.2} s",
        done_at.as_secs_f64()
    );
    if let Some(c) = card {
        println!(
            "  content updates             {} (sequences {:?}..{:?})",
            c.updates.len(),
            c.sequences.first(),
            c.sequences.last()
        );
    }
    println!(
        "  Feishu API calls            {} (CardKit {}, IM sends {}, typing reaction {}, token {})",
        calls.0 + calls.1 + calls.2 + calls.3,
        calls.1,
        calls.2,
        calls.3,
        calls.0
    );
    d.stop().await;
}

/// Starts the daemon on `config` with a fresh paced agent and the factory `build` makes around
/// the platform parts; returns once account `id` is connected.
async fn start(
    config: Config,
    id: &str,
    build: fn(PlatformParts) -> Arc<dyn ComponentFactory>,
) -> (RunningDaemon, Arc<PacedAgent>) {
    let agent = Arc::new(PacedAgent::new(answer()));
    let a: Arc<dyn Agent> = agent.clone();
    let make = move |creds: &CredentialStore, store: &scv_bridge::store::Store| {
        build(PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: Conversation::new(store.clone(), a),
            agent: AgentConfig::default(),
            mail: Default::default(),
        })
    };
    let d = scv_bridge::daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon");
    wait_for_state(&d.core.registry(), id, ComponentState::Connected).await;
    (d, agent)
}

/// The answer on the fake iLink server: its first chunk, the model's end, the sends.
async fn wechat() {
    let fake = FakeServer::start_with(FakeConfig::default())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_setup(dir.path(), &fake);
    let (d, agent) = start(config, "wechat:a", |parts| {
        let tuning = Tuning {
            min_send_interval: Duration::from_millis(1000),
            ..Tuning::default()
        };
        Arc::new(WechatFactory { parts, tuning })
    })
    .await;
    let handle = fake.handle();
    let started = Instant::now();
    handle.push_text(OWNER, "write a long answer");
    let first = handle.wait_for_sent(1, Duration::from_secs(120)).await;
    let first_at = started.elapsed();
    let total_chars = answer().chars().count();
    // The rest, send by send, until every paragraph has arrived.
    let mut sent = first;
    while !PacedAgent::shows_long_answer(&sent.iter().map(|m| m.text.as_str()).collect::<Vec<_>>())
    {
        let more = handle
            .wait_for_sent(sent.len() + 1, Duration::from_secs(120))
            .await;
        if more.len() == sent.len() {
            break; // nothing more came: print what there is
        }
        sent = more;
    }
    let model_done = agent.finished_after(started);
    let sends = handle.sent().len();
    println!("wechat, {total_chars}-character answer at 20 tokens/s:");
    println!(
        "  first visible text after   {:>6.2} s",
        first_at.as_secs_f64()
    );
    if let Some(m) = model_done {
        println!(
            "  model finished after        {:>6.2} s (the wait without streaming)",
            m.as_secs_f64()
        );
    }
    println!("  sends for the answer        {sends}");
    let cut = sent
        .iter()
        .filter(|m| {
            !m.text
                .trim_end()
                .ends_with(['.', '!', '?', '。', '！', '？'])
        })
        .count();
    println!("  pieces ending mid-sentence  {cut}");
    d.stop().await;
}
