//! The console's set-up forms over real HTTP: a chat of any platform added from the page is in
//! the file and running after the reload; a model is tested with its key before anything is
//! saved, and its key kept where `login agent` keeps it, never in the file; the running daemon
//! answers the next message with it, without a restart.

use scv_bridge::config::Config;
use scv_bridge::secrets::CredentialStore;
use scv_bridge::testing::fake_openai::FakeOpenAi;

use crate::support::*;

/// Posts `fields` to `path` with the session's cookie and the console's origin.
async fn post(bed: &Bed, cookie: &str, path: &str, fields: &[(&str, String)]) -> reqwest::Response {
    http()
        .post(format!("{}{path}", bed.base()))
        .header("cookie", cookie)
        .header("content-type", FORM)
        .header("origin", bed.base())
        .body(form(fields))
        .send()
        .await
        .expect("post")
}

#[tokio::test]
async fn a_chat_added_from_the_page_is_written_and_running() {
    let mut bed = Bed::start(Options::default()).await;
    let (cookie, csrf) = sign_in(&bed).await;
    let page = http()
        .get(format!("{}/", bed.base()))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("text");
    assert!(
        page.contains("data-channel=\"telegram\""),
        "every chat platform is offered"
    );
    assert!(
        !page.contains("data-channel=\"mail\""),
        "mail is set up by its own questions"
    );
    let add = |channel: &str, name: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("channel", channel.to_string()),
            ("name", name.to_string()),
        ]
    };
    let no_token = post(&bed, &cookie, "/setup/chat", &add("telegram", "bot")[1..]).await;
    assert_eq!(no_token.status(), 403);
    let added = post(&bed, &cookie, "/setup/chat", &add("telegram", "bot")).await;
    assert_eq!(added.status(), 303, "{:?}", added.text().await);
    let config = Config::load(&bed.config_path).expect("the written file loads");
    let key = scv_bridge::config::AccountKey::parse("telegram:bot").expect("key");
    assert!(config.accounts.contains_key(&key));
    assert!(
        bed.daemon()
            .core
            .status()
            .components
            .iter()
            .any(|c| c.id == "telegram:bot"),
        "running after the reload"
    );
    let again = post(&bed, &cookie, "/setup/chat", &add("telegram", "bot")).await;
    assert_eq!(again.status(), 409);
    for (channel, name) in [("mail", "box"), ("telegram", "no spaces")] {
        let refused = post(&bed, &cookie, "/setup/chat", &add(channel, name)).await;
        assert_eq!(refused.status(), 400, "{channel}:{name}");
    }
    // A choice not offered is refused, and nothing is written.
    let before = std::fs::read_to_string(&bed.config_path).expect("file");
    let mut moon = add("feishu", "work");
    moon.push(("q_domain", "moon".to_string()));
    let refused = post(&bed, &cookie, "/setup/chat", &moon).await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.expect("text").contains("domain"));
    assert_eq!(
        std::fs::read_to_string(&bed.config_path).expect("file"),
        before
    );
    bed.stop().await;
}

#[tokio::test]
async fn a_model_is_tested_with_its_key_before_it_is_saved_and_answers_at_once() {
    let fake = FakeOpenAi::start().await.expect("fake");
    fake.require_key("sk-right");
    let mut bed = Bed::start(Options {
        logged_in: true,
        ..Options::default()
    })
    .await;
    bed.wait_state(scv_bridge::protocol::ComponentState::Connected)
        .await;
    let (cookie, csrf) = sign_in(&bed).await;
    let before = std::fs::read_to_string(&bed.config_path).expect("file");
    let model = |key: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("base_url", fake.base_url()),
            ("model", "qwen-local".to_string()),
            ("key", key.to_string()),
        ]
    };
    let wrong = post(&bed, &cookie, "/setup/agent", &model("sk-wrong")).await;
    assert_eq!(wrong.status(), 400);
    assert!(
        wrong
            .text()
            .await
            .expect("text")
            .contains("refused the key")
    );
    assert_eq!(
        std::fs::read_to_string(&bed.config_path).expect("file"),
        before
    );
    let right = post(&bed, &cookie, "/setup/agent", &model("sk-right")).await;
    assert_eq!(right.status(), 200);
    let said = right.text().await.expect("text");
    assert!(said.contains("next message"), "{said}");
    let text = std::fs::read_to_string(&bed.config_path).expect("file");
    assert!(!text.contains("sk-right"), "the key never goes in the file");
    let config = Config::load(&bed.config_path).expect("loads");
    assert_eq!(config.agent.model.as_deref(), Some("qwen-local"));
    assert_eq!(
        config.agent.base_url.as_deref(),
        Some(fake.base_url().as_str())
    );
    let store = CredentialStore::Files(config.state_dir.join("credentials"));
    let stored = store.agent_key().expect("readable").expect("stored");
    assert_eq!(stored.expose(), "sk-right");

    // No restart: the running daemon answers the next message with the saved model.
    let agent = bed.status().await.agent.expect("an agent row");
    assert_eq!(agent.model.as_deref(), Some("qwen-local"));
    let phone = bed.fake.handle();
    phone.push_text(OWNER, "hello after the form");
    let answer = phone
        .wait_for_sent_where(0, PATIENCE, |m| {
            m.text.contains("echo: hello after the form")
        })
        .await;
    assert!(answer.is_some(), "answered: {:?}", phone.sent());
    let asked = fake.requests();
    assert!(
        !asked.is_empty() && asked.iter().all(|r| r.model == "qwen-local"),
        "the new endpoint answered"
    );
    bed.stop().await;
}

