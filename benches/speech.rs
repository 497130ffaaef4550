//! The latency transcription adds, on loopback: a WeChat voice note without a platform
//! transcript (3 s of SILK made by the real encoder: decoded to 16 kHz WAV, sent to the fake
//! speech server, transcribed) against a text message, each timed from its arrival at the fake
//! iLink server to the answer the fake accepted, through the daemon with the real WeChat adapter
//! and an agent that answers at once. Also the speech client alone (SILK and Ogg Opus).
//!
//! Run with `cargo bench --all-features --bench speech` (add `--profile dev` for a debug build).
//! Prints figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::agent::Agent;
use scv_bridge::config::{AgentConfig, Config, SpeechConfig};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::Wiring;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::speech::{Settings, Speech};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::fake_speech::{FakeSpeech, ogg_opus_silence};
use scv_bridge::testing::wechat::{voice_item_on_cdn, wechat_silk};
use scv_bridge::testing::{InstantAgent, WechatFactory};
use scv_wechat::fake::FakeServer;
use scv_wechat::message::MessageItem;

const OWNER: &str = "owner0001@im.wechat";
const ROUNDS: usize = 15;
const VOICE_MS: usize = 3_000;

fn write_config(dir: &Path, fake: &FakeServer, speech: &FakeSpeech) -> Config {
    std::fs::create_dir_all(dir.join("ws")).expect("workspace");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[speech]\nbase_url = \"{}\"\n\
         [wechat.phone]\nbase_url = \"{}\"\ncdn_base_url = \"{}\"\nworkspace = \"{}\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
        speech.base_url(),
        fake.base_url(),
        fake.handle().cdn_base_url(),
        dir.join("ws").display(),
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("config");
    let c = Credentials::default()
        .with(
            "bot_token",
            fake.handle().bot_token().expect("token").expose(),
        )
        .with("bot_id", fake.handle().bot_id())
        .with("owner_id", OWNER);
    CredentialStore::Files(dir.join("state/credentials"))
        .save("wechat:phone", &c)
        .expect("save");
    Config::load(&path).expect("load")
}

/// Round trips of `make(round)` messages through a daemon, in order.
async fn round_trips(
    make: impl Fn(&scv_wechat::fake::FakeHandle, usize) -> MessageItem,
) -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("dir");
    let fake = FakeServer::start().await.expect("fake");
    let speech = FakeSpeech::start().await.expect("speech");
    let wire = move |creds: &CredentialStore, store: &scv_bridge::store::Store, _: &_| {
        let agent: Arc<dyn Agent> = Arc::new(InstantAgent::default());
        let conversation = Conversation::new(store.clone(), agent);
        let parts = PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: conversation.clone(),
            agent: AgentConfig::default(),
            mail: Default::default(),
        };
        let tuning = Tuning {
            min_send_interval: Duration::from_millis(1),
            ..Tuning::default()
        };
        let factory: Arc<dyn ComponentFactory> = Arc::new(WechatFactory { parts, tuning });
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: None,
        }
    };
    let config = write_config(dir.path(), &fake, &speech);
    let d = scv_bridge::daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .expect("daemon");
    let h = fake.handle();
    let mut times = Vec::new();
    for round in 0..ROUNDS {
        let item = make(&h, round);
        let start = Instant::now();
        h.push_items(OWNER, vec![item]);
        let sent = h.wait_for_sent(round + 1, Duration::from_secs(60)).await;
        assert!(sent.len() > round, "answered");
        times.push(start.elapsed());
    }
    d.stop().await;
    times
}

/// The speech client alone against the fake: `bytes` transcribed `ROUNDS` times.
async fn client(bytes: &[u8]) -> Vec<Duration> {
    let speech = FakeSpeech::start().await.expect("speech");
    let cfg = SpeechConfig {
        base_url: Some(speech.base_url()),
        ..SpeechConfig::default()
    };
    let s = Speech::with_settings(Settings::from_config(&cfg).expect("settings").expect("set"));
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        s.transcribe(bytes.to_vec()).await.expect("transcribed");
        times.push(start.elapsed());
    }
    times
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let silk = wechat_silk(VOICE_MS);
    let text = median(round_trips(|_, i| MessageItem::text(&format!("question {i}"))).await);
    let voice =
        median(round_trips(|h, _| voice_item_on_cdn(h, &silk, VOICE_MS as i64, None)).await);
    let silk_alone = median(client(&silk).await);
    let ogg_alone = median(client(&ogg_opus_silence(VOICE_MS / 20)).await);
    println!(
        "speech on loopback, median of {ROUNDS} ({} s of voice):",
        VOICE_MS / 1000
    );
    let rows = [
        ("round trip, text message", text),
        (
            "round trip, voice note (download, decode, transcribe)",
            voice,
        ),
        ("added by the voice note", voice.saturating_sub(text)),
        ("transcription alone, SILK (decode + request)", silk_alone),
        ("transcription alone, Ogg Opus (request)", ogg_alone),
    ];
    for (what, d) in rows {
        println!("  {what:<56}{d:>10.2?}");
    }
}
