//! Core daemon figures: `status` round trip with 1,000 accounts (and a `status --watch` redraw),
//! RSS per idle account, time to socket ready, and `status` while 5,000 connections flood the
//! control socket.
//!
//! Run with `cargo bench --bench daemon` (`-- flood` for the flood alone). Prints figures;
//! asserts nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use scv_bridge::client::{Client, StatusWatch};
use scv_bridge::config::Config;
use scv_bridge::protocol::{ComponentState, DaemonCommand};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::process::limit_open_files;
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
    let parsed = std::thread::spawn(move || {
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
            // `status --watch`: each redraw parses only the accounts that changed.
            let mut watch = StatusWatch::default();
            let (mut redraws, mut reparsed) = (Vec::with_capacity(1000), 0);
            for i in 0..1050 {
                let t = Instant::now();
                let n = c
                    .watch_status(&mut watch)
                    .await
                    .expect("status")
                    .components
                    .len();
                if i >= 50 {
                    redraws.push(t.elapsed());
                    reparsed += watch.parsed_last();
                }
                assert_eq!(n, ACCOUNTS);
            }
            let raw = raw_round_trips(&socket).await;
            let size = c
                .request_line(DaemonCommand::Status)
                .await
                .expect("status")
                .len();
            println!(
                "status answer with {ACCOUNTS} accounts: {} KiB",
                size / 1024
            );
            (parsed, redraws, reparsed, raw)
        })
    })
    .join()
    .expect("client thread");
    let (parsed, redraws, reparsed, raw) = (parsed.0, parsed.1, parsed.2, parsed.3);
    report("status round trip incl. parsing", parsed);
    report(
        "status --watch redraw (only changed accounts parsed)",
        redraws,
    );
    println!("  accounts parsed again over those redraws: {reparsed}");
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

/// Connections the flood attempts, and the descriptor limit the daemon runs under.
const FLOOD: usize = 5000;
const FLOOD_FD_LIMIT: u64 = 1024;

/// Starts `scv-bridge run` (4 accounts, none logged in) under soft = hard = `FLOOD_FD_LIMIT`
/// open files, as the issue found it: 5,000 held connections there made `status` time out.
fn spawn_limited_daemon(dir: &Path) -> (std::process::Child, PathBuf) {
    let path = dir.join("c.toml");
    std::fs::write(&path, config_text(dir, 4)).expect("write");
    let socket = dir.join("state/daemon.sock");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
    cmd.arg("--config")
        .arg(&path)
        .arg("run")
        .stderr(std::process::Stdio::null());
    limit_open_files(&mut cmd, FLOOD_FD_LIMIT, FLOOD_FD_LIMIT);
    let child = cmd.spawn().expect("spawn");
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        std::thread::sleep(Duration::from_millis(1));
    }
    (child, socket)
}

/// One probe: when it started, and how long it took or why it failed.
type Probe = (Instant, Result<Duration, String>);

/// `status` round trips, each on a new connection as `scv-bridge status` makes, until `done`.
fn status_loop(socket: PathBuf, done: Arc<std::sync::atomic::AtomicBool>) -> Vec<Probe> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async move {
        let mut probes = Vec::new();
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            let t = Instant::now();
            let answer = tokio::time::timeout(
                Duration::from_secs(5),
                scv_bridge::client::request(&socket, DaemonCommand::Status),
            )
            .await;
            let outcome = match answer {
                Ok(Ok(_)) => Ok(t.elapsed()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("timed out after 5 s".to_string()),
            };
            probes.push((t, outcome));
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        probes
    })
}

/// Prints the round trips of `probes` that started within `during`.
fn report_probes(what: &str, probes: &[Probe], during: impl Fn(Instant) -> bool) {
    let mut ok: Vec<Duration> = Vec::new();
    let mut failed: Vec<&str> = Vec::new();
    for (t, outcome) in probes.iter().filter(|(t, _)| during(*t)) {
        let _ = t;
        match outcome {
            Ok(d) => ok.push(*d),
            Err(e) => failed.push(e),
        }
    }
    ok.sort();
    if ok.is_empty() {
        println!("{what}: no status answered ({} failed)", failed.len());
        return;
    }
    println!(
        "{what}: {} answered, {} failed; median {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ok.len(),
        failed.len(),
        percentile(&ok, 0.5).as_secs_f64() * 1e3,
        percentile(&ok, 0.99).as_secs_f64() * 1e3,
        ok[ok.len() - 1].as_secs_f64() * 1e3,
    );
    if let Some(e) = failed.first() {
        println!("  first failure: {e}");
    }
}

/// `status` round trips while waves of `FLOOD` connections are attempted against a daemon
/// limited to `FLOOD_FD_LIMIT` open files, every accepted connection held silent.
fn status_under_flood() {
    const WAVES: usize = 4;
    // The flood's own ends are descriptors of this process.
    let _ = scv_bridge::control::raise_descriptor_limit();
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, socket) = spawn_limited_daemon(dir.path());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let prober = std::thread::spawn({
        let (socket, done) = (socket.clone(), done.clone());
        move || status_loop(socket, done)
    });
    std::thread::sleep(Duration::from_millis(200));
    let mut floods = Vec::new();
    let (mut connected, mut refused) = (0, 0);
    for _ in 0..WAVES {
        let start = Instant::now();
        let mut held = Vec::with_capacity(FLOOD);
        for _ in 0..FLOOD {
            match std::os::unix::net::UnixStream::connect(&socket) {
                Ok(s) => held.push(s),
                Err(_) => refused += 1,
            }
        }
        floods.push((start, Instant::now()));
        connected += held.len();
        // Hold them all a moment, then let go before the next wave.
        std::thread::sleep(Duration::from_millis(100));
        drop(held);
        std::thread::sleep(Duration::from_millis(100));
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let probes = prober.join().expect("prober");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let flood_ms: Vec<String> = floods
        .iter()
        .map(|(a, b)| format!("{:.0}", (*b - *a).as_secs_f64() * 1e3))
        .collect();
    println!(
        "control socket flood: {WAVES} waves of {FLOOD} connections ({connected} connected and held, {refused} refused; {} ms per wave) against a daemon limited to {FLOOD_FD_LIMIT} open files",
        flood_ms.join("/")
    );
    let in_flood = |t: Instant| floods.iter().any(|(a, b)| t >= *a && t <= *b);
    report_probes("  status during the waves", &probes, in_flood);
    report_probes("  status between the waves", &probes, |t| !in_flood(t));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "flood") {
        status_under_flood();
        return;
    }
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
    status_under_flood();
}
