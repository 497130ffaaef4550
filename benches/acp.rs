//! The `acp` backend's own cost, against the in-process fake ACP agent (which answers at once,
//! so what is measured is the bridge: JSON-RPC framing, routing, the turn loop):
//! added latency per turn on an open session (agent spawn excluded), the time from the owner's
//! "yes" to the permission response reaching the agent, and the process's RSS with 10 chat
//! sessions open (the fake agent runs in the same process, so this bounds the bridge's share).
//! Run with `cargo bench --bench acp`. Prints figures; asserts nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::agent::{AcpAgent, AcpOptions, Agent, Approver, Decision, TurnRequest};
use scv_bridge::testing::fake_acp::{FakeAcp, ScriptedApprover};
use scv_bridge::testing::turn_request;
use tokio_util::sync::CancellationToken;

const TURNS: usize = 2000;
const ASKS: usize = 200;

fn req(chat: &str, prompt: &str, approver: Option<Arc<dyn Approver>>) -> TurnRequest {
    TurnRequest {
        approver,
        workspace: Some(PathBuf::from("/tmp")),
        ..turn_request(chat, prompt)
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let fake = FakeAcp::new();
    let a = Arc::new(AcpAgent::new(AcpOptions::new(Arc::new(fake.clone())), None));
    let before = rss_kib();
    // Spawn and session/new excluded: the first turn opens them.
    a.turn(req("c0", "hi", None), CancellationToken::new())
        .await
        .expect("answer");
    let mut turns = Vec::with_capacity(TURNS);
    for _ in 0..TURNS {
        let t = Instant::now();
        a.turn(req("c0", "hi", None), CancellationToken::new())
            .await
            .expect("answer");
        turns.push(t.elapsed());
    }
    println!(
        "acp turn on an open session (bridge + in-process fake): p50 {:?}, p99 {:?}",
        percentile(&mut turns, 0.5),
        percentile(&mut turns, 0.99)
    );

    let (approver, mut asked) = ScriptedApprover::new();
    let approver: Arc<dyn Approver> = approver;
    let mut yes = Vec::with_capacity(ASKS);
    for i in 0..ASKS {
        let turn = tokio::spawn({
            let (a, r) = (a.clone(), req("c0", "RUN:true", Some(approver.clone())));
            async move { a.turn(r, CancellationToken::new()).await }
        });
        let q = asked.recv().await.expect("asked");
        let t = Instant::now();
        q.answer.send(Decision::AllowOnce).expect("answer");
        fake.until(|l| l.outcomes.len() > i).await;
        yes.push(t.elapsed());
        turn.await.expect("join").expect("answer");
    }
    println!(
        "owner's yes to the permission response at the agent: p50 {:?}, p99 {:?}",
        percentile(&mut yes, 0.5),
        percentile(&mut yes, 0.99)
    );

    for c in 1..10 {
        a.turn(req(&format!("c{c}"), "hi", None), CancellationToken::new())
            .await
            .expect("answer");
    }
    let live = a.live();
    println!(
        "RSS with {} chat sessions open: {} KiB (before the first turn: {} KiB)",
        live.sessions,
        rss_kib(),
        before
    );
    a.close().await;
}