/// A model saved while a turn is under way: that turn finishes on the old endpoint, the next
/// message goes to the new one.
#[tokio::test]
async fn a_turn_under_way_finishes_on_the_model_it_started_with() {
    let (old, new) = (
        FakeOpenAi::start().await.expect("fake"),
        FakeOpenAi::start().await.expect("fake"),
    );
    let mut bed = Bed::start(Options {
        logged_in: true,
        ..Options::default()
    })
    .await;
    bed.wait_state(scv_bridge::protocol::ComponentState::Connected)
        .await;
    let (cookie, csrf) = sign_in(&bed).await;
    let save = |fake: &FakeOpenAi, model: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("base_url", fake.base_url()),
            ("model", model.to_string()),
        ]
    };
    let saved = post(&bed, &cookie, "/setup/agent", &save(&old, "old-model")).await;
    assert_eq!(saved.status(), 200);
    old.answer_only(Some(0));
    let asked = old.changed();
    let phone = bed.fake.handle();
    phone.push_text(OWNER, "first");
    within(asked, "the old endpoint asked").await;

    let saved = post(&bed, &cookie, "/setup/agent", &save(&new, "new-model")).await;
    assert_eq!(saved.status(), 200);
    phone.push_text(OWNER, "second");
    old.answer_only(None);
    for text in ["echo: first", "echo: second"] {
        let got = phone
            .wait_for_sent_where(0, PATIENCE, |m| m.text.contains(text))
            .await;
        assert!(got.is_some(), "{text}: {:?}", phone.sent());
    }
    let last = |fake: &FakeOpenAi| -> Vec<String> {
        fake.requests()
            .iter()
            .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
            .collect()
    };
    let (old_asked, new_asked) = (last(&old), last(&new));
    assert!(
        old_asked.len() == 1 && old_asked[0].contains("first"),
        "the turn under way stayed on the old model: {old_asked:?}"
    );
    assert!(
        !new_asked.is_empty() && new_asked.iter().all(|t| t.contains("second")),
        "the next message went to the new model: {new_asked:?}"
    );
    bed.stop().await;
}

#[tokio::test]
async fn a_speech_server_is_tested_before_it_is_saved_and_then_in_use() {
    let speech = scv_bridge::testing::fake_speech::FakeSpeech::start()
        .await
        .expect("fake speech");
    let bed = Bed::start(Options::default()).await;
    let (cookie, csrf) = sign_in(&bed).await;
    let before = std::fs::read_to_string(&bed.config_path).expect("file");
    let fields = |model: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("base_url", speech.base_url()),
            ("model", model.to_string()),
        ]
    };
    speech.mode(scv_bridge::testing::fake_speech::Mode::Speaches(vec![
        "Systran/faster-whisper-small".into(),
    ]));
    let wrong = post(&bed, &cookie, "/setup/speech", &fields("whisper-1")).await;
    assert_eq!(wrong.status(), 400);
    let said = wrong.text().await.expect("text");
    assert!(said.contains("does not know the model"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&bed.config_path).expect("file"),
        before,
        "nothing saved"
    );
    let right = post(
        &bed,
        &cookie,
        "/setup/speech",
        &fields("Systran/faster-whisper-small"),
    )
    .await;
    assert_eq!(right.status(), 200);
    assert!(
        right
            .text()
            .await
            .expect("text")
            .contains("next voice note")
    );
    let config = Config::load(&bed.config_path).expect("loads");
    assert_eq!(
        config.speech.base_url.as_deref(),
        Some(speech.base_url().as_str())
    );
    assert_eq!(
        config.speech.model.as_deref(),
        Some("Systran/faster-whisper-small")
    );
    let row = bed.status().await.speech.expect("a speech row");
    assert_eq!(row.model.as_deref(), Some("Systran/faster-whisper-small"));
}
