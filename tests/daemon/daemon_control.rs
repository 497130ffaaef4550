//! The daemon end to end over its real control socket, with scripted fake components.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use scv_bridge::client::{self, Client, ClientError};
use scv_bridge::config::{AccountKey, Channel, Config};
use scv_bridge::daemon::{self, RunningDaemon, StartError};
use scv_bridge::protocol::*;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::FakeFactory;
use scv_bridge::testing::daemon_status as status;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

const THREE: &str = "[wechat.a]\n[wechat.b]\n[feishu.c]\nsenders = \"anyone\"\n";

fn write_config(dir: &Path, accounts: &str) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{accounts}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display()
    );
    std::fs::write(&path, text).expect("write config");
    path
}

async fn start(
    dir: &Path,
    accounts: &str,
    factory: Arc<FakeFactory>,
) -> Result<RunningDaemon, StartError> {
    let path = write_config(dir, accounts);
    let config = Config::load(&path).expect("config");
    let f: Arc<dyn ComponentFactory> = factory;
    daemon::start(config, move |_, _| f, LifecyclePolicy::default()).await
}

async fn wait_connected(d: &RunningDaemon, id: &str) {
    scv_bridge::testing::wait_for_state(&d.core.registry(), id, ComponentState::Connected).await;
}

/// Sends raw lines and reads one answer line per request.
async fn raw(socket: &Path, lines: &[&[u8]]) -> Vec<serde_json::Value> {
    let stream = UnixStream::connect(socket).await.expect("connect");
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let mut out = Vec::new();
    for line in lines {
        if w.write_all(line).await.is_err() {
            break;
        }
        let mut answer = String::new();
        if r.read_line(&mut answer).await.unwrap_or(0) == 0 {
            break;
        }
        out.push(serde_json::from_str(&answer).expect("answer is JSON"));
    }
    out
}

#[tokio::test]
async fn status_lists_every_account_sorted_with_truthful_states() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("start");
    for id in ["wechat:a", "wechat:b", "feishu:c"] {
        wait_connected(&d, id).await;
    }
    let s = status(&d).await;
    let ids: Vec<&str> = s.components.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["feishu:c", "wechat:a", "wechat:b"]);
    assert_eq!(s.pid, std::process::id());
    assert_eq!(s.delegations, DelegationSummary::default());
    let c = &s.components[0];
    assert_eq!(
        (c.channel.as_str(), c.account.as_str(), c.senders),
        ("feishu", "c", Some(Senders::Anyone))
    );
    assert_eq!(c.remote_tools, RemoteTools::None);
    let report = d.stop().await;
    assert!(report.abandoned.is_empty());
    assert!(
        !dir.path().join("run/daemon.sock").exists(),
        "socket removed on shutdown"
    );
}

#[tokio::test]
async fn socket_is_private_and_malformed_input_is_survivable() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("start");
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&d.socket), 0o600);
    assert_eq!(mode(d.socket.parent().expect("dir")), 0o700);

    let answers = raw(
        &d.socket,
        &[
            b"{not json\n",
            b"{\"type\":\"subscribe\",\"request_id\":\"x1\"}\n",
            b"{\"type\":\"daemon.control\",\"request_id\":\"x2\",\"command\":{\"action\":\"project_list\"}}\n",
            b"{\"type\":\"initialize\",\"request_id\":\"x3\",\"protocol_version\":1,\"client\":{\"name\":\"t\",\"version\":\"0\"}}\n",
            b"{\"type\":\"daemon.control\",\"request_id\":\"x4\",\"command\":{\"action\":\"status\"}}\n",
        ],
    )
    .await;
    assert_eq!(answers.len(), 5, "the connection survives malformed frames");
    assert_eq!(answers[0]["type"], "error");
    assert_eq!(
        (answers[0]["code"].as_str(), answers[0]["fatal"].as_bool()),
        (Some("invalid_request"), Some(false))
    );
    assert_eq!(
        (
            answers[1]["code"].as_str(),
            answers[1]["request_id"].as_str()
        ),
        (Some("unsupported"), Some("x1"))
    );
    assert_eq!(answers[2]["code"], "unsupported");
    assert_eq!(answers[3]["type"], "initialized");
    assert_eq!(answers[3]["protocol_version"], 1);
    assert_eq!(answers[4]["type"], "daemon.status");
    assert_eq!(answers[4]["request_id"], "x4");

    // Over 1 MiB without a newline: a fatal error, then the server closes.
    let mut big = vec![b' '; (1 << 20) + 10];
    big.push(b'\n');
    let answers = raw(&d.socket, &[&big, b"{\"type\":\"daemon.control\",\"request_id\":\"y\",\"command\":{\"action\":\"status\"}}\n"]).await;
    assert_eq!(answers.len(), 1, "closed after the fatal error");
    assert_eq!(
        (answers[0]["code"].as_str(), answers[0]["fatal"].as_bool()),
        (Some("invalid_request"), Some(true))
    );
    d.stop().await;
}

