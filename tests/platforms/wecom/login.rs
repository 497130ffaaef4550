//! `scv-bridge login wecom` (the real binary): the bot id and secret are checked by one
//! subscribe before they are stored, and the owner pairs by sending the printed code to the
//! running daemon's bot in a direct chat (never from a group).

use std::sync::Arc;

use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::CredentialStore;
use scv_wecom::fake::{FakeConfig, FakeWeCom};

use crate::wecom::support::*;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

async fn login(config: &std::path::Path, bot_id: &str, secret: &str) -> (bool, String) {
    scv_bridge::testing::process::login(BIN, config, "wecom", "bot", &[bot_id, secret]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_checks_the_secret_and_the_owner_pairs_with_the_code() {
    let fake_config = FakeConfig::default();
    let fake = Arc::new(FakeWeCom::start(fake_config.clone()).await.expect("fake"));
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &fake.ws_url(), "");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));

    // A secret WeCom refuses is not stored.
    let (ok, said) = login(&config.path, &fake_config.bot_id, "wrong-secret").await;
    assert!(!ok, "{said}");
    assert!(said.contains("refused the bot id or secret"), "{said}");
    assert!(creds.load(ACCOUNT).expect("read").is_none());

    let (ok, said) = login(&config.path, &fake_config.bot_id, &fake_config.secret).await;
    assert!(ok, "{said}");
    assert!(said.contains(&fake_config.bot_id), "{said}");
    assert!(
        !said.contains(&fake_config.secret),
        "the secret is never printed"
    );
    let code = said
        .split_whitespace()
        .find(|w| w.len() == 6 && w.bytes().all(|b| b.is_ascii_digit()))
        .expect("a pairing code")
        .to_string();

    let h = Harness::start_daemon(fake, dir, config, TestAgent::echo(), None).await;
    h.connected().await;
    assert_eq!(h.health().user_id, None, "nobody paired yet");
    // The code in a group pairs nobody; a stranger's wrong code neither; the owner's does.
    h.fake
        .push_group_text("wrGroupA1", "LiSi", &format!("@Helper {code}"));
    h.fake.push_text("LiSi", "000000");
    h.fake.push_text(OWNER, &code);
    h.until_health("paired", |c| c.user_id.as_deref() == Some(OWNER))
        .await;
    h.until("the pairing notice", |f| {
        f.sent().iter().any(|s| s.to == OWNER)
    })
    .await;
    let now = h.fake.push_text(OWNER, "now me");
    h.until("the answer", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == now.req_id && b.finished)
    })
    .await;
    let stored = h.credentials.load(ACCOUNT).expect("read").expect("stored");
    assert_eq!(stored.owner(), Some(OWNER.to_string()));
    assert!(stored.get("pairing_code").is_none(), "the code is spent");
    assert!(
        h.agent.prompts().iter().all(|p| !p.contains(&code)),
        "the code never reached the agent"
    );
    assert_eq!(h.health().state, ComponentState::Connected);
    h.stop().await;
}
