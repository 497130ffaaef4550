//! WeChat adapter figures against the fake iLink server on loopback: messages per second one
//! account sustains end to end (instant agent), the send window (from WeChat accepting a reply
//! to the bridge's durable record of it: a kill -9 inside it repeats that reply after restart),
//! and the daemon's RSS and CPU with 200 WeChat accounts idle in long polls versus an empty daemon.
//!
//! Run with `cargo bench --bench wechat` (`-- window` for the send window alone). Prints
//! figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::config::{AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::{InstantAgent, WechatFactory, wait_for_state};
use scv_wechat::fake::{FakeConfig, FakeServer};

const OWNER: &str = "owner0001@im.wechat";
const IDLE_ACCOUNTS: usize = 200;

fn write_setup(dir: &Path, fake: &FakeServer, accounts: usize, extra: &str) -> Config {
    let mut text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display()
    );
    let creds = CredentialStore::Files(dir.join("state/credentials"));
    let token = fake.handle().bot_token().expect("token");
    for i in 0..accounts {
        text.push_str(&format!(
            "[wechat.a{i:04}]\nbase_url = \"{}\"\n{extra}",
            fake.base_url()
        ));
        let c = Credentials::default()
            .with("bot_token", token.expose())
            .with("bot_id", fake.handle().bot_id())
            .with("owner_id", OWNER);
        creds.save(&format!("wechat:a{i:04}"), &c).expect("save");
    }
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write");
    Config::load(&path).expect("config")
}

async fn start(config: Config, tuning: Tuning) -> scv_bridge::daemon::RunningDaemon {
    let make = move |creds: &CredentialStore, store: &scv_bridge::store::Store| {
        let ctx = PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: Conversation::new(
                store.clone(),
                Arc::new(InstantAgent::new(|prompt| format!("ok {}", prompt.len()))),
            ),
            agent: AgentConfig::default(),
            mail: Default::default(),
        };
        let f: Arc<dyn ComponentFactory> = Arc::new(WechatFactory { parts: ctx, tuning });
        f
    };
    scv_bridge::daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon")
}

/// Messages per second through one account: `n` messages from `peers` peers, each answered.
async fn throughput(n: usize, peers: usize, pacing: Duration) -> f64 {
    // Every reply uses the peer's latest token; lift the ~10 sends per message so the pipeline,
    // not WeChat's window, is what is measured.
    let fake = FakeServer::start_with(FakeConfig {
        sends_per_inbound: u32::MAX,
        ..FakeConfig::default()
    })
    .await
    .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = "senders = \"anyone\"\nsends_per_message = 1000\n";
    let config = write_setup(dir.path(), &fake, 1, extra);
    let tuning = Tuning {
        min_send_interval: pacing,
        ..Tuning::default()
    };
    let d = start(config, tuning).await;
    wait_for_state(
        &d.core.registry(),
        "wechat:a0000",
        ComponentState::Connected,
    )
    .await;
    let handle = fake.handle();
    let started = Instant::now();
    for i in 0..n {
        let peer = if i % peers == 0 {
            OWNER.to_string()
        } else {
            format!("peer{:03}@im.wechat", i % peers)
        };
        handle.push_text(&peer, &format!("message {i}"));
    }
    let sent = handle.wait_for_sent(n, Duration::from_secs(600)).await;
    let secs = started.elapsed().as_secs_f64();
    d.stop().await;
    sent.len() as f64 / secs
}

