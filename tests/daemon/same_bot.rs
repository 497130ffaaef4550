//! Two accounts logged in to the same bot each miss messages (the platform gives each message to
//! one connection): `doctor` fails on it, and the daemon says it in the accounts' status.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use scv_bridge::config::{Config, CredentialsMode};
use scv_bridge::daemon;
use scv_bridge::protocol::{ComponentState, DaemonCommand, NoteSource};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::FakeFactory;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

const ACCOUNTS: &str = "[wechat.home]\n[wechat.work]\n[wechat.other]\n";

/// A configuration with three WeChat accounts; `home` and `work` stored with one bot id.
fn setup(dir: &Path) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{ACCOUNTS}",
        dir.join("state").display(),
        dir.join("run/daemon.sock").display()
    );
    std::fs::write(&path, text).expect("write config");
    let store = CredentialStore::open(CredentialsMode::File, &dir.join("state")).expect("store");
    for (account, bot) in [
        ("home", "b1@im.bot"),
        ("work", "b1@im.bot"),
        ("other", "b2@im.bot"),
    ] {
        let creds = Credentials::default()
            .with("bot_token", "t")
            .with("bot_id", bot)
            // Nothing listens there: the endpoint check fails at once.
            .with("base_url", "http://127.0.0.1:9");
        store
            .save(&format!("wechat:{account}"), &creds)
            .expect("save");
    }
    path
}

#[test]
fn doctor_fails_when_two_accounts_share_a_bot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = setup(dir.path());
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .arg("doctor")
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("same WeChat bot"))
        .unwrap_or_else(|| panic!("no same-bot line: {text}"));
    assert!(
        line.starts_with("FAIL  wechat:home and wechat:work are logged in to the same WeChat bot (bot id b1@im.bot)"),
        "{line}"
    );
    assert!(!line.contains("other"), "{line}");
    assert!(text.contains("channel disable wechat work"), "{text}");
}

#[tokio::test]
async fn the_daemon_notes_a_shared_bot_on_each_account_and_clears_it_after_a_new_login() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = setup(dir.path());
    let config = Config::load(&path).expect("config");
    let f: Arc<dyn ComponentFactory> = FakeFactory::new();
    let d = daemon::start(config, move |_, _| f, LifecyclePolicy::default())
        .await
        .expect("start");
    for id in ["wechat:home", "wechat:work", "wechat:other"] {
        scv_bridge::testing::wait_for_state(&d.core.registry(), id, ComponentState::Connected)
            .await;
    }
    let note = |s: &scv_bridge::protocol::DaemonStatus, id: &str| {
        s.components
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.notes.iter().find(|n| n.source == NoteSource::Login))
            .map(|n| n.text.clone())
    };
    let s = scv_bridge::client::request(&d.socket, DaemonCommand::Status)
        .await
        .expect("status");
    for id in ["wechat:home", "wechat:work"] {
        let n = note(&s, id).unwrap_or_else(|| panic!("{id} has no login note: {s:?}"));
        assert!(n.contains("are logged in to the same WeChat bot"), "{n}");
        assert!(n.contains("login wechat work"), "{n}");
    }
    assert_eq!(note(&s, "wechat:other"), None);

    // `work` logs in to another bot; the next reconcile (as `login` asks for) clears both notes.
    let store =
        CredentialStore::open(CredentialsMode::File, &dir.path().join("state")).expect("store");
    let creds = Credentials::default()
        .with("bot_token", "t")
        .with("bot_id", "b3@im.bot")
        .with("base_url", "http://127.0.0.1:9");
    store.save("wechat:work", &creds).expect("save");
    let s = scv_bridge::client::request(&d.socket, DaemonCommand::Reload)
        .await
        .expect("reload");
    for id in ["wechat:home", "wechat:work"] {
        assert_eq!(note(&s, id), None, "{s:?}");
    }
    d.stop().await;
}
