//! Telegram figures through the fake Bot API over real sockets (loopback): the round trip of
//! one message (the owner's update pushed → the answer accepted by `sendMessage`), a streamed
//! 2,000-character answer written at 20 tokens a second (first visible text and the calls the
//! answer took, in a private chat with drafts and in a group with one edited message), and a
//! burst of one message in each of 20 chats, answered at Telegram's documented rate (30 a
//! second over the bot, 1 a second per chat), not WeChat's account-wide 1 a second.
//!
//! Run with `cargo bench --all-features --bench telegram --profile dev`. Takes about a minute
//! (the model's pace and the group's edit pace are real time). Prints figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::Agent;
use scv_bridge::config::{AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::RunningDaemon;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::{InstantAgent, PacedAgent, wait_for_state};
use scv_telegram::fake::{FakeConfig, FakeHandle, FakeServer};

const ACCOUNT: &str = "telegram:a";
/// Messages in the round-trip run, one at a time, each in a chat of its own (so the 1 s per
/// chat pace is not what is measured).
const ROUND_TRIPS: usize = 50;
/// Chats in the burst.
const BURST_CHATS: usize = 20;
/// Any wait; nothing takes this long unless broken.
const PATIENCE: Duration = Duration::from_secs(120);

/// The answer: about 2,000 characters of prose, in seven paragraphs of five sentences (the
/// stream bench's, so the figures compare).
fn answer() -> String {
    PacedAgent::long_answer()
}

/// A daemon with one Telegram account answering `senders` on the fake, with `agent`.
async fn start(
    dir: &Path,
    fake: &FakeServer,
    senders: &str,
    agent: Arc<dyn Agent>,
) -> RunningDaemon {
    let cfg = FakeConfig::default();
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[telegram.a]\nbase_url = \"{}\"\nsenders = \"{senders}\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
        fake.base_url()
    );
    let id = cfg.token.split_once(':').map(|(i, _)| i).unwrap_or("");
    let c = Credentials::default()
        .with("bot_token", &cfg.token)
        .with("bot_id", id)
        .with("bot_username", &cfg.bot_username)
        .with("owner_id", cfg.owner_id.to_string());
    CredentialStore::Files(dir.join("state/credentials"))
        .save(ACCOUNT, &c)
        .expect("save");
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write");
    let config = Config::load(&path).expect("config");
    let make = move |creds: &CredentialStore,
                     store: &scv_bridge::store::Store|
          -> Arc<dyn ComponentFactory> {
        PlatformFactory::new(PlatformParts {
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
    wait_for_state(&d.core.registry(), ACCOUNT, ComponentState::Connected).await;
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

/// Sends the bot made into `chat` so far.
fn sends_to(h: &FakeHandle, chat: i64) -> usize {
    h.sent().iter().filter(|s| s.chat_id == chat).count()
}

#[tokio::main]
async fn main() {
    round_trip_and_burst().await;
    stream_private().await;
    stream_group().await;
}

/// The loopback round trip, then the 20-chat burst, on one daemon answering anyone at once.
async fn round_trip_and_burst() {
    let fake = FakeServer::start().await.expect("fake");
    let h = fake.handle();
    let dir = tempfile::tempdir().expect("tempdir");
    let agent: Arc<dyn Agent> = Arc::new(InstantAgent::default());
    let d = start(dir.path(), &fake, "anyone", agent).await;

    let mut rtt = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..ROUND_TRIPS {
        let chat = h.stranger_chat(10_000 + i as i64);
        let at = Instant::now();
        h.push_text(chat.clone(), &format!("ping {i}"));
        h.wait_until(PATIENCE, |f| sends_to(f, chat.id) > 0).await;
        rtt.push(at.elapsed());
    }
    rtt.sort();
    println!(
        "telegram loopback round trip ({ROUND_TRIPS} messages, one at a time, update pushed → answer accepted):"
    );
    println!(
        "  p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(percentile(&rtt, 0.5)),
        ms(percentile(&rtt, 0.99)),
        ms(rtt.last().copied().unwrap_or_default())
    );

    let chats: Vec<i64> = (0..BURST_CHATS).map(|i| 20_000 + i as i64).collect();
    let before = h.sent().len();
    let pushed = Instant::now();
    for (i, id) in chats.iter().enumerate() {
        h.push_text(h.stranger_chat(*id), &format!("burst {i}"));
    }
    let mut at: Vec<Duration> = Vec::with_capacity(BURST_CHATS);
    while at.len() < BURST_CHATS {
        let seen = at.len();
        let answered = |f: &FakeHandle| {
            f.sent()[before..]
                .iter()
                .filter(|s| chats.contains(&s.chat_id))
                .count()
        };
        if !h.wait_until(PATIENCE, |f| answered(f) > seen).await {
            break;
        }
        let now = pushed.elapsed();
        at.extend(std::iter::repeat_n(now, answered(&h) - seen));
    }
    let first = at.first().copied().unwrap_or_default();
    let last = at.last().copied().unwrap_or_default();
    let span = last.saturating_sub(first);
    let rate = if span.is_zero() {
        f64::INFINITY
    } else {
        (at.len().saturating_sub(1)) as f64 / span.as_secs_f64()
    };
    println!("telegram burst, one message in each of {BURST_CHATS} chats at once:");
    println!(
        "  {} answers; first after {:.0} ms, last after {:.0} ms: {rate:.1} sends/s (Telegram allows 30/s over the bot, 1/s per chat; WeChat's pace would take {} s)",
        at.len(),
        ms(first),
        ms(last),
        BURST_CHATS.saturating_sub(1)
    );
    d.stop().await;
}

/// The streamed answer in the owner's private chat: drafts, then the final message.
async fn stream_private() {
    let fake = FakeServer::start().await.expect("fake");
    let h = fake.handle();
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Arc::new(PacedAgent::new(answer()));
    let d = start(dir.path(), &fake, "owner", agent.clone()).await;
    let owner = h.owner_chat();
    let actions = h.chat_actions().len();
    let started = Instant::now();
    h.push_text(owner.clone(), "write a long answer");
    h.wait_until(PATIENCE, |f| !f.drafts().is_empty()).await;
    let first_at = started.elapsed();
    h.wait_until(PATIENCE, |f| sends_to(f, owner.id) > 0).await;
    let done_at = started.elapsed();
    let model = agent.finished_after(started);
    let (drafts, sends) = (h.drafts().len(), sends_to(&h, owner.id));
    let typing = h.chat_actions().len() - actions;
    let equal = h.sent().last().is_some_and(|s| s.text == answer());
    println!(
        "telegram private chat, {}-character answer at 20 tokens/s:",
        answer().chars().count()
    );
    println!(
        "  first visible text after   {:>6.2} s (the first draft frame)",
        first_at.as_secs_f64()
    );
    if let Some(m) = model {
        println!(
            "  model finished after        {:>6.2} s (the wait without streaming)",
            m.as_secs_f64()
        );
    }
    println!(
        "  final message after         {:>6.2} s (equal to the answer: {equal})",
        done_at.as_secs_f64()
    );
    println!(
        "  calls for the answer        {} ({drafts} sendMessageDraft, {sends} sendMessage; plus {typing} sendChatAction)",
        drafts + sends
    );
    d.stop().await;
}

/// The streamed answer in a group: one message, edited at the group's pace, finished by an
/// edit. Edits are counted as the fake shows them change.
async fn stream_group() {
    let fake = FakeServer::start_with(FakeConfig {
        can_read_all_group_messages: true,
        ..FakeConfig::default()
    })
    .await
    .expect("fake");
    let h = fake.handle();
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Arc::new(PacedAgent::new(answer()));
    let d = start(dir.path(), &fake, "owner", agent.clone()).await;
    let group = h.group(-100_500, "team");
    let started = Instant::now();
    h.push_message(serde_json::json!({
        "chat": group, "from": h.owner(), "text": "@scv_fake_bot write a long answer",
        "entities": [{"type": "mention", "offset": 0, "length": 13}]
    }));
    h.wait_until(PATIENCE, |f| sends_to(f, group.id) > 0).await;
    let first_at = started.elapsed();
    let Some(opened) = h.sent().into_iter().find(|s| s.chat_id == group.id) else {
        println!("telegram group: no message");
        return;
    };
    let shows = |f: &FakeHandle| f.message(group.id, opened.message_id).map(|(t, _)| t);
    let mut last = opened.text.clone();
    let mut edits = 0;
    while last != answer() {
        let changed = h
            .wait_until(PATIENCE, |f| shows(f).is_some_and(|t| t != last))
            .await;
        if !changed {
            break;
        }
        edits += 1;
        last = shows(&h).unwrap_or_default();
    }
    let done_at = started.elapsed();
    let model = agent.finished_after(started);
    println!("telegram group, the same answer:");
    println!(
        "  first visible text after   {:>6.2} s (the answer's message sent)",
        first_at.as_secs_f64()
    );
    if let Some(m) = model {
        println!("  model finished after        {:>6.2} s", m.as_secs_f64());
    }
    println!(
        "  final text after            {:>6.2} s (equal to the answer: {})",
        done_at.as_secs_f64(),
        last == answer()
    );
    println!(
        "  calls for the answer        {} ({} sendMessage, {edits} editMessageText; the group's pace is one call every 3 s)",
        sends_to(&h, group.id) + edits,
        sends_to(&h, group.id)
    );
    d.stop().await;
}
