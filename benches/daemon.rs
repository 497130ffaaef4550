//! Core daemon figures: `status` round trip with 1,000 accounts, RSS per idle account, time to socket ready.
//!
//! Run with `cargo bench --bench daemon`. Prints figures; asserts nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::client::Client;
use scv_bridge::config::Config;
use scv_bridge::protocol::{ComponentState, DaemonCommand};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::{FakeFactory, wait_for_state};

const ACCOUNTS: usize = 1000;

fn config_text(dir: &Path, accounts: usize) -> String {
    let mut text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display()
    );
    for i in 0..accounts {
        text.push_str(&format!("[wechat.a{i:04}]\n"));
    }
    text
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Child mode: start a daemon with `n` fake accounts, wait until all are connected, print RSS.
async fn child(n: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config_text(dir.path(), n)).expect("write");
    let config = Config::load(&path).expect("config");
    let f: Arc<dyn ComponentFactory> = FakeFactory::new();
    let d = scv_bridge::daemon::start(config, move |_, _| f, LifecyclePolicy::default())
        .await
        .expect("start");
    for i in 0..n {
        wait_for_state(
            &d.core.registry(),
            &format!("wechat:a{i:04}"),
            ComponentState::Connected,
        )
        .await;
    }
    // Let allocator caches settle the same way in both runs.
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("{}", rss_kib());
    d.stop().await;
}

fn child_rss(n: usize) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["--child", &n.to_string()])
        .output()
        .expect("child");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// Round trips that read the answer line without parsing it: the daemon's share of the time.
async fn raw_round_trips(socket: &Path) -> Vec<Duration> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .expect("connect");
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::with_capacity(1 << 20, r);
    let req =
        b"{\"type\":\"daemon.control\",\"request_id\":\"b\",\"command\":{\"action\":\"status\"}}\n";
    let mut line = String::with_capacity(1 << 20);
    let mut out = Vec::with_capacity(1000);
    for i in 0..1050 {
        line.clear();
        let t = Instant::now();
        w.write_all(req).await.expect("write");
        r.read_line(&mut line).await.expect("read");
        if i >= 50 {
            out.push(t.elapsed());
        }
    }
    out
}

fn report(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{what}, {ACCOUNTS} accounts, {} requests: median {:.3} ms, p99 {:.3} ms",
        samples.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn status_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config_text(dir.path(), ACCOUNTS)).expect("write");
    let config = Config::load(&path).expect("config");
    let f: Arc<dyn ComponentFactory> = FakeFactory::new();
    let d = scv_bridge::daemon::start(config, move |_, _| f, LifecyclePolicy::default())
        .await
        .expect("start");
    // The client runs on its own thread and runtime, as `scv-bridge status` runs in its own process.
    let socket = d.socket.clone();
    let (parsed, raw) = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("rt");
        rt.block_on(async move {
            let mut c = Client::connect(&socket).await.expect("connect");
            for _ in 0..50 {
                c.request(DaemonCommand::Status).await.expect("warm up");
            }
            let mut parsed = Vec::with_capacity(1000);
            for _ in 0..1000 {
                let t = Instant::now();
                let s = c.request(DaemonCommand::Status).await.expect("status");
                parsed.push(t.elapsed());
                assert_eq!(s.components.len(), ACCOUNTS);
            }
            (parsed, raw_round_trips(&socket).await)
        })
    })
    .join()
    .expect("client thread");
    report("status round trip incl. parsing", parsed);
    report("status round trip, bytes only", raw);
    d.stop().await;
}

/// Time from spawning `scv-bridge run` to the first accepted control connection.
fn time_to_socket_ready() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_scv-bridge"));
    let mut samples = Vec::new();
    for _ in 0..20 {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.toml");
        std::fs::write(&path, config_text(dir.path(), 4)).expect("write");
        let socket = dir.path().join("state/daemon.sock");
        let t = Instant::now();
        let mut child = std::process::Command::new(&bin)
            .arg("--config")
            .arg(&path)
            .arg("run")
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            std::thread::sleep(Duration::from_micros(200));
        }
        samples.push(t.elapsed());
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let _ = child.wait();
    }
    samples.sort();
    println!(
        "run -> socket ready (20 starts): median {:.1} ms, max {:.1} ms",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let n = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(0);
        rt.block_on(child(n));
        return;
    }
    rt.block_on(status_round_trips());
    let empty = child_rss(0);
    let full = child_rss(ACCOUNTS);
    println!(
        "RSS: empty daemon {empty} KiB, {ACCOUNTS} idle accounts {full} KiB: {:.1} KiB per account",
        (full.saturating_sub(empty)) as f64 / ACCOUNTS as f64
    );
    time_to_socket_ready();
}