#[tokio::test]
async fn many_clients_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("start");
    let socket = d.socket.clone();
    let clients = (0..64).map(|_| {
        let socket = socket.clone();
        tokio::spawn(async move {
            let mut c = Client::connect(&socket).await.expect("connect");
            for _ in 0..10 {
                let s = c.request(DaemonCommand::Status).await.expect("status");
                assert_eq!(s.components.len(), 3);
            }
        })
    });
    for c in clients {
        c.await.expect("client task");
    }
    d.stop().await;
}

#[tokio::test]
async fn one_daemon_per_state_dir_and_stale_sockets_are_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("start");
    let second = start(dir.path(), THREE, FakeFactory::new()).await;
    let err = second.err().expect("second daemon refused").to_string();
    assert!(err.contains("already running"), "{err}");
    d.stop().await;

    // A crashed daemon leaves its socket file behind; the next one replaces it.
    let sock = dir.path().join("run/daemon.sock");
    let stale = std::os::unix::net::UnixListener::bind(&sock).expect("stale socket");
    drop(stale);
    assert!(sock.exists());
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("starts over a stale socket");
    status(&d).await;
    d.stop().await;
}

#[tokio::test]
async fn channel_set_persists_across_restarts_and_restarts_only_that_account() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = FakeFactory::new();
    let d = start(dir.path(), THREE, f.clone()).await.expect("start");
    wait_connected(&d, "wechat:a").await;
    let set = DaemonCommand::ChannelSet {
        channel: "wechat".into(),
        account: "a".into(),
        enabled: Some(false),
        workspace: Some("/tmp/ws".into()),
        remote_tools: None,
        senders: Some(Senders::Anyone),
        purpose: None,
    };
    let s = client::request(&d.socket, set).await.expect("channel_set");
    let a = s.components.iter().find(|c| c.id == "wechat:a").expect("a");
    assert_eq!(
        (a.enabled, a.state, a.senders),
        (false, ComponentState::Disabled, Some(Senders::Anyone))
    );
    assert_eq!(
        f.builds(&AccountKey::new(Channel::Wechat, "b")),
        1,
        "b untouched"
    );
    d.stop().await;

    let d = start(dir.path(), THREE, f.clone()).await.expect("restart");
    let s = status(&d).await;
    let a = s.components.iter().find(|c| c.id == "wechat:a").expect("a");
    assert_eq!(
        (a.enabled, a.senders),
        (false, Some(Senders::Anyone)),
        "persisted"
    );
    // Enabling keeps the saved senders (omitted fields keep the saved setting).
    let enable = DaemonCommand::ChannelSet {
        channel: "wechat".into(),
        account: "a".into(),
        enabled: Some(true),
        workspace: None,
        remote_tools: None,
        senders: None,
        purpose: None,
    };
    client::request(&d.socket, enable).await.expect("enable");
    wait_connected(&d, "wechat:a").await;
    let a = status(&d)
        .await
        .components
        .into_iter()
        .find(|c| c.id == "wechat:a")
        .expect("a");
    assert_eq!(a.senders, Some(Senders::Anyone));

    let bad = DaemonCommand::ChannelSet {
        channel: "slack".into(),
        account: "x".into(),
        enabled: Some(true),
        workspace: None,
        remote_tools: None,
        senders: None,
        purpose: None,
    };
    match client::request(&d.socket, bad).await {
        Err(ClientError::Daemon { code, .. }) => assert_eq!(code, ErrorCode::InvalidRequest),
        other => panic!("expected invalid_request, got {other:?}"),
    }
    d.stop().await;
}

