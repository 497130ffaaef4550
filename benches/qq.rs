//! QQ figures through the fake QQ open platform over real sockets (loopback), with the real
//! adapter built by the daemon's platform factory:
//! - the round trip of one message (a C2C message pushed on the gateway → the passive reply
//!   accepted by the send endpoint), p50/p99 over sequential messages, each from a user of its
//!   own (so the per-chat pace is not what is measured), with an agent that answers at once;
//! - the time to the whole answer: QQ documents no streaming (spec §4.4), so the owner sees
//!   nothing until the model has finished, then the answer in pieces within the reply budget.
//!   The model writes the 2,000-character answer of `benches/stream.rs` at 20 tokens a second;
//!   the same answer on the fake WeChat (which streams it as sentences are done) is measured
//!   beside it, so the two figures sit side by side.
//!
//! Run with `cargo bench --all-features --bench qq --profile dev`. Takes about half a minute
//! (the model's pace is real time). Prints figures; asserts nothing.

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
use scv_bridge::testing::wechat::WechatFactory;
use scv_bridge::testing::{InstantAgent, PacedAgent, wait_for_state};
use scv_qq::fake::{FakeConfig, FakeQq};

const QQ_ACCOUNT: &str = "qq:a";
const WECHAT_ACCOUNT: &str = "wechat:a";
const QQ_OWNER: &str = "OWNER00000000000000000000000000A1";
const WECHAT_OWNER: &str = "owner0001@im.wechat";
/// Messages in the round-trip run, one at a time.
const ROUND_TRIPS: usize = 100;
/// Any wait; nothing takes this long unless broken.
const PATIENCE: Duration = Duration::from_secs(120);

/// The answer of `benches/stream.rs`: about 2,000 characters in seven paragraphs.
fn answer() -> String {
    PacedAgent::long_answer()
}

/// Whether `texts` together show every paragraph of [`answer`].
fn whole(texts: &[String]) -> bool {
    PacedAgent::shows_long_answer(texts)
}

/// Writes `table` (after the common lines) and `login` for `account`, and loads the file.
fn setup(dir: &Path, account: &str, table: &str, login: &Credentials) -> Config {
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nconsole_listen = \"off\"\n{table}",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
    );
    CredentialStore::Files(dir.join("state/credentials"))
        .save(account, login)
        .expect("save");
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write");
    Config::load(&path).expect("config")
}

/// Starts the daemon on `config`, its accounts built by `build` around the platform parts
/// (with `agent`); returns once `account` is connected.
async fn start(
    config: Config,
    account: &str,
    agent: Arc<dyn Agent>,
    build: fn(PlatformParts) -> Arc<dyn ComponentFactory>,
) -> RunningDaemon {
    let make = move |creds: &CredentialStore, store: &scv_bridge::store::Store| {
        build(PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: Conversation::new(store.clone(), agent.clone()),
            agent: AgentConfig::default(),
            mail: Default::default(),
        })
    };
    let d = scv_bridge::daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon");
    wait_for_state(&d.core.registry(), account, ComponentState::Connected).await;
    d
}

