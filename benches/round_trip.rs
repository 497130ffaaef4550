//! The round trip through the bridge, measured from the fakes' side: the real WeChat adapter
//! against the fake iLink server, the real OpenAI backend against the fake model, both on
//! loopback. Inbound: from the message's poll response (the fake answers a held poll the moment
//! a message is pushed) to the model request's arrival. Outbound: from the model request's
//! arrival (the fake answers at once) to `sendmessage` arriving at the fake.
//!
//! The durability window: from the poll response to the message's journal row being readable
//! from another connection (what a restart after kill -9 would read); the real iLink server
//! counts a message delivered once it returned it, so a crash inside this window loses it.
//!
//! Run with `cargo bench --bench round_trip`. Prints p50/p99 each way and of the window, for one
//! chat at a time and for 20 chats busy at once; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::wechat::{Tuning, WechatComponent};
use scv_bridge::config::{AccountSpec, AgentBackend, AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_bridge::testing::wait_for_state;
use scv_wechat::fake::{FakeConfig, FakeServer};
use tokio::time::Instant;

const OWNER: &str = "owner0001@im.wechat";
const PATIENCE: Duration = Duration::from_secs(30);

struct Factory {
    ctx: PlatformParts,
}

impl ComponentFactory for Factory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        // No pacing: the pipeline is measured, not WeChat's 1 s between sends.
        let tuning = Tuning {
            min_send_interval: Duration::ZERO,
            ..Tuning::default()
        };
        Arc::new(WechatComponent::new(self.ctx.ports().port(spec)).with_tuning(tuning))
    }
}

fn setup(dir: &Path, fake: &FakeServer) -> Config {
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n\
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
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

/// Watches `db` from its own read-only connection and notes when each journal row (by rowid
/// order) first became readable, until `stop`.
fn watch_journal(
    db: std::path::PathBuf,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<std::time::Instant>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let conn = loop {
            if let Ok(c) = rusqlite::Connection::open_with_flags(
                &db,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            ) {
                break c;
            }
            std::thread::yield_now();
        };
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let n: i64 = conn
                .query_row("SELECT count(*) FROM inbound_journal", [], |r| r.get(0))
                .unwrap_or(0);
            let now = std::time::Instant::now();
            while (seen.len() as i64) < n {
                seen.push(now);
            }
            std::thread::yield_now();
        }
        seen
    })
}

/// What one run measured.
struct Figures {
    inbound: Vec<Duration>,
    outbound: Vec<Duration>,
    window: Vec<Duration>,
}

/// `rounds` rounds of `chats` messages pushed at once (one per peer), each round waited out.
async fn run(rounds: usize, chats: usize) -> Figures {
    let fake = FakeServer::start_with(FakeConfig {
        sends_per_inbound: u32::MAX,
        ..FakeConfig::default()
    })
    .await
    .expect("fake");
    let model = FakeOpenAi::start().await.expect("fake model");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = setup(dir.path(), &fake);
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
        let f: Arc<dyn ComponentFactory> = Arc::new(Factory { ctx });
        f
    };
    let d = scv_bridge::daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon");
    wait_for_state(&d.core.registry(), "wechat:a", ComponentState::Connected).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = watch_journal(dir.path().join("state/state.db"), stop.clone());
    let handle = fake.handle();
    let mut pushed: Vec<(String, Instant)> = Vec::new();
    let mut pushed_wall: Vec<std::time::Instant> = Vec::new();
    let mut sent_at: std::collections::HashMap<String, Instant> = Default::default();
    for r in 0..rounds {
        // Push only while a poll is held, so the fake answers it the moment the message lands.
        let deadline = Instant::now() + PATIENCE;
        while handle.polls_in_flight() == 0 && Instant::now() < deadline {
            tokio::task::yield_now().await;
        }
        for c in 0..chats {
            let text = format!("m{r}-{c}");
            let peer = format!("peer{c:03}@im.wechat");
            pushed.push((text.clone(), Instant::now()));
            pushed_wall.push(std::time::Instant::now());
            handle.push_text(&peer, &text);
        }
        let base = r * chats;
        for k in 1..=chats {
            let sent = handle.wait_for_sent(base + k, PATIENCE).await;
            let now = Instant::now();
            for s in sent {
                sent_at.entry(s.text).or_insert(now);
            }
        }
    }
    let requests = model.requests();
    let mut inbound = Vec::new();
    let mut outbound = Vec::new();
    for (text, at) in &pushed {
        let Some(req) = requests
            .iter()
            .find(|q| q.messages.last().is_some_and(|m| &m.content == text))
        else {
            continue;
        };
        inbound.push(req.at.saturating_duration_since(*at));
        if let Some(s) = sent_at.get(&format!("echo: {text}")) {
            outbound.push(s.saturating_duration_since(req.at));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let journaled = watcher.join().expect("watcher");
    let window = pushed_wall
        .iter()
        .zip(&journaled)
        .map(|(p, j)| j.saturating_duration_since(*p))
        .collect();
    d.stop().await;
    Figures {
        inbound,
        outbound,
        window,
    }
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        for (rounds, chats) in [(300, 1), (30, 20)] {
            let mut f = run(rounds, chats).await;
            println!(
                "{chats} chat(s) at once, {} messages: poll response -> model request p50 {:.2} ms p99 {:.2} ms; model request -> sendmessage p50 {:.2} ms p99 {:.2} ms; poll response -> journal row readable p50 {:.2} ms p99 {:.2} ms",
                f.inbound.len(),
                pct(&mut f.inbound, 0.5),
                pct(&mut f.inbound, 0.99),
                pct(&mut f.outbound, 0.5),
                pct(&mut f.outbound, 0.99),
                pct(&mut f.window, 0.5),
                pct(&mut f.window, 0.99),
            );
        }
    });
}
