//! `scv-bridge login dingtalk` (the real binary): the client id and secret are checked with
//! DingTalk (token, then a Stream ticket) before they are stored; the secret is never printed;
//! the owner then pairs with the printed code.

use scv_bridge::secrets::CredentialStore;
use scv_dingtalk::Call;
use scv_dingtalk::fake::{FakeDingTalk, Fault};

use super::support::*;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

async fn login(config: &std::path::Path, id: &str, secret: &str) -> (bool, String) {
    scv_bridge::testing::process::login(BIN, config, "dingtalk", "team", &[id, secret]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_checks_the_credentials_before_storing_them() {
    let fake = FakeDingTalk::start(fake_config()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), fake.base_url(), "");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));
    let (id, secret) = (
        fake.config().client_id.clone(),
        fake.config().client_secret.clone(),
    );

    // A wrong secret is refused with the fix, and nothing is stored.
    let (ok, said) = login(&config.path, &id, "not-the-secret").await;
    assert!(!ok, "{said}");
    assert!(said.contains("copy them again"), "{said}");
    assert!(creds.load(ACCOUNT).expect("read").is_none());

    // An app that refuses Stream mode is refused too, with what to change in the console.
    fake.fail_next(
        Call::OpenConnection,
        Fault::Api {
            status: 400,
            code: "invalidParameter".into(),
            scopes: vec![],
        },
    );
    let (ok, said) = login(&config.path, &id, &secret).await;
    assert!(!ok, "{said}");
    assert!(said.contains("Stream"), "{said}");
    assert!(creds.load(ACCOUNT).expect("read").is_none());

    let (ok, said) = login(&config.path, &id, &secret).await;
    assert!(ok, "{said}");
    assert!(said.contains(&format!("app {id}")), "{said}");
    assert!(!said.contains(&secret), "the secret is never printed");
    let code = said
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_digit()))
        .find(|w| w.len() == 6 && w.bytes().all(|b| b.is_ascii_digit()))
        .expect("a pairing code");
    let stored = creds.load(ACCOUNT).expect("read").expect("stored");
    for (field, want) in [("client_id", &id), ("client_secret", &secret)] {
        assert_eq!(
            stored.get(field).map(|s| s.expose().to_string()).as_ref(),
            Some(want)
        );
    }
    assert_eq!(
        stored.get("pairing_code").map(|s| s.expose().to_string()),
        Some(code.to_string())
    );
}
