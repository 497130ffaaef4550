//! Owner pairing: `login` stores a one-time code; the first private sender of it becomes the owner.

use crate::feishu_support;

use feishu_support::*;
use scv_bridge::adapters::feishu::FeishuSettings;
use scv_bridge::adapters::feishu::login::store_credentials;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::CredentialStore;
use scv_bridge::supervisor::unix_now;
use scv_feishu::fake::{FakeConfig, FakeFeishu};

/// Runs the login step against the fake, then starts the daemon; returns the code too.
async fn logged_in(table: &str) -> (Harness, Option<String>) {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &fake, table);
    let store = CredentialStore::Files(config.state_dir.join("credentials"));
    let settings = FeishuSettings {
        domain: Some(fake.base_url().to_string()),
        owner: table.contains("owner = ").then(|| OWNER.to_string()),
        ..FeishuSettings::default()
    };
    let creds = fake.credentials();
    let key = scv_bridge::config::AccountKey::new(scv_bridge::config::Channel::Feishu, "work");
    let out = store_credentials(
        &store,
        &key,
        &settings,
        &creds.app_id,
        creds.app_secret.expose(),
        unix_now(),
    )
    .await
    .expect("login verifies and stores");
    assert_eq!(out.bot_open_id, "ou_bot");
    let h = Harness::start_with(fake, dir, config, None, TestAgent::echo(), None).await;
    (h, out.code)
}

#[tokio::test]
async fn pairing_wrong_code_group_right_code_then_reuse_refused() {
    let (h, code) = logged_in("senders = \"owner\"\n").await;
    let code = code.expect("a code to pair with");
    h.wait_state(ComponentState::Connected).await;
    let health = h.health();
    assert_eq!(health.user_id, None);
    let note = health.error.unwrap_or_default();
    assert!(note.contains("no owner paired"), "{note}");

    // A wrong code: consumed, unanswered, nobody paired.
    let wrong = if code == "000000" { "111111" } else { "000000" };
    h.fake.push_p2p_text("ou_guess", wrong);
    // The right code in a group (even mentioning the bot) never pairs.
    h.fake.push_group_text("oc_team", OWNER, &code, true);
    h.until("both ACKs", |f| f.acks().len() == 2 && f.in_flight() == 0)
        .await;
    h.settle().await;
    assert_eq!(h.health().user_id, None);
    assert!(
        h.fake.sent().is_empty(),
        "no answer to either: {:?}",
        h.fake.sent()
    );
    // The wrong code is not answered, but it is counted with its reason.
    assert_eq!(h.health().dropped.get("pairing_wrong"), Some(&1));

    // The right code in a private chat pairs, and the new owner is told.
    h.fake.push_p2p_text(OWNER, &code);
    h.until_health("the owner", |c| c.user_id.as_deref() == Some(OWNER))
        .await;
    h.until("the announcement", |f| !f.sent().is_empty()).await;
    let told = h.texts_to(&p2p_chat(OWNER));
    assert_eq!(told.len(), 1);
    assert!(told[0].contains("owner"), "{told:?}");
    assert!(
        told[0].contains("配对成功"),
        "auto: both languages: {told:?}"
    );
    assert_eq!(h.health().error, None, "the no-owner note is gone");
    let stored = h.credentials.load(ACCOUNT).expect("load").expect("stored");
    assert_eq!(stored.get("owner_id").map(|s| s.expose()), Some(OWNER));
    assert!(stored.get("pairing_code").is_none(), "the code is spent");
    assert!(stored.get("app_secret").is_some());

    // The same code again, from someone else: refused, unanswered, owner unchanged.
    h.fake.push_p2p_text("ou_late", &code);
    // And the owner now talks to the agent.
    h.fake.push_p2p_text(OWNER, "hello");
    h.until("the echo", |f| f.sent().len() == 2).await;
    h.settle().await;
    assert_eq!(h.health().user_id.as_deref(), Some(OWNER));
    assert!(h.texts_to(&p2p_chat("ou_late")).is_empty());
    assert_eq!(h.texts_to(&p2p_chat(OWNER))[1], "echo: hello");
    assert_eq!(
        h.agent.turns(),
        1,
        "the code itself never reached the agent"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_pairing_notice_follows_the_language() {
    let (h, code) = logged_in("senders = \"owner\"\nlanguage = \"zh-CN\"\n").await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.push_p2p_text(OWNER, &code.expect("a code"));
    h.until("the announcement", |f| !f.sent().is_empty()).await;
    let told = h.texts_to(&p2p_chat(OWNER));
    assert_eq!(
        told,
        ["配对成功：你现在是这个机器人的主人，在这里发的消息会交给智能体处理。"]
    );
    h.stop().await;
}

#[tokio::test]
async fn no_owner_answers_nobody_and_says_why() {
    let mut setup = Setup::owned();
    setup.credentials = Some(good_credentials(&setup.fake));
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let note = h.health().error.unwrap_or_default();
    assert!(
        note.contains("no owner paired") && note.contains("scv-bridge login feishu work"),
        "{note}"
    );
    h.fake.push_p2p_text(OWNER, "hello?");
    h.until("the ACK", |f| f.acks().len() == 1).await;
    h.settle().await;
    assert!(h.fake.sent().is_empty());
    assert_eq!(h.agent.turns(), 0);
    h.stop().await;
}

#[tokio::test]
async fn a_configured_owner_needs_no_pairing() {
    let (h, code) = logged_in(&format!("senders = \"owner\"\nowner = \"{OWNER}\"\n")).await;
    assert_eq!(code, None);
    h.wait_state(ComponentState::Connected).await;
    assert_eq!(h.health().user_id.as_deref(), Some(OWNER));
    h.fake.push_p2p_text(OWNER, "hi");
    h.until("the echo", |f| !f.sent().is_empty()).await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: hi"]);
    h.stop().await;
}

#[tokio::test]
async fn app_owner_comes_from_the_application_api() {
    let mut setup = Setup::owned();
    setup.credentials = Some(good_credentials(&setup.fake));
    setup.table = "senders = \"owner\"\nowner = \"app_owner\"\n".into();
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    assert_eq!(h.health().user_id.as_deref(), Some(OWNER));
    h.fake.push_p2p_text(OWNER, "hi");
    h.until("the echo", |f| !f.sent().is_empty()).await;
    assert_eq!(h.texts_to(&p2p_chat(OWNER)), ["echo: hi"]);
    h.stop().await;
}

#[tokio::test]
async fn login_refuses_a_bad_secret_with_a_hint() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = CredentialStore::Files(dir.path().join("credentials"));
    let settings = FeishuSettings {
        domain: Some(fake.base_url().to_string()),
        ..FeishuSettings::default()
    };
    let key = scv_bridge::config::AccountKey::new(scv_bridge::config::Channel::Feishu, "work");
    let err = store_credentials(&store, &key, &settings, &fake.config().app_id, "nope", 0)
        .await
        .expect_err("refused");
    assert!(err.contains("app secret"), "{err}");
    assert!(!err.contains("nope"));
    assert_eq!(store.load(ACCOUNT).expect("load"), None, "nothing stored");
}
