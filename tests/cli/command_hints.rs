//! Printed commands work when copied: the real binary run with `--config FILE` (or
//! `$SCV_BRIDGE_CONFIG`) names that file in every fix it prints, and `status` still answers while
//! the file has an error.

use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");
/// Real time allowed for the daemon to get somewhere; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);

/// A configuration in a directory whose name has a space, with `accounts` and no credentials.
fn config_in(dir: &Path, accounts: &str) -> PathBuf {
    let home = dir.join("my bridge");
    std::fs::create_dir_all(&home).expect("mkdir");
    let path = home.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{accounts}",
        home.join("state").display(),
        home.join("state/daemon.sock").display()
    );
    std::fs::write(&path, text).expect("write");
    path
}

/// A running daemon and the lines it logs; killed when the test ends, passing or not.
struct Daemon {
    child: Child,
    lines: Receiver<String>,
    /// Every line received so far.
    seen: RefCell<Vec<String>>,
}

impl Daemon {
    /// Waits for a log line (from the start of the log) that contains every one of `words`.
    fn wait_for_line(&self, words: &[&str]) -> String {
        let holds = |line: &String| words.iter().all(|w| line.contains(w));
        if let Some(line) = self.seen.borrow().iter().find(|l| holds(l)) {
            return line.clone();
        }
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.borrow_mut().push(line.clone());
                    if holds(&line) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "no log line with {words:?} ({e}) in:\n{}",
                    self.seen.borrow().join("\n")
                ),
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `scv-bridge run` (with `--config` or the environment variable) and waits for its
/// "running" line.
fn start(config: &Path, via_env: bool) -> Daemon {
    let mut cmd = Command::new(BIN);
    if via_env {
        cmd.env("SCV_BRIDGE_CONFIG", config);
    } else {
        cmd.arg("--config").arg(config);
    }
    let mut child = cmd
        .arg("run")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let log = BufReader::new(child.stderr.take().expect("stderr"));
    // Keep draining the log so the daemon never blocks on a full pipe; the lines are handed on
    // to whoever waits for one (and dropped once nobody does).
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in log.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let daemon = Daemon {
        child,
        lines,
        seen: RefCell::new(Vec::new()),
    };
    daemon.wait_for_line(&["scv-bridge is running"]);
    daemon
}

fn cli(config: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("SCV_BRIDGE_CONFIG")
        .output()
        .expect("run")
}

/// `id` as `status --json` reports it.
fn component(config: &Path, id: &str) -> serde_json::Value {
    let out = cli(config, &["status", "--json"]);
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status as JSON");
    s["components"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("no {id} in {s}"))
}

/// The command between the backticks after `fix: run `, split as a shell would.
fn copied_command(text: &str) -> Vec<String> {
    let (_, rest) = text
        .split_once("run `")
        .unwrap_or_else(|| panic!("no command in {text}"));
    let (command, _) = rest.split_once('`').expect("closing backtick");
    shlex::split(command).unwrap_or_else(|| panic!("not one shell command: {command}"))
}

#[test]
fn fixes_name_the_configuration_file_the_daemon_runs_with() {
    for via_env in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = config_in(dir.path(), "[wechat.phone]\n");
        let daemon = start(&config, via_env);
        // The supervisor logs the failure once its state, reason and fix are published.
        daemon.wait_for_line(&["account failed", "wechat:phone"]);
        let phone = component(&config, "wechat:phone");
        assert_eq!(phone["state"], "failed", "{phone}");
        let action = phone["action"].as_str().expect("an action");
        let shown = config.to_str().expect("utf-8 path");
        assert_eq!(
            copied_command(action),
            ["scv-bridge", "--config", shown, "login", "wechat", "phone"],
            "{action}"
        );
        // The table a person reads shows the same command.
        let table = String::from_utf8_lossy(&cli(&config, &["status"]).stdout).into_owned();
        let note = table
            .lines()
            .find(|l| l.starts_with("wechat:phone"))
            .expect("row");
        assert_eq!(copied_command(note), copied_command(action), "{table}");
        // The cause by its code, and the command alone: in its field and on its own line.
        assert_eq!(phone["code"], "not_logged_in", "{phone}");
        let command = phone["command"].as_str().expect("a command");
        assert_eq!(
            shlex::split(command).expect("one shell command"),
            copied_command(action),
            "{phone}"
        );
        let lines: Vec<&str> = table.lines().collect();
        let at = lines
            .iter()
            .position(|l| *l == "to fix wechat:phone, run:")
            .unwrap_or_else(|| panic!("no fix line in\n{table}"));
        assert_eq!(
            lines.get(at + 1),
            Some(&format!("  {command}").as_str()),
            "{table}"
        );
    }
}

#[test]
fn a_copied_reload_hint_runs_and_status_survives_a_broken_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_in(dir.path(), "");
    let _daemon = start(&config, false);
    let out = cli(&config, &["status"]);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(table.contains("no accounts configured"), "{table}");
    // Run exactly what the table says, from another directory, through a shell.
    let command = table
        .split_once("run `")
        .and_then(|(_, r)| r.split_once('`'))
        .map(|(c, _)| c.to_string())
        .expect("a command");
    let copied = command.replacen("scv-bridge", &shlex::try_quote(BIN).expect("bin"), 1);
    let ran = Command::new("sh")
        .arg("-c")
        .arg(&copied)
        .current_dir("/")
        .env_remove("SCV_BRIDGE_CONFIG")
        .output()
        .expect("sh");
    assert!(
        ran.status.success() && String::from_utf8_lossy(&ran.stdout).contains("reloaded"),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );

    // A mistake in the file: status still finds the daemon, and says what is wrong.
    let text = std::fs::read_to_string(&config).expect("read");
    std::fs::write(
        &config,
        format!("{text}[wechat.phone]\nsenders = \"all\"\n"),
    )
    .expect("write");
    let out = cli(&config, &["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning:") && err.contains("config.toml:5: wechat.phone.senders"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("scv-bridge"));
}

#[test]
fn without_a_daemon_the_hint_to_start_one_names_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_in(dir.path(), "");
    let out = cli(&config, &["status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let (_, rest) = err.split_once("start it with `").expect("a hint");
    let (command, _) = rest.split_once('`').expect("closing backtick");
    assert_eq!(
        shlex::split(command).expect("shell words"),
        [
            "scv-bridge",
            "--config",
            config.to_str().expect("utf-8"),
            "run"
        ]
    );
}
