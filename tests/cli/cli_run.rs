//! The real binary: `run` with the example configuration, `status`, SIGTERM, and no daemon.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

/// The example configuration with its state and socket moved into `dir`.
fn example_in(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
        .expect("example");
    let state = dir.join("state");
    let text = text
        .replace(
            "state_dir = \"~/.local/state/scv-bridge\"",
            &format!(
                "state_dir = \"{}\"\nsocket = \"{}\"",
                state.display(),
                state.join("daemon.sock").display()
            ),
        )
        .replace("credentials = \"auto\"", "credentials = \"file\"");
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("write");
    path
}

fn cli(config: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run the binary")
}

#[test]
fn run_status_and_sigterm_with_the_example_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = example_in(dir.path());

    let before = cli(&config, &["status"]);
    assert_eq!(before.status.code(), Some(1));
    let err = String::from_utf8_lossy(&before.stderr);
    assert!(
        err.contains("no scv-bridge daemon answers on")
            && err.contains(&format!("scv-bridge --config {} run", config.display())),
        "{err}"
    );

    let mut daemon = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .arg("run")
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn daemon");
    // Wait for the daemon's own "running" line: an event, not a timer.
    let mut log = BufReader::new(daemon.stderr.take().expect("stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            log.read_line(&mut line).expect("read log") > 0,
            "daemon exited early: {seen}"
        );
        seen.push_str(&line);
        if line.contains("scv-bridge is running") {
            break;
        }
    }
    let logs = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut log, &mut rest);
        rest
    });

    let out = cli(&config, &["status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for id in [
        "feishu:work",
        "mail:personal",
        "telegram:bot",
        "wechat:inbox",
        "wechat:phone",
    ] {
        assert!(table.contains(id), "{id} missing from\n{table}");
    }
    let json = cli(&config, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json status");
    let components = status["components"].as_array().expect("components");
    assert_eq!(components.len(), 5);
    for c in components {
        // No credentials were stored: each account must say so, not pretend to be connected.
        if c["state"] == "failed" {
            assert_eq!(c["error"], "not logged in", "{c}");
            assert!(
                c["action"].as_str().is_some_and(|a| a.starts_with(&format!(
                    "run `scv-bridge --config {} login ",
                    config.display()
                ))),
                "{c}"
            );
        } else {
            assert!(matches!(c["state"].as_str(), Some("starting")), "{c}");
        }
    }

    // SIGTERM: a clean stop, socket removed.
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    let code = daemon.wait().expect("wait");
    assert!(code.success(), "exit {code:?}");
    let rest = logs.join().expect("log thread");
    assert!(rest.contains("scv-bridge stopped"), "{rest}");
    assert!(!dir.path().join("state/daemon.sock").exists());
}

#[test]
fn a_bad_config_is_reported_with_file_line_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[feishu.work]\nsenders = \"all\"\n").expect("write");
    let out = cli(&path, &["run"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:2: feishu.work.senders: expected owner or anyone, found 'all'"),
        "{err}"
    );
}

/// Reads the daemon's log until a line contains `what`; everything read so far.
fn read_until(log: &mut impl BufRead, what: &str, seen: &mut String) {
    loop {
        let mut line = String::new();
        assert!(
            log.read_line(&mut line).expect("read log") > 0,
            "daemon exited before {what:?}: {seen}"
        );
        seen.push_str(&line);
        if line.contains(what) {
            return;
        }
    }
}

#[test]
fn sighup_reloads_the_file_and_the_daemon_keeps_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = example_in(dir.path());
    let mut daemon = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .arg("run")
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn daemon");
    let mut log = BufReader::new(daemon.stderr.take().expect("stderr"));
    let mut seen = String::new();
    read_until(&mut log, "scv-bridge is running", &mut seen);

    // A new account in the file, then a hangup: the daemon reloads instead of dying.
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("\n[wechat.added]\n");
    std::fs::write(&config, text).expect("write");
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGHUP) };
    read_until(&mut log, "configuration reloaded", &mut seen);
    assert!(seen.contains("SIGHUP received"), "{seen}");
    assert!(
        daemon.try_wait().expect("try_wait").is_none(),
        "the daemon ended"
    );
    let out = cli(&config, &["status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("wechat:added"),
        "the reload added the account:\n{table}"
    );

    // A file that does not parse: the reload is refused, and the daemon still runs.
    std::fs::write(&config, "[feishu.work]\nsenders = \"all\"\n").expect("write");
    // SAFETY: as above.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGHUP) };
    read_until(&mut log, "was refused", &mut seen);
    assert!(
        daemon.try_wait().expect("try_wait").is_none(),
        "the daemon ended"
    );
    // SAFETY: as above.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    assert!(daemon.wait().expect("wait").success());
}

#[test]
fn a_confirm_timeout_out_of_range_names_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = example_in(dir.path());
    for bad in ["0s", "0", "5h"] {
        let out = cli(&config, &["confirm", "Deploy?", "--timeout", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("invalid value '{bad}' for '--timeout")),
            "{bad}: {err}"
        );
        assert!(!err.contains("timeout_seconds"), "{err}");
    }
}
