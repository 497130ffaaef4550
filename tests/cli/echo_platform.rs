//! The toy Echo platform (`adapters::echo`, compiled with the `testing` feature only) through
//! the real binary. Its folder, one `Channel` variant and one registry line were all it took;
//! this test shows the generic paths reach it: `init` sets it up from its set-up questions,
//! completions offer its account, `login` walks its steps and refuses a wrong token, `doctor`
//! runs its probe, the daemon runs it, `status` shows it, and its owner pairs with the code.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use scv_bridge::adapters::echo::fake::EchoServer;
use serde_json::Value;

use crate::process_support::Daemon;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");
const TOKEN: &str = "tok-1";
const OWNER: &str = "alice";

fn cli(config: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("SCV_BRIDGE_CONFIG")
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("output")
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The Echo account's row of `status --json`.
fn echo_row(config: &Path) -> Value {
    let out = cli(config, &["status", "--json"], "");
    assert!(out.status.success(), "{}", said(&out));
    let status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    let rows = status["components"].as_array().cloned().unwrap_or_default();
    rows.into_iter()
        .find(|c| c["id"] == "echo:bot")
        .unwrap_or_else(|| panic!("no echo:bot in {status}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toy_platform_is_set_up_logged_in_listed_checked_shown_and_paired() {
    let server = EchoServer::start(TOKEN, "echo-bot-1").await.expect("echo");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    let head = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n",
        dir.path().join("state").display(),
        dir.path().join("run/daemon.sock").display(),
    );
    std::fs::write(&config, head).expect("write");

    // init: the platform's own set-up question, from a flag.
    let address = format!("address={}", server.address());
    let init = [
        "init",
        "--non-interactive",
        "--skip-doctor",
        "--chat",
        "echo:bot",
    ];
    let out = cli(&config, &[&init[..], &["--setup", &address]].concat(), "");
    assert!(out.status.success(), "{}", said(&out));
    let written = std::fs::read_to_string(&config).expect("read");
    assert!(written.contains("[echo.bot]"), "{written}");

    // Completions offer its account like any other.
    let p = config.to_str().expect("utf-8");
    let offered = Command::new(BIN)
        .env("COMPLETE", "fish")
        .args(["--", "scv-bridge", "--config", p, "login", "echo", ""])
        .output()
        .expect("complete");
    let values: Vec<String> = String::from_utf8_lossy(&offered.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .filter(|v| !v.starts_with('-'))
        .collect();
    assert_eq!(values, ["bot"]);

    // login: a wrong token is refused with its fix; the right one stores and gives a code.
    let out = cli(&config, &["login", "echo", "bot"], "wrong\n");
    assert!(!out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("refused the token"), "{}", said(&out));
    let out = cli(&config, &["login", "echo", "bot"], &format!("{TOKEN}\n"));
    assert!(out.status.success(), "{}", said(&out));
    assert!(!said(&out).contains(TOKEN), "the token is never shown");
    let code = said(&out)
        .split_whitespace()
        .find(|w| w.len() == 6 && w.bytes().all(|b| b.is_ascii_digit()))
        .expect("a pairing code")
        .to_string();

    // doctor runs its probe with the stored token.
    let out = cli(&config, &["doctor", "--json"], "");
    let checks = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(checks.contains("echo.server"), "{checks}");
    assert!(checks.contains("knows the token of echo-bot-1"), "{checks}");

    // The daemon runs it; the code pairs the owner, who is greeted and shown in status.
    let _daemon = Daemon::spawn(&config, &[("RUST_LOG", "info")], &dir.path().join("log"));
    server.push("mallory", "000000");
    server.push(OWNER, &code);
    let greeting = tokio::time::timeout(Duration::from_secs(30), server.wait_said(1))
        .await
        .expect("the greeting");
    assert_eq!(greeting[0].0, OWNER, "greeted in the owner's chat");
    let row = echo_row(&config);
    assert_eq!(row["user_id"], OWNER, "{row}");
    assert_eq!(row["bot_id"], "echo-bot-1", "{row}");
    assert_eq!(row["dropped"]["pairing_wrong"], 1, "{row}");
}
