//! `scv-bridge doctor` checks each named agent with the key stored under its own name (the
//! console's agent form), never with `[agent]`'s: a named agent whose endpoint wants its own
//! key passes, and one with no key of its own is told so, whatever `[agent]` has stored.

use std::process::Command;

use scv_bridge::secrets::{
    AGENT_KEY_ID, API_KEY_FIELD, CredentialStore, Credentials, named_agent_key_id,
};
use scv_bridge::testing::fake_openai::FakeOpenAi;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

#[tokio::test]
async fn a_named_agent_is_checked_with_its_own_stored_key() {
    let (default, claude) = (
        FakeOpenAi::start().await.expect("fake"),
        FakeOpenAi::start().await.expect("fake"),
    );
    default.require_key("sk-default");
    claude.require_key("sk-claude");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n\
         [agent]\nbase_url = \"{}\"\nmodel = \"m\"\n\
         [agents.claude]\nbase_url = \"{}\"\nmodel = \"m-claude\"\n",
        dir.path().join("state").display(),
        dir.path().join("state/daemon.sock").display(),
        default.base_url(),
        claude.base_url(),
    );
    std::fs::write(&config, text).expect("write");
    let store = CredentialStore::Files(dir.path().join("state").join("credentials"));
    let key = |k: &str| Credentials::default().with(API_KEY_FIELD, k);
    store.save(AGENT_KEY_ID, &key("sk-default")).expect("store");
    let run = |config: std::path::PathBuf| {
        tokio::task::spawn_blocking(move || {
            let out = Command::new(BIN)
                .arg("--config")
                .arg(&config)
                .arg("doctor")
                .env_remove("OPENAI_API_KEY")
                .output()
                .expect("run");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            (out.status.code().unwrap_or(-1), stdout)
        })
    };
    let models = format!("{}/models", claude.base_url());

    // Without a key of its own, claude is refused (and its key entry is no login to check).
    let (code, out) = run(config.clone()).await.expect("join");
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("FAIL  agent claude: {models} answered HTTP 401")),
        "{out}"
    );
    assert!(
        !out.contains("agents-claude"),
        "no login check for a key: {out}"
    );

    store
        .save(&named_agent_key_id("claude"), &key("sk-claude"))
        .expect("store");
    let (code, out) = run(config).await.expect("join");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok    agent claude: an API key is stored")
            && out.contains(&format!("ok    agent claude: {models} answers HTTP 200")),
        "{out}"
    );
}
