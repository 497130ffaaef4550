//! Run-time account settings (`channel set`, `enable`, `disable`, `reset`) against the real daemon
//! over its control socket: they never change what was not asked, status shows where they differ
//! from the file, `reset` forgets them, and an account the file does not have is an error.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use scv_bridge::client::{self, ClientError};
use scv_bridge::config::Config;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::protocol::*;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::FakeFactory;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

fn write_config(dir: &Path, accounts: &str) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{accounts}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display()
    );
    std::fs::write(&path, text).expect("write config");
    path
}

async fn start(dir: &Path, accounts: &str) -> RunningDaemon {
    let path = write_config(dir, accounts);
    let config = Config::load(&path).expect("config");
    let f: Arc<dyn ComponentFactory> = FakeFactory::new();
    daemon::start(config, move |_, _| f, LifecyclePolicy::default())
        .await
        .expect("start")
}

fn set(account: &str, enabled: Option<bool>, remote_tools: Option<RemoteTools>) -> DaemonCommand {
    DaemonCommand::ChannelSet {
        channel: "wechat".into(),
        account: account.into(),
        enabled,
        workspace: None,
        remote_tools,
        senders: None,
        purpose: None,
    }
}

fn reset(account: &str) -> DaemonCommand {
    DaemonCommand::ChannelReset {
        channel: "wechat".into(),
        account: account.into(),
    }
}

async fn health(d: &RunningDaemon, id: &str) -> ComponentHealth {
    client::request(&d.socket, DaemonCommand::Status)
        .await
        .expect("status")
        .components
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} missing"))
}

const TOOLS_NOTE: &str = "remote_tools: owner (set at run time; the file says none)";

#[tokio::test]
async fn set_changes_only_what_it_names_and_status_shows_it_until_reset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), "[wechat.a]\nenabled = false\n").await;

    // No `enabled`: the account the file disables stays disabled.
    client::request(&d.socket, set("a", None, Some(RemoteTools::Owner)))
        .await
        .expect("set");
    let a = health(&d, "wechat:a").await;
    assert_eq!((a.enabled, a.state), (false, ComponentState::Disabled));
    assert_eq!(a.overrides, [TOOLS_NOTE]);

    // Still shown after a reload that restarts the account (a fresh health entry).
    write_config(
        dir.path(),
        "[wechat.a]\nenabled = false\nsenders = \"anyone\"\n",
    );
    client::request(&d.socket, DaemonCommand::Reload)
        .await
        .expect("reload");
    let a = health(&d, "wechat:a").await;
    assert_eq!(
        (a.senders, a.overrides.clone()),
        (Some(Senders::Anyone), vec![TOOLS_NOTE.to_string()])
    );

    // Enabling is its own, visible, change.
    client::request(&d.socket, set("a", Some(true), None))
        .await
        .expect("enable");
    let a = health(&d, "wechat:a").await;
    assert!(a.enabled, "{a:?}");
    assert_eq!(
        a.overrides,
        [
            "enabled: true (set at run time; the file says false)",
            TOOLS_NOTE
        ]
    );

    // Once the file says the same, nothing differs and nothing is shown.
    write_config(
        dir.path(),
        "[wechat.a]\nenabled = false\nsenders = \"anyone\"\nremote_tools = \"owner\"\n",
    );
    client::request(&d.socket, DaemonCommand::Reload)
        .await
        .expect("reload");
    let a = health(&d, "wechat:a").await;
    assert_eq!(
        a.overrides,
        ["enabled: true (set at run time; the file says false)"]
    );

    // Reset: the file decides everything again.
    client::request(&d.socket, reset("a")).await.expect("reset");
    let a = health(&d, "wechat:a").await;
    assert_eq!((a.enabled, a.state), (false, ComponentState::Disabled));
    assert!(a.overrides.is_empty(), "{a:?}");
    d.stop().await;

    // Forgotten for good: a restarted daemon follows the file too.
    let d = start(
        dir.path(),
        "[wechat.a]\nenabled = false\nsenders = \"anyone\"\nremote_tools = \"owner\"\n",
    )
    .await;
    let a = health(&d, "wechat:a").await;
    assert_eq!((a.enabled, a.overrides.len()), (false, 0));
    d.stop().await;
}

