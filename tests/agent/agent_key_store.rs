//! The model key has a home: a daemon whose key is only in the credential store (no variable,
//! no unit file) answers a WeChat chat, sends that key to the model, and never shows it in
//! status or its log.

use crate::process_support;

use std::time::Duration;

use process_support::bed::wait_for_answer;
use process_support::{Daemon, read_log, terminate};
use scv_bridge::secrets::{AGENT_KEY_ID, API_KEY_FIELD, CredentialStore, Credentials};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::fake::FakeServer;

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);
const KEY: &str = "sk-only-in-the-store-4242";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_with_the_key_only_in_the_store_answers_and_never_shows_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ilink = FakeServer::start().await.expect("fake ilink");
    let model = FakeOpenAi::start().await.expect("fake model");
    let state = dir.path().join("state");
    let config = dir.path().join("config.toml");
    // No api_key_env: the key comes from the store.
    std::fs::write(
        &config,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n\
             [agent]\nbase_url = \"{}\"\nmodel = \"m\"\n\
             [wechat.phone]\nbase_url = \"{}\"\n",
            state.display(),
            dir.path().join("run/daemon.sock").display(),
            model.base_url(),
            ilink.base_url(),
        ),
    )
    .expect("config");
    let store = CredentialStore::Files(state.join("credentials"));
    let token = ilink.handle().issue_token();
    store
        .save(
            "wechat:phone",
            &Credentials::default()
                .with("bot_token", token.expose())
                .with("bot_id", ilink.handle().bot_id())
                .with("base_url", ilink.base_url())
                .with("owner_id", "owner@im.wechat"),
        )
        .expect("save the wechat login");
    store
        .save(
            AGENT_KEY_ID,
            &Credentials::default().with(API_KEY_FIELD, KEY),
        )
        .expect("save the agent key");

    let log = dir.path().join("daemon.log");
    // RUST_LOG=debug: the most a person could turn on. A stored key wins over OPENAI_API_KEY,
    // so whatever this environment holds cannot stand in for it.
    let mut daemon = Daemon::spawn(&config, &[("RUST_LOG", "debug")], &log);
    ilink.handle().push_text("owner@im.wechat", "hello");
    tokio::time::timeout(PATIENCE, model.wait_requests(1))
        .await
        .unwrap_or_else(|_| panic!("the model was never asked; log:\n{}", read_log(&log)));
    wait_for_answer(&ilink.handle(), PATIENCE, &log, |s| s.text == "echo: hello").await;
    let asked = model.requests();
    assert_eq!(
        asked[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );

    let status = std::process::Command::new(env!("CARGO_BIN_EXE_scv-bridge"))
        .arg("--config")
        .arg(&config)
        .args(["status", "--json"])
        .output()
        .expect("status");
    assert!(status.status.success());
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("\"agent\""), "{status}");
    assert!(!status.contains(KEY), "{status}");

    // The container health check: a daemon answers, so exit 0 and nothing printed.
    let quiet = std::process::Command::new(env!("CARGO_BIN_EXE_scv-bridge"))
        .arg("--config")
        .arg(&config)
        .args(["status", "--quiet"])
        .output()
        .expect("status --quiet");
    assert!(quiet.status.success());
    assert!(quiet.stdout.is_empty() && quiet.stderr.is_empty());

    terminate(&mut daemon);
    let logged = read_log(&log);
    assert!(logged.contains("scv-bridge is running"), "{logged}");
    assert!(!logged.contains(KEY), "the key reached the log:\n{logged}");
}
