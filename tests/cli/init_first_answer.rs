//! Ten minutes from install to the first answer, as a script would do it: `init` without a
//! terminal (agent tested, key stored, WeChat QR login against the fake iLink server), then
//! `run`, and the owner's first message is answered by the fake model.

use crate::process_support;

use std::process::Command;
use std::time::Duration;

use process_support::bed::wait_for_answer;
use process_support::{Daemon, read_log, run_with_input, terminate};
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
    let mut init = Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
    init.arg("--config")
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
        .env_remove("OPENAI_API_KEY");
    let said = run_with_input(init, b"sk-first\n").await;
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
    wait_for_answer(&ilink.handle(), PATIENCE, &log, |s| {
        s.to_user == OWNER && s.text == "echo: hello from the phone"
    })
    .await;
    assert_eq!(
        model.requests()[0].authorization.as_deref(),
        Some("Bearer sk-first")
    );
    terminate(&mut daemon);
    assert!(!read_log(&log).contains("sk-first"));
}