#[tokio::test]
async fn reload_restarts_only_what_changed_and_refuses_bad_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = FakeFactory::new();
    let d = start(dir.path(), THREE, f.clone()).await.expect("start");
    for id in ["wechat:a", "wechat:b", "feishu:c"] {
        wait_connected(&d, id).await;
    }
    write_config(
        dir.path(),
        "[wechat.a]\n[wechat.b]\nremote_tools = \"owner\"\n[feishu.c]\nsenders = \"anyone\"\n[feishu.d]\n",
    );
    let s = client::request(&d.socket, DaemonCommand::Reload)
        .await
        .expect("reload");
    assert_eq!(s.components.len(), 4);
    // The answer says what the reload did.
    let did = s.reload.expect("a reload reports what it did");
    assert_eq!(
        (did.started.clone(), did.restarted.clone()),
        (vec!["feishu:d".to_string()], vec!["wechat:b".to_string()])
    );
    assert!(did.stopped.is_empty() && did.abandoned.is_empty());
    assert_eq!(did.describe(), "started feishu:d; restarted wechat:b");
    assert_eq!(
        status(&d).await.reload,
        None,
        "only answers to changes carry it"
    );
    let again = client::request(&d.socket, DaemonCommand::Reload)
        .await
        .expect("reload");
    assert_eq!(
        again.reload.map(|r| r.describe()).as_deref(),
        Some("nothing changed")
    );
    let builds = |n: &str, c| f.builds(&AccountKey::new(c, n));
    assert_eq!(
        [
            builds("a", Channel::Wechat),
            builds("b", Channel::Wechat),
            builds("c", Channel::Feishu),
            builds("d", Channel::Feishu)
        ],
        [1, 2, 1, 1]
    );
    // A broken file is refused with file, line and key, and nothing changes.
    write_config(dir.path(), "[wechat.a]\nsenders = \"all\"\n");
    match client::request(&d.socket, DaemonCommand::Reload).await {
        Err(ClientError::Daemon { code, message }) => {
            assert_eq!(code, ErrorCode::InvalidRequest);
            assert!(
                message.contains(
                    "config.toml:5: wechat.a.senders: expected owner or anyone, found 'all'"
                ),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(status(&d).await.components.len(), 4);
    d.stop().await;
}

#[tokio::test]
async fn logout_removes_credentials_and_state_then_reports_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("start");
    let creds = CredentialStore::Files(dir.path().join("state/credentials"));
    creds
        .save("wechat:a", &Credentials::default().with("bot_token", "t"))
        .expect("save");
    d.core
        .store()
        .set_state("wechat:a", "cursor", "c")
        .await
        .expect("state");
    d.core
        .store()
        .set_state("wechat:b", "cursor", "c")
        .await
        .expect("state");
    let s = client::request(
        &d.socket,
        DaemonCommand::ChannelLogout {
            channel: "wechat".into(),
            account: "a".into(),
        },
    )
    .await
    .expect("logout");
    assert_eq!(s.components.len(), 3, "still configured");
    assert_eq!(creds.load("wechat:a").expect("load"), None);
    assert_eq!(
        d.core
            .store()
            .get_state("wechat:a", "cursor")
            .await
            .expect("get"),
        None
    );
    assert!(
        d.core
            .store()
            .get_state("wechat:b", "cursor")
            .await
            .expect("get")
            .is_some()
    );
    d.stop().await;
}

#[tokio::test]
async fn out_of_scope_and_pending_actions_answer_unsupported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("start");
    for cmd in [
        DaemonCommand::Delegations,
        DaemonCommand::DelegationKill,
        DaemonCommand::RestartWhenIdle,
        DaemonCommand::Other,
    ] {
        match client::request(&d.socket, cmd).await {
            Err(ClientError::Daemon { code, .. }) => assert_eq!(code, ErrorCode::Unsupported),
            other => panic!("expected unsupported, got {other:?}"),
        }
    }
    d.stop().await;
}

#[tokio::test]
async fn metrics_are_served_when_configured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let accounts = format!("metrics_listen = \"127.0.0.1:{port}\"\n{THREE}");
    let d = start(dir.path(), &accounts, FakeFactory::new())
        .await
        .expect("start");
    wait_connected(&d, "wechat:a").await;
    let url = format!("http://127.0.0.1:{port}/metrics");
    let page = loop {
        match reqwest::get(&url).await {
            Ok(r) => break r.text().await.expect("page"),
            Err(_) => tokio::task::yield_now().await,
        }
    };
    assert!(
        page.contains("scv_bridge_account_state{account=\"wechat:a\",state=\"connected\"} 1"),
        "{page}"
    );
    assert!(
        page.contains("scv_bridge_account_restarts_total{account=\"feishu:c\"} 0"),
        "{page}"
    );
    // The latency histograms appear once traffic has passed (tests/daemon/metrics_round_trip.rs).
    for family in ["build", "outbox_depth"] {
        assert!(
            page.contains(&format!("# HELP scv_bridge_{family} ")),
            "{family} in {page}"
        );
    }
    d.stop().await;
}