/// A daemon with one QQ account on `fake`, answering `senders`, with `agent`.
async fn start_qq(
    dir: &Path,
    fake: &FakeQq,
    senders: &str,
    agent: Arc<dyn Agent>,
) -> RunningDaemon {
    let cfg = FakeConfig::default();
    let table = format!(
        "[qq.a]\napi_base = \"{u}\"\ntoken_base = \"{u}\"\nsenders = \"{senders}\"\n",
        u = fake.base_url()
    );
    let login = Credentials::default()
        .with("app_id", &cfg.app_id)
        .with("app_secret", &cfg.app_secret)
        .with("bot_id", &cfg.bot_id)
        .with("bot_name", &cfg.bot_name)
        .with("owner_id", QQ_OWNER);
    let config = setup(dir, QQ_ACCOUNT, &table, &login);
    let d = start(config, QQ_ACCOUNT, agent, |parts| {
        PlatformFactory::new(parts)
    })
    .await;
    fake.wait_until(PATIENCE, |f| f.live()).await;
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

/// Accepted sends to `to` (`user:<openid>`).
fn sends_to(f: &FakeQq, to: &str) -> Vec<String> {
    f.sent()
        .into_iter()
        .filter(|s| s.to == to)
        .map(|s| s.content)
        .collect()
}

#[tokio::main]
async fn main() {
    round_trip().await;
    let qq = qq_answer().await;
    let wechat = wechat_answer().await;
    println!(
        "{}-character answer at 20 tokens/s, from the message to the whole answer shown:",
        answer().chars().count()
    );
    for (name, f) in [("qq", qq), ("wechat", wechat)] {
        println!(
            "  {name:<7} first text {:>6.2} s, whole answer {:>6.2} s, model finished {:>6.2} s, {} sends",
            f.first.as_secs_f64(),
            f.whole.as_secs_f64(),
            f.model.unwrap_or_default().as_secs_f64(),
            f.sends
        );
    }
    println!(
        "  (QQ documents no streaming: its first text waits for the model's end; WeChat streams finished sentences)"
    );
}

/// The loopback round trip, one message at a time.
async fn round_trip() {
    let fake = FakeQq::start(FakeConfig::default()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let agent: Arc<dyn Agent> = Arc::new(InstantAgent::default());
    let d = start_qq(dir.path(), &fake, "anyone", agent).await;
    let mut rtt = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..ROUND_TRIPS {
        let user = format!("USER{i:028}");
        let to = format!("user:{user}");
        let at = Instant::now();
        fake.push_c2c(&user, &format!("ping {i}"));
        fake.wait_until(PATIENCE, |f| !sends_to(f, &to).is_empty())
            .await;
        rtt.push(at.elapsed());
    }
    rtt.sort();
    println!(
        "qq loopback round trip ({ROUND_TRIPS} messages, one at a time, C2C message pushed → passive reply accepted):"
    );
    println!(
        "  p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(percentile(&rtt, 0.5)),
        ms(percentile(&rtt, 0.99)),
        ms(rtt.last().copied().unwrap_or_default())
    );
    d.stop().await;
}

/// When the owner saw what of one answer.
struct Figures {
    first: Duration,
    whole: Duration,
    model: Option<Duration>,
    sends: usize,
}

/// The paced answer on QQ: whole answers, in pieces within the 2,000-character limit.
async fn qq_answer() -> Figures {
    let fake = FakeQq::start(FakeConfig::default()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Arc::new(PacedAgent::new(answer()));
    let d = start_qq(dir.path(), &fake, "owner", agent.clone()).await;
    let to = format!("user:{QQ_OWNER}");
    let started = Instant::now();
    fake.push_c2c(QQ_OWNER, "write a long answer");
    fake.wait_until(PATIENCE, |f| !sends_to(f, &to).is_empty())
        .await;
    let first = started.elapsed();
    fake.wait_until(PATIENCE, |f| whole(&sends_to(f, &to)))
        .await;
    let figures = Figures {
        first,
        whole: started.elapsed(),
        model: agent.finished_after(started),
        sends: sends_to(&fake, &to).len(),
    };
    d.stop().await;
    figures
}

/// The same answer on the fake WeChat, paced as `benches/stream.rs` paces it.
async fn wechat_answer() -> Figures {
    let fake = scv_wechat::fake::FakeServer::start_with(scv_wechat::fake::FakeConfig::default())
        .await
        .expect("fake");
    let handle = fake.handle();
    let dir = tempfile::tempdir().expect("tempdir");
    let token = handle.bot_token().expect("token");
    let login = Credentials::default()
        .with("bot_token", token.expose())
        .with("bot_id", handle.bot_id())
        .with("owner_id", WECHAT_OWNER);
    let table = format!("[wechat.a]\nbase_url = \"{}\"\n", fake.base_url());
    let config = setup(dir.path(), WECHAT_ACCOUNT, &table, &login);
    let agent = Arc::new(PacedAgent::new(answer()));
    let d = start(config, WECHAT_ACCOUNT, agent.clone(), |parts| {
        let tuning = Tuning {
            min_send_interval: Duration::from_millis(1000),
            ..Tuning::default()
        };
        Arc::new(WechatFactory { parts, tuning })
    })
    .await;
    let started = Instant::now();
    handle.push_text(WECHAT_OWNER, "write a long answer");
    let mut sent = handle.wait_for_sent(1, PATIENCE).await;
    let first = started.elapsed();
    loop {
        let texts: Vec<String> = sent.iter().map(|m| m.text.clone()).collect();
        if whole(&texts) {
            break;
        }
        let more = handle.wait_for_sent(sent.len() + 1, PATIENCE).await;
        if more.len() == sent.len() {
            break; // nothing more came: print what there is
        }
        sent = more;
    }
    let figures = Figures {
        first,
        whole: started.elapsed(),
        model: agent.finished_after(started),
        sends: sent.len(),
    };
    d.stop().await;
    figures
}
