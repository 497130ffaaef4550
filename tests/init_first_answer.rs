//! Ten minutes from install to the first answer, as a script would do it: `init` without a
//! terminal (agent tested, key stored, WeChat QR login against the fake iLink server), then
//! `run`, and the owner's first message is answered by the fake model.

mod process_support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use process_support::{Daemon, read_log, terminate};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::fake::{FakeConfig, FakeServer};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);
const OWNER: &str = "first0001@im.wechat";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_then_run_answers_the_owners_first_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ilink = FakeServer::start_with(FakeConfig {
        initial_token: None,
        ..FakeConfig::default()
    })
    .await
    .expect("fake ilink");
    let model = FakeOpenAi::start().await.expect("fake model");
    model.require_key("sk-first");
    let config = dir.path().join("config/config.toml");

    // The phone: scans and confirms the first QR code init shows.
    let phone = {
        let fake = ilink.handle();
        tokio::spawn(async move {
            assert!(
                fake.wait_for_qr(1, PATIENCE).await,
                "no QR code was fetched"
            );
            fake.qr_scan();
            fake.qr_confirm(OWNER).expect("a code to confirm");
        })
    };
    let mut init = Command::new(env!("CARGO_BIN_EXE_scv-bridge"))
        .arg("--config")
        .arg(&config)
        .args([
            "init",
            "--non-interactive",
            "--agent",
            "openai",
            "--model",
            "m",
        ])
        .args(["--base-url", &model.base_url(), "--api-key-stdin"])
        .args([
            "--wechat",
            "phone",
            "--wechat-base-url",
            &ilink.base_url(),
            "--login",
        ])
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--credentials", "file", "--skip-doctor"])
        .env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("init");
    init.stdin
        .take()
        .expect("stdin")
        .write_all(b"sk-first\n")
        .expect("the key");
    let out = tokio::task::spawn_blocking(move || init.wait_with_output())
        .await
        .expect("join")
        .expect("init ran");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    phone.await.expect("the phone");
    assert!(said.contains("logged in: wechat:phone"), "{said}");
    assert!(!said.contains("sk-first"), "{said}");

    let log = dir.path().join("daemon.log");
    let mut daemon = Daemon::spawn(
        &config,
        &[
            ("RUST_LOG", "info"),
            (
                "XDG_RUNTIME_DIR",
                dir.path().join("run").to_str().expect("utf-8"),
            ),
        ],
        &log,
    );
    ilink.handle().push_text(OWNER, "hello from the phone");
    let answer = ilink
        .handle()
        .wait_for_sent_where(0, PATIENCE, |s| {
            s.to_user == OWNER && s.text == "echo: hello from the phone"
        })
        .await;
    assert!(
        answer.is_some(),
        "never answered; sent {:?}; log:\n{}",
        ilink.handle().sent(),
        read_log(&log)
    );
    assert_eq!(
        model.requests()[0].authorization.as_deref(),
        Some("Bearer sk-first")
    );
    terminate(&mut daemon);
    assert!(!read_log(&log).contains("sk-first"));
}
