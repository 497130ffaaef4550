//! `scv-bridge doctor` and `completions` through the real binary.

use std::path::Path;
use std::process::Command;

use scv_bridge::testing::fake_openai::FakeOpenAi;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

fn write_config(dir: &Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{body}",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display()
    );
    std::fs::write(&path, text).expect("write");
    path
}

fn doctor(config: &Path) -> (i32, String) {
    let out = Command::new(BIN)
        .arg("--config")
        .arg(config)
        .arg("doctor")
        .output()
        .expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn all_checks_pass_with_a_reachable_agent_and_no_accounts() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[agent]\nbase_url = \"{}\"\nmodel = \"m\"\n",
            fake.base_url()
        ),
    );
    let (code, out) = tokio::task::spawn_blocking(move || doctor(&config))
        .await
        .expect("join");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok    agent:") && out.contains("all ") && !out.contains("FAIL"),
        "{out}"
    );
}

#[tokio::test]
async fn approvals_ask_without_a_tool_running_agent_is_a_failed_check() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[agent]\nbase_url = \"{}\"\nmodel = \"m\"\n[feishu.work]\nenabled = false\nremote_tools = \"owner\"\napprovals = \"ask\"\n",
            fake.base_url()
        ),
    );
    let (code, out) = tokio::task::spawn_blocking(move || doctor(&config))
        .await
        .expect("join");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  feishu:work: approvals = \"ask\" has no effect")
            && out.contains("fix: set [agent] backend = \"scv\""),
        "{out}"
    );
}

#[tokio::test]
async fn callback_mode_without_an_encrypt_key_is_a_failed_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let config = write_config(
        dir.path(),
        &format!("[feishu.work]\ndomain = \"http://{closed}\"\nmode = \"webhook\"\n"),
    );
    scv_bridge::secrets::CredentialStore::Files(dir.path().join("state/credentials"))
        .save(
            "feishu:work",
            &scv_bridge::secrets::Credentials::default()
                .with("app_id", "cli_x")
                .with("app_secret", "s"),
        )
        .expect("save");
    let (code, out) = tokio::task::spawn_blocking(move || doctor(&config))
        .await
        .expect("join");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  feishu:work is in callback mode but has no Encrypt Key stored")
            && out.contains(" login feishu work`"),
        "{out}"
    );
}

#[tokio::test]
async fn missing_credentials_and_an_unreachable_platform_fail_with_fixes() {
    let fake = FakeOpenAi::start().await.expect("fake");
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let dir = tempfile::tempdir().expect("tempdir");
    let body = format!(
        "[agent]\nbase_url = \"{}\"\nmodel = \"m\"\n[wechat.phone]\nbase_url = \"http://{closed}\"\n",
        fake.base_url()
    );
    let config = write_config(dir.path(), &body);
    let shown = config.display().to_string();
    let (code, out) = tokio::task::spawn_blocking(move || doctor(&config))
        .await
        .expect("join");
    assert_eq!(code, 1, "{out}");
    // The fix names the configuration file doctor was given, so it works when copied.
    assert!(
        out.contains(&format!(
            "FAIL  wechat:phone has no credentials\n      fix: run `scv-bridge --config {shown} login wechat phone`"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "FAIL  wechat:phone: http://{closed} does not answer"
        )),
        "{out}"
    );
    assert!(out.contains("2 of "), "{out}");
}

#[test]
fn a_broken_config_is_one_failing_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "[wechat.phone]\nsenders = \"all\"\n");
    let (code, out) = doctor(&config);
    assert_eq!(code, 1);
    assert!(
        out.contains("wechat.phone.senders: expected owner or anyone, found 'all'"),
        "{out}"
    );
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .expect("run");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("scv-bridge") && text.contains("doctor"),
            "{shell}"
        );
    }
}
