//! The round trip through the bridge, measured from the fakes' side: the real WeChat adapter
//! against the fake iLink server, the real OpenAI backend against the fake model, both on
//! loopback. Inbound: from the message's poll response (the fake answers a held poll the moment
//! a message is pushed) to the model request's arrival. Outbound: from the model request's
//! arrival (the fake answers at once) to `sendmessage` arriving at the fake, and beside it from
//! the model's answer (the fake handing its stream's last piece to its HTTP server) to the same
//! arrival: the first also counts the fake model reading the request and streaming its answer.
//!
//! The durability window: from the poll response to the message's journal row being readable
//! from another connection (what a restart after kill -9 would read); the real iLink server
//! counts a message delivered once it returned it, so a crash inside this window loses it. The
//! daemon's own histogram of the same window (`scv_bridge_journal_commit_seconds`, from the
//! response's last byte to the commit) is read from its metrics page and printed beside it.
//!
//! Every figure starts when the fake made the poll response carrying the message (not when the
//! bench pushed it, which with 20 chats can be a poll earlier).
//!
//! The journal watcher is an instrument that disturbs what it measures: it looks every 50 µs,
//! about 5,000 wake-ups a second on a 2-core machine, and with it on the round trip's p50 was
//! about 0.1 ms slower. So the round trip is measured in runs without it, and the window in
//! runs of its own (marked "window runs"), where the round trip is not printed.
//!
//! Run with `cargo bench --bench round_trip`. Prints p50/p99 each way and of the window: one chat
//! at a time; 20 chats whose messages arrive in the same instant; 20 chats busy at a steady rate
//! (one message every 5 ms, the chats in turn); and one chat with WeChat's answers to sends and
//! typing taking 30 ms to come back, as across the internet (the loopback fakes answer in
//! microseconds, which hides whatever waits for a platform answer). Asserts nothing.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::config::{AgentBackend, AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::WechatFactory;
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_bridge::testing::wait_for_state;
use scv_wechat::fake::{FakeConfig, FakeServer};
use tokio::time::Instant;

const OWNER: &str = "owner0001@im.wechat";
const PATIENCE: Duration = Duration::from_secs(30);

fn setup(dir: &Path, fake: &FakeServer, metrics: std::net::SocketAddr) -> Config {
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nmetrics_listen = \"{metrics}\"\n\
         [wechat.a]\nbase_url = \"{}\"\nsenders = \"anyone\"\nsends_per_message = 1000\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
        fake.base_url()
    );
    let c = Credentials::default()
        .with(
            "bot_token",
            fake.handle().bot_token().expect("token").expose(),
        )
        .with("bot_id", fake.handle().bot_id())
        .with("owner_id", OWNER);
    CredentialStore::Files(dir.join("state/credentials"))
        .save("wechat:a", &c)
        .expect("save");
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write");
    Config::load(&path).expect("config")
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

