//! Conversation pipeline throughput and added latency with an instant agent and 100 chats.
//!
//! Inbound → journal → policy → agent → outbox → platform, on a real SQLite file.
//! Run with `cargo bench --bench pipeline`. Prints figures; asserts nothing.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings};
use scv_bridge::conversation::*;
use scv_bridge::protocol::{Purpose, RemoteTools, Senders};
use scv_bridge::store::Store;
use scv_bridge::supervisor::{Capabilities, HealthCell, HealthHandle};
use scv_bridge::testing::InstantAgent;
use tokio::sync::watch;

const CHATS: usize = 100;
const PER_CHAT: usize = 200;

/// Records when each message reached the platform. A chat's messages that arrive while its turn
/// runs are answered together (a burst: one prompt, the messages a blank line apart), and the
/// instant agent echoes its prompt, so one sent answer can carry several messages: each is
/// counted by its own text.
struct Clocked {
    sent: Mutex<HashMap<String, Instant>>,
    count: watch::Sender<usize>,
}

impl ChatSender for Clocked {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: 2000,
            min_interval: Duration::ZERO,
        }
    }
    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            let now = Instant::now();
            if let Ok(mut s) = self.sent.lock() {
                for message in msg.text.split("\n\n").map(str::trim) {
                    s.insert(message.to_string(), now);
                }
                self.count.send_replace(s.len());
            }
            Ok(Sent::default())
        })
    }
}

/// Now, as a platform stamps a message: a message older than `[chats] away_minutes` would get
/// the away note instead of an answer.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, guard) = Store::open(&dir.path().join("bench.db")).expect("store");
    let conv = Conversation::new(store.clone(), Arc::new(InstantAgent::new(str::to_owned)));
    let key = AccountKey::new(Channel::Wechat, "bench");
    let spec = AccountSpec {
        key: key.clone(),
        enabled: true,
        workspace: None,
        senders: Senders::Anyone,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language: Default::default(),
        media: Default::default(),
        settings: ChannelSettings::default(),
    };
    let sender = Arc::new(Clocked {
        sent: Mutex::new(HashMap::new()),
        count: watch::channel(0).0,
    });
    let _att = conv.attach(AccountLink {
        account: key.clone(),
        senders: Senders::Anyone,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        owner: None,
        workspace: None,
        media: Default::default(),
        channel_label: "WeChat",
        language: Default::default(),
        capabilities: Capabilities::default(),
        health: HealthHandle::new(HealthCell::new(&spec)),
        sender: sender.clone(),
    });
    let total = CHATS * PER_CHAT;
    let accepted_at: Arc<Mutex<HashMap<String, Instant>>> =
        Arc::new(Mutex::new(HashMap::with_capacity(total)));
    let commits0 = store.counters().commits.load(Ordering::Relaxed);
    let calls0 = store.counters().calls.load(Ordering::Relaxed);
    let start = Instant::now();
    // One feeder per chat, as one adapter batch per poll; chats run in parallel.
    let feeders: Vec<_> = (0..CHATS)
        .map(|c| {
            let (conv, key, accepted_at) = (conv.clone(), key.clone(), accepted_at.clone());
            tokio::spawn(async move {
                for i in 0..PER_CHAT {
                    let text = format!("c{c}-m{i}");
                    let m = Inbound {
                        account: key.clone(),
                        chat: ChatId::new(format!("chat{c}")),
                        sender: SenderId::new(format!("user{c}")),
                        msg_id: PlatformMsgId::new(text.clone()),
                        text: text.clone(),
                        at_unix_ms: now_ms(),
                        reply: ReplyContext::default(),
                        media: Vec::new(),
                    };
                    let t = Instant::now();
                    conv.accept(vec![m]).await.expect("accept");
                    accepted_at.lock().expect("lock").insert(text, t);
                }
            })
        })
        .collect();
    for f in feeders {
        f.await.expect("feeder");
    }
    let mut rx = sender.count.subscribe();
    let _ = rx.wait_for(|n| *n >= total).await;
    let elapsed = start.elapsed();
    let commits = store.counters().commits.load(Ordering::Relaxed) - commits0;
    let calls = store.counters().calls.load(Ordering::Relaxed) - calls0;
    let mut lat: Vec<Duration> = {
        let sent = sender.sent.lock().expect("lock");
        let accepted = accepted_at.lock().expect("lock");
        accepted
            .iter()
            .filter_map(|(k, t)| sent.get(k).map(|s| s.saturating_duration_since(*t)))
            .collect()
    };
    lat.sort();
    println!(
        "pipeline: {total} messages over {CHATS} chats in {:.2} s: {:.0} msg/s (inbound -> journal -> policy -> agent -> outbox -> sent)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    println!(
        "latency under full load (includes queueing behind the backlog): p50 {:.2} ms, p99 {:.2} ms",
        percentile(&lat, 0.5).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3
    );
    println!(
        "store: {commits} commits for {calls} calls ({:.1} calls per commit), {:.0} commits/s",
        calls as f64 / commits.max(1) as f64,
        commits as f64 / elapsed.as_secs_f64()
    );

    // The WAL's file keeps its size while the commits go on: how far it grew.
    let wal = dir.path().join("bench.db-wal");
    let wal_mib =
        |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len()) as f64 / 1048576.0;
    println!("WAL file after the full load: {:.1} MiB", wal_mib(&wal));

    // Added latency without queueing: one message at a time, the next only after the answer left.
    let counted = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let (commits0, calls0, here0) = {
        let c = store.counters();
        (counted(&c.commits), counted(&c.calls), counted(&c.here))
    };
    let mut lat = Vec::with_capacity(2000);
    for i in 0..2000 {
        let text = format!("solo-{i}");
        let m = Inbound {
            account: key.clone(),
            chat: ChatId::new("solo"),
            sender: SenderId::new("solo"),
            msg_id: PlatformMsgId::new(text.clone()),
            text,
            at_unix_ms: now_ms(),
            reply: ReplyContext::default(),
            media: Vec::new(),
        };
        let t = Instant::now();
        conv.accept(vec![m]).await.expect("accept");
        let _ = rx.wait_for(|n| *n > total + i).await;
        lat.push(t.elapsed());
    }
    lat.sort();
    println!(
        "added latency, one message at a time (accept -> platform send, 2000 messages): p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        percentile(&lat, 0.5).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3,
        percentile(&lat, 0.999).as_secs_f64() * 1e3,
        lat.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
    let c = store.counters();
    println!(
        "  store calls per message: {:.2} in {:.2} commits; {:.2} of them run on the caller's thread",
        (counted(&c.calls) - calls0) as f64 / 2000.0,
        (counted(&c.commits) - commits0) as f64 / 2000.0,
        (counted(&c.here) - here0) as f64 / 2000.0
    );
    // What one hop to the store's writer thread and back costs, alone: the path above makes a
    // few of them per message.
    let mut hops = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let t = Instant::now();
        store.call(|_| Ok(())).await.expect("call");
        hops.push(t.elapsed());
    }
    hops.sort();
    println!(
        "one empty store call, round trip (2000 calls): p50 {:.3} ms, p99 {:.3} ms",
        percentile(&hops, 0.5).as_secs_f64() * 1e3,
        percentile(&hops, 0.99).as_secs_f64() * 1e3
    );
    // Once the commits pause, the checkpointer cuts the log's file to nothing (`store/trim.rs`).
    let paused = Instant::now();
    while wal_mib(&wal) > 0.0 && paused.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "WAL file {:.1} MiB {} ms after the last commit",
        wal_mib(&wal),
        paused.elapsed().as_millis()
    );
    drop(_att);
    guard.close();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}
