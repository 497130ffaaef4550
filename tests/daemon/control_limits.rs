//! The control socket stays answerable under a flood of clients: at most `max_connections` are
//! held (a newcomer replaces the longest-silent one), a client that sends no complete request
//! within `idle` is closed, and the daemon raises its soft open-file limit to the hard one.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::control::{self, CommandError, Handler, Limits};
use scv_bridge::protocol::{DaemonCommand, DaemonStatus};
use scv_bridge::testing::process::limit_open_files;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Answers every command with an empty status.
struct Plain;

impl Handler for Plain {
    async fn handle(&self, _command: DaemonCommand) -> Result<DaemonStatus, CommandError> {
        Ok(DaemonStatus::new("test", std::process::id()))
    }
}

const STATUS: &[u8] =
    b"{\"type\":\"daemon.control\",\"request_id\":\"s\",\"command\":{\"action\":\"status\"}}\n";

/// Serves `limits` on a fresh socket in `dir`; cancel the token to stop.
async fn serve(dir: &Path, limits: Limits) -> (std::path::PathBuf, CancellationToken) {
    let socket = dir.join("run").join("c.sock");
    let listener = control::bind(&socket).await.expect("bind");
    let stop = CancellationToken::new();
    tokio::spawn(control::serve_with(
        listener,
        Arc::new(Plain),
        stop.clone(),
        limits,
    ));
    (socket, stop)
}

/// One status round trip on a new connection: the answer line.
async fn status(socket: &Path) -> serde_json::Value {
    let mut s = UnixStream::connect(socket).await.expect("connect");
    s.write_all(STATUS).await.expect("write");
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).await.expect("read");
    serde_json::from_str(&line).unwrap_or_else(|_| panic!("an answer line, got {line:?}"))
}

/// A connection that has been accepted (it got an answer) and now sends nothing.
async fn held(socket: &Path) -> UnixStream {
    let mut s = UnixStream::connect(socket).await.expect("connect");
    s.write_all(STATUS).await.expect("write");
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).await.expect("answer");
    assert!(n > 0 && buf[..n].ends_with(b"\n"), "one whole answer");
    s
}

/// Reads until the server closes; what it said before closing.
///
/// Closing with unread bytes from the client (a half-sent request) resets the connection after
/// what the server wrote, so a reset ends the reading like an end of file.
async fn until_closed(s: &mut UnixStream) -> String {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read: {e}"),
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

/// Whether the server has closed `s` already (never waits).
fn closed(s: &UnixStream) -> bool {
    let mut buf = [0u8; 1];
    matches!(s.try_read(&mut buf), Ok(0))
}

/// Clients that connect without waiting are queued, not refused, while the daemon is busy
/// elsewhere: nothing accepts here, as when the accept loop is behind.
#[tokio::test]
async fn a_burst_of_clients_is_queued_not_refused_while_the_accept_loop_is_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("run").join("c.sock");
    let _listener = control::bind(&socket).await.expect("bind");
    let mut held = Vec::new();
    for i in 0..200 {
        match UnixStream::connect(&socket).await {
            Ok(s) => held.push(s),
            Err(e) => panic!("client {i} was refused: {e}"),
        }
    }
    assert_eq!(held.len(), 200);
}

#[tokio::test(start_paused = true)]
async fn status_answers_while_the_cap_is_held_and_the_longest_silent_make_room() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        max_connections: 4,
        idle: Duration::from_secs(60),
    };
    let (socket, stop) = serve(dir.path(), limits).await;
    let mut first = Vec::new();
    for _ in 0..4 {
        first.push(held(&socket).await);
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    // The cap is held by four silent clients; a fifth still gets its status.
    let answer = status(&socket).await;
    assert_eq!(answer["type"], "daemon.status", "{answer}");
    // ... because the one silent longest was closed for it, well before any idle timeout.
    let evicted = tokio::time::timeout(Duration::from_secs(5), until_closed(&mut first[0])).await;
    assert!(evicted.is_ok(), "the longest-silent client was not closed");
    assert!(
        first[1..].iter().all(|s| !closed(s)),
        "only one client made room"
    );

    // Twenty more clients held: still at most four open, and status still answers.
    let mut more = Vec::new();
    for _ in 0..20 {
        more.push(held(&socket).await);
    }
    assert_eq!(status(&socket).await["type"], "daemon.status");
    for s in first.iter_mut().chain(more.iter_mut()).take(21) {
        let gone = tokio::time::timeout(Duration::from_secs(5), until_closed(s)).await;
        assert!(gone.is_ok(), "more than four clients held open");
    }
    assert!(more[17..].iter().all(|s| !closed(s)), "the newest stay");
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_client_that_sends_no_complete_request_is_closed_after_the_idle_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = Limits {
        max_connections: 4,
        idle: Duration::from_secs(60),
    };
    let (socket, stop) = serve(dir.path(), limits).await;

    // Trickling a request byte by byte does not keep a client open.
    let mut s = UnixStream::connect(&socket).await.expect("connect");
    let t0 = Instant::now();
    let trickle = async {
        for b in b"{\"type\":\"daemon.control\"".iter().cycle() {
            if s.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(300), trickle).await;
    let said = tokio::time::timeout(Duration::from_secs(60), until_closed(&mut s))
        .await
        .expect("the trickling client was never closed");
    let after = t0.elapsed();
    assert!(
        after >= Duration::from_secs(60) && after <= Duration::from_secs(66),
        "closed after {after:?}"
    );
    assert!(
        said.contains("no complete request within 60 s"),
        "the client is told why: {said:?}"
    );

    // A silent client is closed the same way; one that asks in time is answered.
    let mut silent = UnixStream::connect(&socket).await.expect("connect");
    let t0 = Instant::now();
    tokio::time::timeout(Duration::from_secs(120), until_closed(&mut silent))
        .await
        .expect("the silent client was never closed");
    assert_eq!(t0.elapsed().as_secs(), 60);
    tokio::time::advance(Duration::from_secs(59)).await;
    assert_eq!(status(&socket).await["type"], "daemon.status");
    stop.cancel();
}

/// Starts `scv-bridge run` with no accounts under an open-file limit of `soft`/`hard`.
fn spawn_daemon(dir: &Path, soft: u64, hard: u64) -> (std::process::Child, std::path::PathBuf) {
    let socket = dir.join("run").join("daemon.sock");
    // Made here (private, as the daemon wants it) so `wait_ready` can watch it from the start.
    std::fs::create_dir(dir.join("run")).expect("the socket's folder");
    std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o700))
        .expect("a private folder");
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n",
            dir.join("state").display(),
            socket.display()
        ),
    )
    .expect("config");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
    cmd.arg("--config")
        .arg(&config)
        .arg("run")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    limit_open_files(&mut cmd, soft, hard);
    (cmd.spawn().expect("spawn the daemon"), socket)
}

