//! `scv-bridge login feishu` with no daemon running stores the login and the pairing code, then
//! says to start the daemon first and returns: it never waits for a code nobody can receive.

use crate::feishu_support;

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use feishu_support::write_config;
use scv_feishu::fake::{FakeConfig, FakeFeishu};

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_daemon_login_says_to_start_it_and_does_not_wait() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &fake, "");
    let creds = fake.credentials();
    let mut child = Command::new(BIN)
        .args(["--config"])
        .arg(&config.path)
        .args(["login", "feishu", "work", "--app-id", &creds.app_id])
        .env_remove("NO_PROXY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A login that waits is killed when the bound below gives up.
        .kill_on_drop(true)
        .spawn()
        .expect("run the binary");
    let mut stdin = child.stdin.take().expect("stdin");
    let secret = format!("{}\n", creds.app_secret.expose());
    stdin.write_all(secret.as_bytes()).await.expect("secret");
    drop(stdin);
    // Bounded: the old command polled for the code for 10 minutes.
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("login returns instead of waiting for the code")
        .expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("send this code"), "{stdout}");
    assert!(stdout.contains("Start the daemon first"), "{stdout}");
    assert!(stdout.contains("scv-bridge --config"), "{stdout}");
    assert!(!stdout.contains("Waiting for it"), "{stdout}");
}
