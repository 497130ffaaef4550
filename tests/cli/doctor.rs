//! `scv-bridge doctor` through the real binary (completions: `tests/cli/completions.rs`).

use std::path::Path;
use std::process::Command;

use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_feishu::fake::{FakeConfig, FakeFeishu};

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
    doctor_env(config, &[])
}

/// `doctor` with `env` set (a `None` value removes the variable).
fn doctor_env(config: &Path, env: &[(&str, Option<&str>)]) -> (i32, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("--config").arg(config).arg("doctor");
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().expect("run");
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
            "FAIL  wechat:phone: http://{closed} cannot be reached"
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

#[tokio::test]
async fn the_model_endpoint_is_asked_with_the_key_and_a_refusal_names_its_status() {
    let fake = FakeOpenAi::start().await.expect("fake");
    fake.require_key("k-right");
    let dir = tempfile::tempdir().expect("tempdir");
    let var = "SCV_DOCTOR_TEST_KEY";
    let config = write_config(
        dir.path(),
        &format!(
            "[agent]\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"{var}\"\n",
            fake.base_url()
        ),
    );
    let models = format!("{}/models", fake.base_url());
    let run = |key: Option<&'static str>| {
        let config = config.clone();
        tokio::task::spawn_blocking(move || doctor_env(&config, &[(var, key)]))
    };

    let (code, out) = run(Some("k-right")).await.expect("join");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("ok    agent: {var} is set"))
            && out.contains(&format!(
                "ok    agent: {models} answers HTTP 200 over plain HTTP (no TLS)"
            )),
        "{out}"
    );
    assert!(!out.contains("TLS (certificate verified)"), "{out}");

    let (code, out) = run(Some("k-wrong")).await.expect("join");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "FAIL  agent: {models} answered HTTP 401\n      fix: set {var} to a valid key"
        )),
        "{out}"
    );

    let (code, out) = run(None).await.expect("join");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("FAIL  agent: {var} (api_key_env) is not set")),
        "{out}"
    );
}

#[tokio::test]
async fn feishu_credentials_are_checked_by_fetching_a_token() {
    let fake = FakeFeishu::start(FakeConfig::default())
        .await
        .expect("fake feishu");
    let model = FakeOpenAi::start().await.expect("fake model");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[agent]\nbase_url = \"{}\"\nmodel = \"m\"\n[feishu.work]\ndomain = \"{}\"\n",
            model.base_url(),
            fake.base_url()
        ),
    );
    let store = CredentialStore::Files(dir.path().join("state/credentials"));
    let app_id = FakeConfig::default().app_id;
    let save = |secret: &str| {
        store
            .save(
                "feishu:work",
                &Credentials::default()
                    .with("app_id", app_id.clone())
                    .with("app_secret", secret),
            )
            .expect("save")
    };
    save(&FakeConfig::default().app_secret);
    // As private as the daemon makes it, so only the checks under test can fail.
    std::fs::set_permissions(
        dir.path().join("state"),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .expect("chmod");
    let c = config.clone();
    let (code, out) = tokio::task::spawn_blocking(move || doctor(&c))
        .await
        .expect("join");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "ok    feishu:work: {} accepted app {app_id} (tenant token fetched over plain HTTP (no TLS))",
            fake.base_url()
        )),
        "{out}"
    );
    assert_eq!(fake.token_requests(), 1, "the token was really fetched");

    save("not-the-secret");
    let (code, out) = tokio::task::spawn_blocking(move || doctor(&config))
        .await
        .expect("join");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "FAIL  feishu:work: Feishu refused app {app_id}: code "
        )) && out.contains(" login feishu work`"),
        "{out}"
    );
}

#[tokio::test]
async fn json_output_carries_every_check() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[agent]\nbase_url = \"{}\"\nmodel = \"m\"\n[wechat.phone]\n",
            fake.base_url()
        ),
    );
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .args(["doctor", "--json"])
            .output()
            .expect("run")
    })
    .await
    .expect("join");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["ok"], false);
    assert_eq!(v["daemon"]["running"], false);
    let checks = v["checks"].as_array().expect("checks");
    assert_eq!(
        v["failed"].as_u64(),
        Some(checks.iter().filter(|c| c["ok"] == false).count() as u64)
    );
    // Each check carries a stable id (the list is pinned in src/doctor/check.rs), and the
    // account it is about.
    let ids: Vec<&str> = checks
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        [
            "config",
            "credentials",
            "store",
            "socket_dir",
            "clock",
            "wechat.endpoint",
            "agent.endpoint",
            "console"
        ],
        "{v}"
    );
    let creds = checks
        .iter()
        .find(|c| c["what"] == "wechat:phone has no credentials")
        .expect("the credentials check");
    assert_eq!(creds["ok"], false);
    assert_eq!(creds["id"], "credentials");
    assert_eq!(creds["account"], "wechat:phone");
    assert_eq!(checks[0]["account"], serde_json::Value::Null);
    assert!(
        creds["fix"]
            .as_str()
            .is_some_and(|f| f.contains(" login wechat phone`")),
        "{creds}"
    );
}