/// The send window: for `n` replies, the time from the fake accepting each (its own clock) to
/// the bridge's record of it being readable in `state.db` from another connection, which is
/// what a restart after kill -9 would read.
async fn send_window(n: usize) {
    let fake = FakeServer::start_with(FakeConfig {
        sends_per_inbound: u32::MAX,
        ..FakeConfig::default()
    })
    .await
    .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = "senders = \"anyone\"\nsends_per_message = 1000\n";
    let config = write_setup(dir.path(), &fake, 1, extra);
    let db = config.state_dir.join("state.db");
    let tuning = Tuning {
        min_send_interval: Duration::from_millis(5),
        ..Tuning::default()
    };
    let d = start(config, tuning).await;
    wait_for_state(
        &d.core.registry(),
        "wechat:a0000",
        ComponentState::Connected,
    )
    .await;
    // The watcher reads the record on its own connection, as a restarted daemon would.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = std::thread::spawn({
        let stop = stop.clone();
        move || {
            let conn = rusqlite::Connection::open_with_flags(
                &db,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .expect("read-only connection");
            let mut st = conn
                .prepare(
                    "SELECT substr(name, 13) FROM account_state
                     WHERE name LIKE 'wechat_send/%' AND json_extract(value, '$.state') = 'accepted'",
                )
                .expect("query");
            let mut seen: std::collections::HashMap<String, Instant> = Default::default();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let ids: Vec<String> = st
                    .query_map([], |r| r.get(0))
                    .map(|rows| rows.filter_map(Result::ok).collect())
                    .unwrap_or_default();
                let now = Instant::now();
                for id in ids {
                    seen.entry(id).or_insert(now);
                }
                std::thread::yield_now();
            }
            seen
        }
    });
    let handle = fake.handle();
    // One message at a time, so each reply is sent alone, as a chat usually goes.
    for i in 0..n {
        handle.push_text(OWNER, &format!("message {i}"));
        handle.wait_for_sent(i + 1, Duration::from_secs(60)).await;
    }
    // Let the last record land before the watcher stops.
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = watcher.join().expect("watcher");
    let (sent, at) = (handle.sent(), handle.sent_at());
    d.stop().await;
    let mut windows: Vec<Duration> = sent
        .iter()
        .zip(at)
        .filter_map(|(m, t)| {
            seen.get(&m.client_id)
                .map(|s| s.saturating_duration_since(t))
        })
        .collect();
    windows.sort();
    if windows.is_empty() {
        println!("send window: no record seen");
        return;
    }
    let pick = |p: f64| windows[((windows.len() - 1) as f64 * p).round() as usize];
    println!(
        "send window (WeChat accepted -> recorded in state.db), {} of {} replies: median {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        windows.len(),
        sent.len(),
        pick(0.5).as_secs_f64() * 1e3,
        pick(0.99).as_secs_f64() * 1e3,
        windows[windows.len() - 1].as_secs_f64() * 1e3
    );
}

fn proc_field(file: &str, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system) of this process, in clock ticks.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime is 14th, stime 15th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
}

/// Child mode: a fake plus a daemon with `n` WeChat accounts idle in long polls; prints
/// "RSS_KIB CPU_TICKS_OVER_5S".
async fn child(n: usize) {
    let fake = FakeServer::start_with(FakeConfig {
        hold: Duration::from_millis(500),
        ..FakeConfig::default()
    })
    .await
    .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_setup(dir.path(), &fake, n, "");
    let d = start(config, Tuning::default()).await;
    for i in 0..n {
        wait_for_state(
            &d.core.registry(),
            &format!("wechat:a{i:04}"),
            ComponentState::Connected,
        )
        .await;
    }
    // From now on every poll is held as on the real server (35 s and more): idle.
    fake.handle().set_hold(Duration::from_secs(120));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = proc_field("/proc/self/status", "VmRSS:");
    let before = cpu_ticks();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let cpu = cpu_ticks() - before;
    println!("{rss} {cpu}");
    d.stop().await;
}

fn run_child(n: usize) -> (u64, u64) {
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["--child", &n.to_string()])
        .output()
        .expect("child");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().map(|x| x.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let n = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(0);
        rt.block_on(child(n));
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    if args.iter().any(|a| a == "window") {
        rt.block_on(send_window(300));
        return;
    }
    rt.block_on(async {
        let paced = throughput(10, 1, Duration::from_secs(1)).await;
        println!(
            "one account, one chat, WeChat's 1 s pacing: {paced:.2} messages/s (the pacing is the limit)"
        );
        let one = throughput(300, 1, Duration::ZERO).await;
        println!("one account, one chat, no pacing: {one:.0} messages/s end to end");
        let many = throughput(600, 20, Duration::ZERO).await;
        println!("one account, 20 chats, no pacing: {many:.0} messages/s end to end");
        send_window(300).await;
    });
    let (empty_rss, empty_cpu) = run_child(0);
    let (rss, cpu) = run_child(IDLE_ACCOUNTS);
    let ticks = 100.0; // USER_HZ on Linux
    println!(
        "RSS: empty daemon + fake {} KiB; with {IDLE_ACCOUNTS} WeChat accounts idle in long polls {} KiB; difference {:.1} MiB ({:.1} KiB per account, the fake's held connections included)",
        empty_rss,
        rss,
        (rss.saturating_sub(empty_rss)) as f64 / 1024.0,
        (rss.saturating_sub(empty_rss)) as f64 / IDLE_ACCOUNTS as f64
    );
    println!(
        "CPU while idle over 5 s: empty {:.2} s, {IDLE_ACCOUNTS} accounts {:.2} s",
        empty_cpu as f64 / ticks,
        cpu as f64 / ticks
    );
}
