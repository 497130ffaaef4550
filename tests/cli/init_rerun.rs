//! Re-running `init` on an existing configuration changes only what the person picks: here a
//! mail account whose digests go to the WeChat chat already in use. The other accounts' tables
//! and stored logins stay byte for byte, that chat stays an ordinary one and is not logged in
//! again, and only the mailbox's password is stored (checked against a real Dovecot).

// The mail server harness is shared with `channels/mail`'s own tests.
use crate::process_support;
use crate::server;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use process_support::run_with_input;
use scv_bridge::config::{AccountKey, Config, CredentialsMode};
use scv_bridge::protocol::Purpose;
use scv_bridge::secrets::{AGENT_KEY_ID, API_KEY_FIELD, CredentialStore, Credentials, Secret};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use server::MailServer;

/// Every stored credential file, by name.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, std::fs::read(e.path()).unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_picking_mail_leaves_the_other_channels_and_their_logins_alone() {
    let mail = MailServer::start(&["--user", "test:secret"]);
    let model = FakeOpenAi::start().await.expect("fake model");
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let path = dir.path().join("config.toml");
    let before = format!(
        "# my bridge\nstate_dir = \"{state}\"\nsocket = \"{sock}\"\ncredentials = \"file\"\n\n\
         [agent]\nbase_url = \"{base}\"\nmodel = \"m\"\n\n\
         [wechat.phone]\n# the chat I talk to the agent in\nsenders = \"owner\"\n\n\
         [feishu.work]\nsenders = \"anyone\"  # colleagues too\n\n\
         [mail.box]\nimap_host = \"127.0.0.1\"\nimap_port = {imap}\ntls = \"none\"\nusername = \"test\"\n",
        state = state.display(),
        sock = dir.path().join("run/daemon.sock").display(),
        base = model.base_url(),
        imap = mail.var("IMAP_PORT"),
    );
    std::fs::write(&path, &before).expect("config");
    let store = CredentialStore::open(CredentialsMode::File, &state).expect("store");
    let logins = [
        (
            "wechat:phone",
            Credentials::default()
                .with("bot_token", "wx-token")
                .with("bot_id", "bot1@im.bot")
                .with("base_url", "http://127.0.0.1:9")
                .with("owner_id", "owner@im.wechat"),
        ),
        (
            "feishu:work",
            Credentials::default()
                .with("app_id", "cli_1")
                .with("app_secret", "fs-secret"),
        ),
        (
            AGENT_KEY_ID,
            Credentials::default().with(API_KEY_FIELD, "sk-kept"),
        ),
    ];
    for (id, c) in &logins {
        store.save(id, c).expect("save");
    }
    let creds_dir = state.join("credentials");
    let kept = snapshot(&creds_dir);
    assert_eq!(kept.len(), 3, "{:?}", kept.keys());

    let mut init = Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
    init.arg("--config")
        .arg(&path)
        .args(["init", "--non-interactive", "--mail", "box"])
        .args(["--mail-chat", "wechat:phone", "--login", "--skip-doctor"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("SCV_BRIDGE_CONFIG")
        .env("XDG_RUNTIME_DIR", dir.path().join("run"));
    let said = run_with_input(init, b"secret\n").await;
    assert!(said.contains("== login mail box =="), "{said}");
    assert!(said.contains("mail:box: password stored"), "{said}");
    assert!(
        !said.contains("login wechat"),
        "the chat in use was logged in again: {said}"
    );

    // The file: the one line picked, nothing else (no purpose turns the chat into a mail chat).
    let after = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        after.replace("report_to = \"wechat:phone\"\n", ""),
        before,
        "{after}"
    );
    let config = Config::load(&path).expect("loads");
    let phone = &config.accounts[&AccountKey::parse("wechat:phone").expect("key")];
    assert_eq!(phone.purpose, Purpose::Chat);

    // The logins: the three kept byte for byte, the mailbox's password added.
    let now = snapshot(&creds_dir);
    assert_eq!(now.len(), 4, "{:?}", now.keys());
    for (name, bytes) in &kept {
        assert_eq!(now.get(name), Some(bytes), "{name} changed");
    }
    let password = store.load("mail:box").expect("load").expect("stored");
    assert_eq!(password.get("password"), Some(&Secret::new("secret")));
}
