//! WeCom figures against the fake WeCom long connection on loopback, with the real adapter
//! built by the daemon's platform factory:
//! - the round trip: from pushing the owner's message to the answer's finish frame arriving
//!   at the fake (an agent that answers at once), p50/p99 over sequential messages;
//! - WeCom's intake window (no acknowledgement, no redelivery, spec §2.1: a callback on the
//!   socket but not yet journaled is lost to a crash): from the push to the agent being asked,
//!   which comes after the journal commit, so an upper bound of the window;
//! - streaming: with a model writing 20 tokens a second (4 characters a token, the same
//!   2,000-character answer as `benches/stream.rs`, so the figures sit beside WeChat's and
//!   Feishu's there), the time from the message to the first `stream` frame (the first visible
//!   text), against the time to the finish frame and the frames the answer took.
//!
//! Run with `cargo bench --all-features --bench wecom --profile dev` (the model's pace is real
//! time: about half a minute). Prints figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::Config;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::wait_for_state;
use scv_wecom::fake::{FakeConfig, FakeWeCom};
use scv_wecom::frame::cmd;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const OWNER: &str = "ZhangSan";
const ROUND_TRIPS: usize = 100;
/// One token every 50 ms: 20 tokens a second.
const TOKEN_EVERY: Duration = Duration::from_millis(50);
const TOKEN_CHARS: usize = 4;
const PATIENCE: Duration = Duration::from_secs(60);

/// The answer of `benches/stream.rs`: about 2,000 characters in seven paragraphs.
fn answer() -> String {
    (0..7)
        .map(|i| {
            let sentences: Vec<String> = (0..5)
                .map(|j| format!("Sentence {j} of this part says a few words about the topic."))
                .collect();
            format!("[p{i}] {}", sentences.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Answers at once, or writes [`answer`] at 20 tokens a second when `paced`; notes when each
/// turn began.
struct BenchAgent {
    paced: bool,
    asked: Asked,
}

/// When each turn began.
type Asked = Arc<std::sync::Mutex<Vec<Instant>>>;

impl Agent for BenchAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        if let Ok(mut a) = self.asked.lock() {
            a.push(Instant::now());
        }
        Box::pin(async move {
            if !self.paced {
                return Ok(TurnOutput {
                    text: format!("echo: {}", req.prompt),
                    ..Default::default()
                });
            }
            let text = answer();
            let chars: Vec<char> = text.chars().collect();
            for token in chars.chunks(TOKEN_CHARS) {
                tokio::time::sleep(TOKEN_EVERY).await;
                req.events.text(&token.iter().collect::<String>());
            }
            Ok(TurnOutput {
                text,
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

async fn start(dir: &Path, fake: &FakeWeCom, paced: bool, asked: Asked) -> RunningDaemon {
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nconsole_listen = \"off\"\n[wecom.a]\nurl = \"{}\"\nowner = \"{OWNER}\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
        fake.ws_url()
    );
    let cfg = fake.config();
    CredentialStore::Files(dir.join("state/credentials"))
        .save(
            "wecom:a",
            &Credentials::default()
                .with("bot_id", &cfg.bot_id)
                .with("secret", &cfg.secret),
        )
        .expect("save");
    let path = dir.join("c.toml");
    std::fs::write(&path, text).expect("write");
    let config = Config::load(&path).expect("config");
    let agent_config = config.agent.clone();
    let make =
        move |c: &CredentialStore, s: &scv_bridge::store::Store| -> Arc<dyn ComponentFactory> {
            let agent: Arc<dyn Agent> = Arc::new(BenchAgent {
                paced,
                asked: asked.clone(),
            });
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
    let registry = d.core.registry();
    tokio::time::timeout(
        PATIENCE,
        wait_for_state(&registry, "wecom:a", ComponentState::Connected),
    )
    .await
    .expect("connected");
    assert!(fake.wait_until(PATIENCE, |f| f.subscribed()).await);
    d
}

/// When the fake took the first frame on `req_id`, and the finish frame.
fn frames_of(fake: &FakeWeCom, req_id: &str) -> (Option<Instant>, Option<Instant>, usize) {
    let frames: Vec<_> = fake
        .frames_of(cmd::RESPOND_MSG)
        .into_iter()
        .filter(|f| f.req_id == req_id && f.errcode == Some(0))
        .collect();
    let finish = frames
        .iter()
        .find(|f| {
            f.body
                .as_ref()
                .and_then(|b| b.pointer("/stream/finish"))
                .and_then(|v| v.as_bool())
                == Some(true)
        })
        .map(|f| f.at);
    (frames.first().map(|f| f.at), finish, frames.len())
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn round_trip() {
    let fake = FakeWeCom::start(FakeConfig::default()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let asked = Asked::default();
    let d = start(dir.path(), &fake, false, asked.clone()).await;
    let mut took = Vec::with_capacity(ROUND_TRIPS);
    let mut window = Vec::with_capacity(ROUND_TRIPS);
    for i in 0..ROUND_TRIPS {
        let t0 = Instant::now();
        let pushed = fake.push_text(OWNER, &format!("m{i}"));
        assert!(
            fake.wait_until(PATIENCE, |f| frames_of(f, &pushed.req_id).1.is_some())
                .await
        );
        let (_, finish, _) = frames_of(&fake, &pushed.req_id);
        took.push(finish.expect("finish").duration_since(t0));
        let turn = asked.lock().ok().and_then(|a| a.last().copied());
        window.push(turn.expect("the agent asked").duration_since(t0));
    }
    took.sort();
    window.sort();
    println!(
        "wecom intake window (push → agent asked, after the journal commit), {ROUND_TRIPS} sequential: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(&window, 0.5).as_secs_f64() * 1e3,
        pct(&window, 0.99).as_secs_f64() * 1e3,
        window.last().map_or(0.0, |w| w.as_secs_f64() * 1e3)
    );
    println!(
        "wecom round trip (push → finish frame at the fake), {ROUND_TRIPS} sequential: p50 {:.2} ms, p99 {:.2} ms",
        pct(&took, 0.5).as_secs_f64() * 1e3,
        pct(&took, 0.99).as_secs_f64() * 1e3
    );
    d.stop().await;
}

async fn stream() {
    let fake = FakeWeCom::start(FakeConfig::default()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), &fake, true, Asked::default()).await;
    let t0 = Instant::now();
    let pushed = fake.push_text(OWNER, "write a lot");
    assert!(
        fake.wait_until(PATIENCE, |f| frames_of(f, &pushed.req_id).1.is_some())
            .await
    );
    let (first, finish, frames) = frames_of(&fake, &pushed.req_id);
    println!(
        "wecom stream at 20 tokens/s: first visible text {:.0} ms, finished {:.0} ms, {frames} frames on the handle, {} proactive sends",
        first.expect("first").duration_since(t0).as_secs_f64() * 1e3,
        finish.expect("finish").duration_since(t0).as_secs_f64() * 1e3,
        fake.frames_of(cmd::SEND_MSG).len(),
    );
    d.stop().await;
}

#[tokio::main]
async fn main() {
    round_trip().await;
    stream().await;
}