#[tokio::test]
async fn an_account_not_in_the_file_is_an_error_that_names_the_closest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), "[wechat.phone]\n[feishu.work]\n").await;
    for command in [set("phnoe", Some(true), None), reset("phnoe")] {
        match client::request(&d.socket, command).await {
            Err(ClientError::Daemon { code, message }) => {
                assert_eq!(code, ErrorCode::NotFound);
                assert!(
                    message.contains("wechat:phnoe is not in the configuration")
                        && message.contains("did you mean wechat:phone?")
                        && message.contains("add a [wechat.phnoe] table"),
                    "{message}"
                );
            }
            other => panic!("expected not_found, got {other:?}"),
        }
    }
    // No phantom account, now or after a reload.
    let ids = |s: DaemonStatus| s.components.into_iter().map(|c| c.id).collect::<Vec<_>>();
    let s = client::request(&d.socket, DaemonCommand::Reload)
        .await
        .expect("reload");
    assert_eq!(ids(s), ["feishu:work", "wechat:phone"]);

    // The same through the command line a person types.
    let config = dir.path().join("config.toml");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .arg("--config")
            .arg(&config)
            .args(["channel", "enable", "wechat", "phnoe"])
            .output()
            .expect("run")
    })
    .await
    .expect("join");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean wechat:phone?"), "{err}");
    d.stop().await;
}

#[tokio::test]
async fn the_command_line_keeps_enabled_unless_told_and_shows_the_override() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = start(dir.path(), "[wechat.a]\nenabled = false\n").await;
    let config = dir.path().join("config.toml");
    let run = |args: &'static [&'static str]| {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            Command::new(BIN)
                .arg("--config")
                .arg(&config)
                .args(args)
                .output()
                .expect("run")
        })
    };
    let out = run(&["channel", "set", "wechat", "a", "--remote-tools", "owner"])
        .await
        .expect("join");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let row = table
        .lines()
        .find(|l| l.starts_with("wechat:a"))
        .expect("row");
    assert!(
        row.contains("disabled")
            && row.contains(TOOLS_NOTE)
            && row.contains(" channel reset wechat a` returns to the file"),
        "{table}"
    );
    let out = run(&["channel", "reset", "wechat", "a"])
        .await
        .expect("join");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(health(&d, "wechat:a").await.overrides.is_empty());
    d.stop().await;
}

#[test]
fn the_wire_form_of_the_new_fields() {
    // Old clients always send `enabled`; new ones may leave it out.
    let old: DaemonCommand = serde_json::from_value(serde_json::json!(
        {"action":"channel_set","channel":"wechat","account":"a","enabled":true,"workspace":null}
    ))
    .expect("old form");
    assert_eq!(old, set("a", Some(true), None));
    let new: DaemonCommand = serde_json::from_value(serde_json::json!(
        {"action":"channel_set","channel":"wechat","account":"a","remote_tools":"owner"}
    ))
    .expect("new form");
    assert_eq!(new, set("a", None, Some(RemoteTools::Owner)));
    assert_eq!(
        serde_json::to_value(reset("a")).expect("ser"),
        serde_json::json!({"action":"channel_reset","channel":"wechat","account":"a"})
    );
    // `overrides` is omitted when empty.
    let h = ComponentHealth::new("wechat", "a", true);
    assert!(
        serde_json::to_value(&h)
            .expect("ser")
            .get("overrides")
            .is_none()
    );
}

#[tokio::test]
async fn settings_stored_by_an_older_daemon_survive_the_upgrade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    // The store as the previous release left it: `enabled` always set.
    let old = rusqlite::Connection::open(&path).expect("open");
    old.execute_batch(
        "CREATE TABLE schema_versions (module TEXT PRIMARY KEY, version INTEGER NOT NULL);
         INSERT INTO schema_versions VALUES ('core', 1);
         CREATE TABLE account_settings (account TEXT PRIMARY KEY, enabled INTEGER NOT NULL,
            workspace TEXT, senders TEXT, remote_tools TEXT, purpose TEXT);
         CREATE TABLE account_state (account TEXT NOT NULL, name TEXT NOT NULL,
            value TEXT NOT NULL, PRIMARY KEY (account, name));
         INSERT INTO account_settings VALUES ('wechat:a', 0, NULL, 'anyone', NULL, NULL);",
    )
    .expect("old schema");
    drop(old);
    let (store, guard) = scv_bridge::store::Store::open(&path).expect("upgrade");
    let saved = store.settings_overrides().await.expect("list");
    assert_eq!(
        (saved.len(), saved[0].enabled, saved[0].senders.as_deref()),
        (1, Some(false), Some("anyone"))
    );
    drop(store);
    let _ = tokio::task::spawn_blocking(move || guard.close()).await;
}
