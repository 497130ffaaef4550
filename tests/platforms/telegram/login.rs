//! `scv-bridge login telegram` (the real binary): the token is checked with getMe before it is
//! stored, and the owner pairs by sending the printed code to the running daemon's bot.

use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::CredentialStore;
use scv_telegram::fake::{FakeConfig, FakeServer};

use super::support::*;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

async fn login(config: &std::path::Path, token: &str) -> (bool, String) {
    scv_bridge::testing::process::login(BIN, config, "telegram", "bot", &[token]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_checks_the_token_and_the_owner_pairs_with_the_code() {
    let fake_config = FakeConfig::default();
    let server = FakeServer::start_with(fake_config.clone())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &server.base_url(), "");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));

    // A token Telegram does not know is refused, and nothing is stored.
    let (ok, said) = login(&config.path, "5000000001:AAWrongWrongWrong").await;
    assert!(!ok, "{said}");
    assert!(said.contains("@BotFather"), "{said}");
    assert!(creds.load(ACCOUNT).expect("read").is_none());

    let (ok, said) = login(&config.path, &fake_config.token).await;
    assert!(ok, "{said}");
    assert!(said.contains("bot @scv_fake_bot (5000000001)"), "{said}");
    assert!(
        !said.contains(&fake_config.token),
        "the token is never printed"
    );
    let code = said
        .split_whitespace()
        .find(|w| w.len() == 6 && w.bytes().all(|b| b.is_ascii_digit()))
        .expect("a pairing code")
        .to_string();
    let stored = creds.load(ACCOUNT).expect("read").expect("stored");
    assert_eq!(
        stored.get("bot_id").map(|s| s.expose().to_string()),
        Some("5000000001".into())
    );

    let fake = server.handle();
    let h = Harness::start_daemon(Some(server), fake, dir, config, TestAgent::echo(), None).await;
    h.wait_state(ComponentState::Connected).await;
    assert_eq!(h.health().user_id, None, "nobody paired yet");
    // A stranger's wrong code pairs nobody; the owner's deep link /start CODE does.
    h.fake.push_text(h.fake.stranger_chat(42), "000000");
    h.fake.push_message(serde_json::json!({
        "chat": h.fake.owner_chat(), "from": h.fake.owner(), "text": format!("/start {code}"),
        "entities": [{"type": "bot_command", "offset": 0, "length": 6}]
    }));
    let owner = h.fake.owner().id.to_string();
    h.until_health("paired", |c| c.user_id.as_deref() == Some(owner.as_str()))
        .await;
    h.until("the pairing notice", |f| !f.sent().is_empty())
        .await;
    h.fake.push_text(h.fake.owner_chat(), "now me");
    h.until("the answer", |f| {
        f.sent().iter().any(|s| s.text == "echo: now me")
    })
    .await;
    assert!(h.texts_to(42).is_empty());
    let stored = h.credentials.load(ACCOUNT).expect("read").expect("stored");
    assert_eq!(stored.owner(), Some(owner));
    assert!(stored.get("pairing_code").is_none(), "the code is spent");
    assert!(
        h.agent.prompts().iter().all(|p| !p.contains(&code)),
        "the code never reached the agent"
    );
    h.stop().await;
}
