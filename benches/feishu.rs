//! Feishu figures through the fake over real sockets: messages per second one account sustains,
//! ACK latency from frame receipt, a 2,000-event burst (journaled and ACKed per second, re-pushes,
//! ACK latency; with the agent answering and with every turn held, the ingest alone), and RSS
//! with 50 Feishu accounts connected.
//!
//! Run with `cargo bench --bench feishu`. Prints figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::Config;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::InstantAgent;
use scv_bridge::testing::wait_for_state;
use scv_feishu::fake::{AckRecord, FakeConfig, FakeFeishu, PushOptions};
use tokio_util::sync::CancellationToken;

/// Accounts connected for the RSS figure.
const RSS_ACCOUNTS: usize = 50;
/// Messages in the throughput run, spread over `CHATS` private chats.
const MESSAGES: usize = 2000;
/// Chats in the throughput run (each chat is answered in order, paced at 5 per second).
const CHATS: usize = 200;
/// Messages in the idle latency run, one at a time.
const IDLE_MESSAGES: usize = 300;

/// Never answers (until the turn is cancelled): the burst's ingest alone, without answering
/// work competing for the two cores.
struct Hold;

impl Agent for Hold {
    fn turn(
        &self,
        _req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            cancel.cancelled().await;
            Err(AgentError::new(AgentErrorKind::Cancelled, "stopped"))
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A daemon with `n` Feishu accounts `b00..` against the fake at `base_url`.
async fn start_daemon(
    dir: &Path,
    base_url: &str,
    n: usize,
    table: &str,
    agent: Arc<dyn Agent>,
) -> RunningDaemon {
    let mut text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display()
    );
    for i in 0..n {
        text.push_str(&format!(
            "[feishu.b{i:02}]\ndomain = \"{base_url}\"\n{table}"
        ));
    }
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write config");
    let config = Config::load(&path).expect("config");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));
    let fake = FakeConfig::default();
    for i in 0..n {
        let c = Credentials::default()
            .with("app_id", &fake.app_id)
            .with("app_secret", &fake.app_secret);
        creds.save(&format!("feishu:b{i:02}"), &c).expect("save");
    }
    let agent_config = config.agent.clone();
    let make =
        move |c: &CredentialStore, s: &scv_bridge::store::Store| -> Arc<dyn ComponentFactory> {
            let agent = agent.clone();
            PlatformFactory::new(PlatformParts {
                credentials: c.clone(),
                store: s.clone(),
                conversation: Conversation::new(s.clone(), agent),
                agent: agent_config,
                mail: Default::default(),
            })
        };
    let d = daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon");
    for i in 0..n {
        wait_for_state(
            &d.core.registry(),
            &format!("feishu:b{i:02}"),
            ComponentState::Connected,
        )
        .await;
    }
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

/// p50 / p99 / max of the round trip (fake sent → ACK back) and of `biz_rt` (frame receipt →
/// ACK written, as the client reports it in whole ms).
fn latency_line(what: &str, acks: &[AckRecord]) {
    let mut rtt: Vec<Duration> = acks.iter().filter_map(|a| a.latency).collect();
    rtt.sort();
    let mut biz: Vec<Duration> = acks
        .iter()
        .filter_map(|a| a.headers.iter().find(|(k, _)| k == "biz_rt"))
        .filter_map(|(_, v)| v.parse().ok().map(Duration::from_millis))
        .collect();
    biz.sort();
    println!(
        "ACK latency, {what} ({} ACKs): from frame receipt (biz_rt) p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; \
         fake round trip p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        acks.len(),
        ms(percentile(&biz, 0.5)),
        ms(percentile(&biz, 0.99)),
        ms(biz.last().copied().unwrap_or_default()),
        ms(percentile(&rtt, 0.5)),
        ms(percentile(&rtt, 0.99)),
        ms(rtt.last().copied().unwrap_or_default()),
    );
}

/// Waits for `cond`, read through the fake's counts (copying thousands of records every 5 ms
/// would slow the fake being measured).
async fn wait(fake: &FakeFeishu, cond: impl Fn(&FakeFeishu) -> bool) -> bool {
    fake.wait_until(Duration::from_secs(120), cond).await
}