/// Connects to `socket` as `uid` in a forked child and returns what the daemon wrote back, or
/// `None` when this process may not switch users (not root).
fn probe_as(uid: u32, socket: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: plain value type, zeroed is a valid empty address.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let path = socket.as_os_str().as_bytes();
    assert!(path.len() < addr.sun_path.len(), "socket path too long");
    for (d, s) in addr.sun_path.iter_mut().zip(path) {
        *d = *s as libc::c_char;
    }
    let request =
        b"{\"type\":\"daemon.control\",\"request_id\":\"p\",\"command\":{\"action\":\"status\"}}\n";
    let mut pipe = [0i32; 2];
    // SAFETY: a two-int array for pipe(2).
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: the child only makes async-signal-safe system calls (setgroups, setgid, setuid,
    // socket, connect, write, read, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        unsafe {
            libc::close(pipe[0]);
            let out = pipe[1];
            // Drop every descriptor inherited from the test process but our pipe: a fork keeps
            // other tests' daemons' state-dir locks (flock) alive while this child runs, which
            // made a concurrent test's restart see "another daemon is running".
            for fd in 3..4096 {
                if fd != out {
                    libc::close(fd);
                }
            }
            let fail = |code: &[u8]| {
                libc::write(out, code.as_ptr().cast(), code.len());
                libc::_exit(0)
            };
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(uid) != 0
                || libc::setuid(uid) != 0
            {
                fail(b"!cannot switch user");
            }
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
            if fd < 0 || libc::connect(fd, (&raw const addr).cast(), len) != 0 {
                fail(b"!cannot connect");
            }
            libc::write(fd, request.as_ptr().cast(), request.len());
            let mut buf = [0u8; 4096];
            loop {
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                if n <= 0 {
                    break;
                }
                libc::write(out, buf.as_ptr().cast(), n as usize);
                // One answer line is all we asked for; the daemon keeps a served peer open.
                if buf[..n as usize].contains(&b'\n') {
                    break;
                }
            }
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end, then reading the child's report.
    unsafe { libc::close(pipe[1]) };
    let mut reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(pipe[0]) };
    let mut text = String::new();
    std::io::Read::read_to_string(&mut reader, &mut text).expect("read the child's report");
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    match text.as_str() {
        "!cannot switch user" => None,
        t => Some(t.to_string()),
    }
}

#[tokio::test]
async fn another_user_is_refused_even_when_the_socket_file_lets_them_in() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), THREE, FakeFactory::new())
        .await
        .expect("start");
    // Loosen every permission on the way, so only the daemon's peer check stands in the way.
    let open = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod")
    };
    open(dir.path(), 0o755);
    open(d.socket.parent().expect("dir"), 0o755);
    open(&d.socket, 0o666);
    let socket = d.socket.clone();
    let as_nobody = tokio::task::spawn_blocking(move || probe_as(65534, &socket))
        .await
        .expect("probe");
    let socket = d.socket.clone();
    let as_me = tokio::task::spawn_blocking(move || probe_as(libc_geteuid(), &socket))
        .await
        .expect("probe");
    d.stop().await;
    let Some(refused) = as_nobody else {
        // Only root can become another user; elsewhere the refusal cannot be exercised.
        assert_ne!(libc_geteuid(), 0, "root could not switch users");
        eprintln!("not root: the other-user refusal was not exercised");
        return;
    };
    let v: serde_json::Value = serde_json::from_str(refused.trim()).expect("one JSON line");
    assert_eq!(v["type"], "error", "{refused}");
    assert_eq!(v["fatal"], true);
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("permission denied")),
        "{refused}"
    );
    assert!(!refused.contains("daemon.status"), "{refused}");
    let mine = as_me.expect("own uid");
    assert!(mine.contains("\"daemon.status\""), "{mine}");
}

fn libc_geteuid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}
