//! `doctor` while a daemon runs: it asks the daemon over the real control socket and fails for
//! every account the daemon reports `failed` or holds in a long backoff, with the daemon's fix,
//! without contacting the platforms itself.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::config::{AccountKey, Channel, Config};
use scv_bridge::daemon;
use scv_bridge::failure::{Action, Code};
use scv_bridge::protocol::ComponentState;
use scv_bridge::supervisor::{ComponentError, ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_bridge::testing::{FakeFactory, Step, wait_for_state};

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

fn doctor(config: &Path, json: bool) -> (i32, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("--config").arg(config).arg("doctor");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn doctor_fails_where_the_running_daemon_reports_failed_or_long_backoff() {
    let model = FakeOpenAi::start().await.expect("model");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    // A closed port: if doctor contacted the platform itself, the check would fail differently.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    std::fs::write(
        &path,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[agent]\nbase_url = \"{}\"\nmodel = \"m\"\n\
             [wechat.expired]\nbase_url = \"http://{closed}\"\n[wechat.throttled]\n[wechat.fine]\n[feishu.off]\nenabled = false\n",
            dir.path().join("state").display(),
            dir.path().join("run/daemon.sock").display(),
            model.base_url()
        ),
    )
    .expect("write");
    let f = FakeFactory::new();
    let fix = "run `scv-bridge login wechat expired`";
    f.script(
        &AccountKey::new(Channel::Wechat, "expired"),
        [Step::Fail(ComponentError::fatal(
            Code::new("wechat.session_expired"),
            "session expired",
            Action::Relogin(AccountKey::new(Channel::Wechat, "expired")),
        ))],
    );
    f.script(
        &AccountKey::new(Channel::Wechat, "throttled"),
        [Step::Fail(ComponentError::slow_down(
            Code::new("wechat.throttled"),
            "the platform asks to wait",
            Duration::from_secs(600),
        ))],
    );
    let factory: Arc<dyn ComponentFactory> = f.clone();
    let config = Config::load(&path).expect("config");
    let d = daemon::start(config, move |_, _| factory, LifecyclePolicy::default())
        .await
        .expect("start");
    let registry = d.core.registry();
    wait_for_state(&registry, "wechat:expired", ComponentState::Failed).await;
    wait_for_state(&registry, "wechat:throttled", ComponentState::Backoff).await;
    wait_for_state(&registry, "wechat:fine", ComponentState::Connected).await;

    let p = path.clone();
    let (code, out) = tokio::task::spawn_blocking(move || doctor(&p, false))
        .await
        .expect("join");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "ok    daemon pid {} ({}) answers on",
            std::process::id(),
            env!("CARGO_PKG_VERSION")
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "FAIL  wechat:expired: the daemon reports it failed: session expired\n      fix: {fix}"
        )),
        "{out}"
    );
    assert!(
        out.contains("FAIL  wechat:throttled: the daemon holds it in backoff, next try in ")
            && out.contains(": the platform asks to wait\n"),
        "{out}"
    );
    assert!(
        out.contains("ok    wechat:fine: the daemon reports it connected")
            && out.contains("ok    feishu:off: disabled"),
        "{out}"
    );
    // The daemon's view replaces the platform checks: the closed port was not tried.
    assert!(!out.contains(&closed.to_string()), "{out}");

    let (code, json) = tokio::task::spawn_blocking(move || doctor(&path, true))
        .await
        .expect("join");
    assert_eq!(code, 1, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["daemon"]["running"], true);
    assert_eq!(v["daemon"]["pid"], std::process::id());
    let expired = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| {
            c["what"]
                .as_str()
                .is_some_and(|w| w.starts_with("wechat:expired:"))
        })
        .expect("expired");
    assert_eq!(
        (&expired["ok"], &expired["fix"]),
        (&serde_json::json!(false), &serde_json::json!(fix))
    );
    d.stop().await;
}
