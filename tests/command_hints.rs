//! Printed commands work when copied: the real binary run with `--config FILE` (or
//! `$SCV_BRIDGE_CONFIG`) names that file in every fix it prints, and `status` still answers while
//! the file has an error.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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

/// Kills the daemon when the test ends, passing or not.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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
    let mut log = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            log.read_line(&mut line).expect("read") > 0,
            "exited early: {seen}"
        );
        seen.push_str(&line);
        if line.contains("scv-bridge is running") {
            break;
        }
    }
    // Keep draining the log so the daemon never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    Daemon(child)
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

/// Polls `status --json` until `id` reports `state` (the daemon gets there on its own).
fn wait_for_state(config: &Path, id: &str, state: &str) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        let out = cli(config, &["status", "--json"]);
        if let Ok(s) = serde_json::from_slice::<serde_json::Value>(&out.stdout)
            && let Some(c) = s["components"]
                .as_array()
                .and_then(|a| a.iter().find(|c| c["id"] == id))
            && c["state"] == state
        {
            return c.clone();
        }
        assert!(start.elapsed() < PATIENCE, "{id} never reached {state}");
        std::thread::sleep(Duration::from_millis(20));
    }
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
        let _daemon = start(&config, via_env);
        let phone = wait_for_state(&config, "wechat:phone", "failed");
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
