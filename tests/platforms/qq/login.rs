//! `scv-bridge login qq` (the real binary): the AppID and AppSecret are checked with the token
//! endpoint before they are stored, and the owner pairs by sending the printed code to the
//! running daemon's bot in a one-to-one chat (a code sent in a group pairs nobody).

use std::sync::Arc;

use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::CredentialStore;
use scv_bridge::testing::InstantAgent;
use scv_qq::fake::FakeQq;

use super::support::*;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

async fn login(config: &std::path::Path, app_id: &str, secret: &str) -> (bool, String) {
    scv_bridge::testing::process::login(BIN, config, "qq", "bot", &[app_id, secret]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_checks_the_secret_and_the_owner_pairs_one_to_one() {
    let fake_config = fake_config();
    let fake = FakeQq::start(fake_config.clone()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), fake.base_url(), "");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));

    // A secret QQ does not know is refused, and nothing is stored.
    let (ok, said) = login(&config.path, &fake_config.app_id, "not-the-secret").await;
    assert!(!ok, "{said}");
    assert!(said.contains("q.qq.com"), "{said}");
    assert!(creds.load(ACCOUNT).expect("read").is_none());

    let (ok, said) = login(&config.path, &fake_config.app_id, &fake_config.app_secret).await;
    assert!(ok, "{said}");
    assert!(said.contains(&fake_config.bot_name), "{said}");
    assert!(
        !said.contains(&fake_config.app_secret),
        "the secret is never printed"
    );
    let code = said
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| w.len() == 6)
        .expect("a pairing code")
        .to_string();
    let stored = creds.load(ACCOUNT).expect("read").expect("stored");
    assert_eq!(
        stored.get("app_id").map(|s| s.expose().to_string()),
        Some(fake_config.app_id.clone())
    );

    let agent = Arc::new(InstantAgent::default());
    let h = Harness::start_daemon(fake, dir, config, agent).await;
    h.wait_state(ComponentState::Connected).await;
    h.until("a live gateway socket", |f| f.live()).await;
    assert_eq!(h.health().user_id, None, "nobody paired yet");
    // The right code in a group pairs nobody (spec §3.3); a stranger's wrong code neither.
    h.fake.push_group_at(
        "GROUP00000000000000000000000003",
        "MEMBER0000000000000000000000003",
        &code,
    );
    h.fake
        .push_c2c("STRANGER000000000000000000000002", "000000");
    let pairing = h.fake.push_c2c(OWNER, &code);
    h.until_health("paired", |c| c.user_id.as_deref() == Some(OWNER))
        .await;
    h.until("the pairing notice", |f| !f.sent().is_empty())
        .await;
    let notice = &h.fake.sent()[0];
    assert_eq!(notice.to, format!("user:{OWNER}"));
    assert_eq!(notice.msg_id.as_deref(), Some(pairing.id.as_str()));
    h.fake.push_c2c(OWNER, "now me");
    h.until("the answer", |f| {
        f.sent().iter().any(|s| s.content == "echo: now me")
    })
    .await;
    h.settle().await;
    let stored = h
        .fake
        .sent()
        .iter()
        .filter(|s| s.to != format!("user:{OWNER}"))
        .count();
    assert_eq!(stored, 0, "nothing to the group or the stranger");
    let login = CredentialStore::Files(h.config.state_dir.join("credentials"))
        .load(ACCOUNT)
        .expect("read")
        .expect("stored");
    assert_eq!(login.owner(), Some(OWNER.to_string()));
    assert!(login.get("pairing_code").is_none(), "the code is spent");
    assert!(
        h.agent.prompts().iter().all(|p| !p.contains(&code)),
        "the code never reached the agent"
    );
    h.stop().await;
}