/// Watches `db` from its own read-only connection and notes when each journal row first became
/// readable, by its platform message id, until `stop`. It looks every 50 µs and sleeps between
/// looks (a watcher that spun would take one of the machine's two cores from what it measures).
fn watch_journal(
    db: std::path::PathBuf,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<HashMap<String, std::time::Instant>> {
    std::thread::spawn(move || {
        let mut seen = HashMap::new();
        let conn = loop {
            if let Ok(c) = rusqlite::Connection::open_with_flags(
                &db,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            ) {
                break c;
            }
            std::thread::sleep(Duration::from_micros(50));
        };
        let mut last_row = 0i64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let rows: Vec<(i64, String)> = conn
                .prepare_cached("SELECT rowid, msg_id FROM inbound_journal WHERE rowid > ?1")
                .and_then(|mut q| {
                    q.query_map([last_row], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect()
                })
                .unwrap_or_default();
            let now = std::time::Instant::now();
            for (row, id) in rows {
                last_row = last_row.max(row);
                seen.entry(id).or_insert(now);
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        seen
    })
}

/// A free loopback port for the metrics page.
fn free_port() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// The p50 and p99 of `scv_bridge_journal_commit_seconds` as the metrics page shows them: the
/// upper bound of the bucket each falls in, in ms.
async fn histogram_from_metrics(addr: std::net::SocketAddr) -> Option<(f64, f64, u64)> {
    let page = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let mut buckets: Vec<(f64, u64)> = page
        .lines()
        .filter(|l| l.starts_with("scv_bridge_journal_commit_seconds_bucket{"))
        .filter_map(|l| {
            let le = l.split("le=\"").nth(1)?.split('"').next()?;
            let n = l.rsplit(' ').next()?.parse().ok()?;
            Some((le.parse().unwrap_or(f64::INFINITY), n))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    let bound = |q: f64| {
        let want = (total as f64 * q).ceil() as u64;
        buckets
            .iter()
            .find(|(_, n)| *n >= want)
            .map_or(f64::INFINITY, |(le, _)| le * 1e3)
    };
    Some((bound(0.5), bound(0.99), total))
}

/// What one run measured.
struct Figures {
    inbound: Vec<Duration>,
    /// From the model request's arrival.
    outbound: Vec<Duration>,
    /// From the model's answer handed over (its stream's last piece).
    answered: Vec<Duration>,
    /// Empty unless the run watched the journal.
    window: Vec<Duration>,
    /// p50 and p99 bounds (ms) and the sample count of the metrics page's commit histogram, in a
    /// run that watched the journal.
    histogram: Option<(f64, f64, u64)>,
}

/// How a run's messages arrive.
#[derive(Clone, Copy)]
enum Arrivals {
    /// One message from each chat at once, pushed while a poll is held; each round waited out.
    Together,
    /// One message every `gap`, the chats taking turns, whether or not earlier ones were
    /// answered: chats busy at a steady rate, not all in the same instant.
    Steady(Duration),
}

/// `rounds` rounds of one message from each of `chats` peers, arriving as `arrivals` says, with
/// WeChat's answers (to sends, typing, its ticket) taking `distance` to come back.
async fn run(
    rounds: usize,
    chats: usize,
    arrivals: Arrivals,
    distance: Duration,
    watch: bool,
) -> Figures {
    let fake = FakeServer::start_with(FakeConfig {
        sends_per_inbound: u32::MAX,
        answer_delay: distance,
        ..FakeConfig::default()
    })
    .await
    .expect("fake");
    let model = FakeOpenAi::start().await.expect("fake model");
    let dir = tempfile::tempdir().expect("tempdir");
    let metrics = free_port();
    let config = setup(dir.path(), &fake, metrics);
    let agent_config = AgentConfig {
        backend: AgentBackend::Openai,
        base_url: Some(model.base_url()),
        model: Some("fake".into()),
        ..AgentConfig::default()
    };
    let make = move |creds: &CredentialStore, store: &scv_bridge::store::Store| {
        let agent = scv_bridge::agent::build(&agent_config, store.clone());
        let ctx = PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: Conversation::new(store.clone(), agent),
            agent: agent_config.clone(),
            mail: Default::default(),
        };
        // No pacing: the pipeline is measured, not WeChat's 1 s between sends.
        let tuning = Tuning {
            min_send_interval: Duration::ZERO,
            ..Tuning::default()
        };
        let f: Arc<dyn ComponentFactory> = Arc::new(WechatFactory { parts: ctx, tuning });
        f
    };
    let d = scv_bridge::daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon");
    wait_for_state(&d.core.registry(), "wechat:a", ComponentState::Connected).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = watch.then(|| watch_journal(dir.path().join("state/state.db"), stop.clone()));
    let handle = fake.handle();
    let mut pushed: Vec<(u64, String)> = Vec::new();
    let mut push = |r: usize, c: usize| {
        let peer = format!("peer{c:03}@im.wechat");
        let text = format!("m{r}-{c}");
        let m = handle.push_text(&peer, &text);
        pushed.push((m.message_id.unwrap_or_default(), text));
    };
    match arrivals {
        Arrivals::Together => {
            for r in 0..rounds {
                // Push only while a poll is held, so the fake answers it the moment they land.
                let deadline = Instant::now() + PATIENCE;
                while handle.polls_in_flight() == 0 && Instant::now() < deadline {
                    tokio::task::yield_now().await;
                }
                for c in 0..chats {
                    push(r, c);
                }
                handle.wait_for_sent((r + 1) * chats, PATIENCE).await;
                // A distant WeChat answers the send (and the typing calls beside it) later:
                // the next round starts once they are back, so it never waits for this one's.
                tokio::time::sleep(distance * 3).await;
            }
        }
        Arrivals::Steady(gap) => {
            let start = Instant::now();
            for i in 0..rounds * chats {
                tokio::time::sleep_until(start + gap * i as u32).await;
                push(i / chats, i % chats);
            }
            handle.wait_for_sent(rounds * chats, PATIENCE).await;
        }
    }
    // When the fake accepted each answer.
    let sent_at: HashMap<String, std::time::Instant> = handle
        .sent()
        .into_iter()
        .map(|s| s.text)
        .zip(handle.sent_at())
        .collect();
    // Every time is taken from the moment the fake made the poll response carrying the message.
    let handed: HashMap<u64, std::time::Instant> = handle.handed_out().into_iter().collect();
    let requests = model.requests();
    let mut inbound = Vec::new();
    let mut outbound = Vec::new();
    let mut answered = Vec::new();
    for (id, text) in &pushed {
        let Some(out_at) = handed.get(id) else {
            continue;
        };
        let Some(req) = requests
            .iter()
            .find(|q| q.messages.last().is_some_and(|m| &m.content == text))
        else {
            continue;
        };
        inbound.push(req.at.into_std().saturating_duration_since(*out_at));
        if let Some(s) = sent_at.get(&format!("echo: {text}")) {
            outbound.push(s.saturating_duration_since(req.at.into_std()));
            if let Some(a) = req.answered {
                answered.push(s.saturating_duration_since(a.into_std()));
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let journaled = watcher
        .map(|w| w.join().expect("watcher"))
        .unwrap_or_default();
    let window = handed
        .iter()
        .filter_map(|(id, at)| {
            Some(
                journaled
                    .get(&format!("id:{id}"))?
                    .saturating_duration_since(*at),
            )
        })
        .collect();
    let histogram = histogram_from_metrics(metrics).await;
    d.stop().await;
    Figures {
        inbound,
        outbound,
        answered,
        window,
        histogram,
    }
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (near, far) = (Duration::ZERO, Duration::from_millis(30));
        let phases = [
            (300, 1, Arrivals::Together, near, "1 chat"),
            (30, 20, Arrivals::Together, near, "20 chats at once"),
            (
                30,
                20,
                Arrivals::Steady(Duration::from_millis(5)),
                near,
                "20 chats busy (one message every 5 ms, in turn)",
            ),
            (
                50,
                1,
                Arrivals::Together,
                far,
                "1 chat, WeChat answering after 30 ms (an internet round trip)",
            ),
        ];
        for (rounds, chats, arrivals, distance, name) in phases {
            let mut f = run(rounds, chats, arrivals, distance, false).await;
            println!(
                "{name}, {} messages, from the poll response: to the model request p50 {:.3} ms p99 {:.3} ms; model request -> sendmessage p50 {:.3} ms p99 {:.3} ms (from the model's answer p50 {:.3} ms p99 {:.3} ms)",
                f.inbound.len(),
                pct(&mut f.inbound, 0.5),
                pct(&mut f.inbound, 0.99),
                pct(&mut f.outbound, 0.5),
                pct(&mut f.outbound, 0.99),
                pct(&mut f.answered, 0.5),
                pct(&mut f.answered, 0.99),
            );
        }
        // The durability window, with the watcher on (its own runs: it slows the round trip).
        for (rounds, chats, arrivals, distance, name) in phases.into_iter().take(3) {
            let mut f = run(rounds, chats, arrivals, distance, true).await;
            println!(
                "window run, {name}, {} messages: from the poll response to the journal row readable p50 {:.3} ms p99 {:.3} ms",
                f.window.len(),
                pct(&mut f.window, 0.5),
                pct(&mut f.window, 0.99),
            );
            match f.histogram {
                Some((p50, p99, n)) => println!(
                    "  metrics page, scv_bridge_journal_commit_seconds ({n} batches): p50 <= {p50:.1} ms, p99 <= {p99:.1} ms (bucket bounds)"
                ),
                None => println!("  metrics page: no journal commit histogram"),
            }
        }
    });
}