/// The soft open-file limit of process `pid`, from /proc.
fn soft_limit_of(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("open files line");
    line.split_whitespace()
        .nth(3)
        .expect("soft")
        .parse()
        .expect("a number")
}

/// Kills the daemon child when the test ends, passing or not.
struct Reap(std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until the daemon's socket answers, checking again whenever its folder (which
/// [`spawn_daemon`] made) changes. The chmod counts too: the bind makes the file a
/// moment before the socket listens, and the chmod after it wakes a check that came too early.
async fn wait_ready(socket: &Path) {
    let dir = socket.parent().expect("the socket's folder");
    let (bumps, mut changed) = tokio::sync::watch::channel(0u64);
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        // An open or read is no change (the check connects; it opens no file, but be sure).
        if e.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
            bumps.send_modify(|n| *n = n.wrapping_add(1));
        }
    })
    .expect("an inotify watcher");
    notify::Watcher::watch(&mut watcher, dir, notify::RecursiveMode::NonRecursive)
        .expect("watch the socket's folder");
    let ready = async {
        loop {
            // Marked seen before the check, so a change during it still wakes the wait.
            changed.borrow_and_update();
            if UnixStream::connect(socket).await.is_ok() {
                return;
            }
            changed.changed().await.expect("the watcher lives");
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), ready)
        .await
        .is_err()
    {
        panic!(
            "the daemon never opened its socket; {} holds {:?}",
            dir.display(),
            std::fs::read_dir(dir)
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
                .unwrap_or_default()
        );
    }
}

#[tokio::test]
async fn the_daemon_answers_status_with_thousands_of_held_clients_under_a_low_descriptor_limit() {
    // The test's own end of every connection is a descriptor too.
    control::raise_descriptor_limit().expect("raise the test's limit");
    let dir = tempfile::tempdir().expect("tempdir");
    // Hard 512: raising the soft limit cannot help, only the cap keeps the daemon under it.
    let (child, socket) = spawn_daemon(dir.path(), 512, 512);
    let child = Reap(child);
    wait_ready(&socket).await;
    // Blocking connects, as most clients make: a full accept queue makes them wait in line.
    let flood = socket.clone();
    let clients = tokio::task::spawn_blocking(move || {
        (0..2000)
            .filter_map(|_| std::os::unix::net::UnixStream::connect(&flood).ok())
            .collect::<Vec<_>>()
    })
    .await
    .expect("flood");
    assert!(clients.len() > 512, "only {} connected", clients.len());
    let answered = tokio::time::timeout(
        Duration::from_secs(10),
        scv_bridge::client::request(&socket, DaemonCommand::Status),
    )
    .await;
    assert!(
        matches!(answered, Ok(Ok(_))),
        "status while {} clients are held: {answered:?}",
        clients.len()
    );

    // A stopped daemon's full accept queue: `status` waits in line instead of saying that no
    // daemon runs, and is answered once the daemon goes on.
    let pid = child.0.id() as i32;
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let mut queued = Vec::new();
    loop {
        match UnixStream::connect(&socket).await {
            Ok(s) => queued.push(s),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("connect: {e}"),
        }
        assert!(queued.len() < 10_000, "the accept queue never filled");
    }
    let waiting = tokio::spawn({
        let socket = socket.clone();
        async move { scv_bridge::client::request(&socket, DaemonCommand::Status).await }
    });
    // Nothing can answer while the daemon is stopped: whatever `status` says now is final.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(
        !waiting.is_finished(),
        "status gave up at a full queue: {:?}",
        waiting.await
    );
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let answered = tokio::time::timeout(Duration::from_secs(10), waiting).await;
    assert!(matches!(answered, Ok(Ok(Ok(_)))), "{answered:?}");
    drop((queued, clients, child));

    // Started with a soft limit of 300 under a hard one of 4096, the daemon raises it.
    let dir = tempfile::tempdir().expect("tempdir");
    let (child, socket) = spawn_daemon(dir.path(), 300, 4096);
    let child = Reap(child);
    wait_ready(&socket).await;
    assert_eq!(soft_limit_of(child.0.id()), 4096);
}