/// One account, senders = anyone: idle latency, then a burst over many chats.
async fn throughput_and_latency() {
    let fake = FakeFeishu::start(FakeConfig::default())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let table = "senders = \"anyone\"\n";
    let d = start_daemon(
        dir.path(),
        fake.base_url(),
        1,
        table,
        Arc::new(InstantAgent::default()),
    )
    .await;

    // Idle: one message at a time, each ACKed and answered before the next.
    for i in 0..IDLE_MESSAGES {
        fake.push_p2p_text(&format!("ou_idle{}", i % 20), "ping");
        let want = i + 1;
        wait(&fake, |f| f.ack_count() >= want && f.sent_count() >= want).await;
    }
    latency_line("one message at a time", &fake.acks());
    burst(&fake, true).await;
    d.stop().await;

    // The same burst while every turn is held: what the ingest path does on its own.
    let fake = FakeFeishu::start(FakeConfig::default())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start_daemon(dir.path(), fake.base_url(), 1, table, Arc::new(Hold)).await;
    burst(&fake, false).await;
    d.stop().await;
}

/// `MESSAGES` pushed at once over `CHATS` chats; prints ingest (journaled and ACKed) figures,
/// and the answers' when `answered` (the agent answers).
async fn burst(fake: &FakeFeishu, answers: bool) {
    let (acks0, sent0, pushes0) = (fake.ack_count(), fake.sent_count(), fake.push_count());
    let t = Instant::now();
    for i in 0..MESSAGES {
        let who = format!("ou_u{}", i % CHATS);
        fake.push_message(
            &who,
            &format!("oc_p2p_{who}"),
            "p2p",
            "hello",
            false,
            PushOptions::default(),
        );
    }
    let acked = wait(fake, |f| f.ack_count() >= acks0 + MESSAGES).await;
    let ingest = t.elapsed();
    let what = if answers {
        "agent answering"
    } else {
        "agent holding every turn"
    };
    let pushes = fake.pushes();
    let repushes = pushes[pushes0..].iter().filter(|p| p.attempt > 0).count();
    let acks = fake.acks();
    // An ACK that arrives after its event was re-pushed matches nothing in flight.
    let late = acks[acks0..]
        .iter()
        .filter(|a| a.event_id.is_none())
        .count();
    let failed = acks[acks0..].iter().filter(|a| a.code != Some(200)).count();
    println!(
        "Burst, one account, {MESSAGES} events over {CHATS} chats, {what}: journaled and ACKed {:.0} events/s ({:.3} s{}); \
         re-pushes {repushes}, late ACKs {late}, ACKs other than 200 {failed}",
        MESSAGES as f64 / ingest.as_secs_f64(),
        ingest.as_secs_f64(),
        if acked { "" } else { ", INCOMPLETE" },
    );
    latency_line(&format!("during the burst, {what}"), &acks[acks0..]);
    if answers {
        let answered = wait(fake, |f| f.sent_count() >= sent0 + MESSAGES).await;
        let total = t.elapsed();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let extra = fake.sent_count().saturating_sub(sent0 + MESSAGES);
        println!(
            "Answers to the burst: {:.0} msg/s ({:.2} s{}); answers beyond one per message {extra}",
            MESSAGES as f64 / total.as_secs_f64(),
            total.as_secs_f64(),
            if answered { "" } else { ", INCOMPLETE" },
        );
    }
}

/// Child mode: a daemon with `n` accounts against the fake at `url`; prints RSS once connected.
async fn child(url: &str, n: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start_daemon(
        dir.path(),
        url,
        n,
        "senders = \"anyone\"\n",
        Arc::new(InstantAgent::default()),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!("{}", rss_kib());
    d.stop().await;
}

fn child_rss(url: &str, n: usize) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["--child", url, &n.to_string()])
        .output()
        .expect("child");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

async fn rss() {
    // The fake runs here; the daemon in a child process, so its RSS is the daemon's alone.
    let fake = FakeFeishu::start(FakeConfig::default())
        .await
        .expect("fake");
    let url = fake.base_url().to_string();
    let (empty, full) =
        tokio::task::spawn_blocking(move || (child_rss(&url, 0), child_rss(&url, RSS_ACCOUNTS)))
            .await
            .expect("children");
    println!(
        "RSS: daemon with no account {empty} KiB, with {RSS_ACCOUNTS} Feishu accounts connected {full} KiB: \
         {:.0} KiB per account; connections the fake accepted: {}",
        (full.saturating_sub(empty)) as f64 / RSS_ACCOUNTS as f64,
        fake.connections().len()
    );
}

fn main() {
    // Warnings (a full delivery queue, a failed send) explain odd figures; RUST_LOG overrides.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let url = args.get(i + 1).cloned().unwrap_or_default();
        let n = args.get(i + 2).and_then(|n| n.parse().ok()).unwrap_or(0);
        rt.block_on(child(&url, n));
        return;
    }
    // `cargo bench` passes `--bench`; anything else is a filter we do not support.
    rt.block_on(async {
        throughput_and_latency().await;
        rss().await;
    });
}
