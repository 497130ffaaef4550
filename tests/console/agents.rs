//! The named agent form over real HTTP: an agent of any backend is checked before anything is
//! saved (a refused key, a command that is no program, a name taken: nothing written), its key
//! kept under its own name in the credential store and never in the file or the page, the
//! account's `agent` set, and the running daemon answering the account's next message with it,
//! without a restart and without the account reconnecting.

use scv_bridge::config::Config;
use scv_bridge::protocol::ComponentState;
use scv_bridge::secrets::CredentialStore;
use scv_bridge::testing::fake_openai::FakeOpenAi;

use crate::support::*;

/// Posts the form `fields` to `/setup/agents` with the session's cookie and the console's origin.
pub async fn post_agent(bed: &Bed, cookie: &str, fields: &[(&str, String)]) -> reqwest::Response {
    http()
        .post(format!("{}/setup/agents", bed.base()))
        .header("cookie", cookie)
        .header("content-type", FORM)
        .header("origin", bed.base())
        .body(form(fields))
        .send()
        .await
        .expect("post")
}

#[tokio::test]
async fn a_named_agent_is_checked_saved_and_answers_the_account_s_next_message() {
    let claude = FakeOpenAi::start().await.expect("claude's model");
    claude.require_key("sk-claude");
    let mut bed = Bed::start(Options {
        logged_in: true,
        ..Options::default()
    })
    .await;
    bed.wait_state(ComponentState::Connected).await;
    let since = bed.status().await.components[0].since_unix_seconds;
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
    let named = page
        .split("action=\"/setup/agents\"")
        .nth(1)
        .expect("the form");
    let named = named.split("</form>").next().expect("its end");
    assert!(
        named.contains(&format!("<option value=\"{ID}\">")),
        "{named}"
    );
    for kind in ["openai", "scv", "acp"] {
        assert!(
            named.contains(&format!("<option value=\"{kind}\">")),
            "{kind}"
        );
    }

    let before = std::fs::read_to_string(&bed.config_path).expect("file");
    let fields = |key: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("name", "claude".to_string()),
            ("backend", "openai".to_string()),
            ("base_url", claude.base_url()),
            ("model", "m-claude".to_string()),
            ("key", key.to_string()),
            ("timeout_seconds", "120".to_string()),
            ("account", ID.to_string()),
        ]
    };
    let no_token = post_agent(&bed, &cookie, &fields("sk-claude")[1..]).await;
    assert_eq!(no_token.status(), 403);
    let wrong = post_agent(&bed, &cookie, &fields("sk-wrong")).await;
    assert_eq!(wrong.status(), 400);
    assert!(
        wrong
            .text()
            .await
            .expect("text")
            .contains("refused the key")
    );
    let mut not_a_program = fields("");
    not_a_program[2].1 = "acp".to_string();
    not_a_program.push(("command", "/nonexistent/claude-agent-acp".to_string()));
    let refused = post_agent(&bed, &cookie, &not_a_program).await;
    assert_eq!(refused.status(), 400);
    let said = refused.text().await.expect("text");
    assert!(said.contains("not a program on this machine"), "{said}");
    let mut stranger = fields("sk-claude");
    stranger[7].1 = "wechat:nobody".to_string();
    let refused = post_agent(&bed, &cookie, &stranger).await;
    assert_eq!(refused.status(), 400);
    assert_eq!(
        std::fs::read_to_string(&bed.config_path).expect("file"),
        before,
        "nothing refused was saved"
    );

    let saved = post_agent(&bed, &cookie, &fields("sk-claude")).await;
    assert_eq!(saved.status(), 200);
    let said = saved.text().await.expect("text");
    assert!(
        said.contains("claude answers from the next message"),
        "{said}"
    );
    let text = std::fs::read_to_string(&bed.config_path).expect("file");
    assert!(
        !text.contains("sk-claude"),
        "the key never goes in the file"
    );
    let config = Config::load(&bed.config_path).expect("the written file loads");
    let agent = &config.agents["claude"];
    assert_eq!(agent.model.as_deref(), Some("m-claude"));
    assert_eq!(agent.timeout_seconds, Some(120));
    let key = scv_bridge::config::AccountKey::parse(ID).expect("key");
    assert_eq!(config.choices[&key].agent, "claude");
    let store = CredentialStore::Files(config.state_dir.join("credentials"));
    let stored = store.named_agent_key("claude").expect("readable");
    assert_eq!(stored.expect("stored").expose(), "sk-claude");
    let default = store.agent_key().expect("readable").expect("the model key");
    assert_eq!(default.expose(), MODEL_KEY, "[agent]'s key is untouched");
    let page = http()
        .get(format!("{}/", bed.base()))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("text");
    assert!(!page.contains("sk-claude"), "the key is never shown back");

    let again = post_agent(&bed, &cookie, &fields("sk-claude")).await;
    assert_eq!(again.status(), 409, "the name is taken");

    // The running daemon: claude's row in status, and the account's next message goes to it
    // with its own key; the account never reconnected.
    let status = bed.status().await;
    assert_eq!(status.agents["claude"].model.as_deref(), Some("m-claude"));
    let phone = bed.fake.handle();
    phone.push_text(OWNER, "hello claude");
    let answer = phone
        .wait_for_sent_where(0, PATIENCE, |m| m.text.contains("echo: hello claude"))
        .await;
    assert!(answer.is_some(), "answered: {:?}", phone.sent());
    let asked = claude.requests();
    assert_eq!(asked.len(), 1, "claude answered");
    assert_eq!(asked[0].authorization.as_deref(), Some("Bearer sk-claude"));
    assert_eq!(bed.status().await.components[0].since_unix_seconds, since);
    bed.stop().await;
}

#[tokio::test]
async fn an_acp_agent_is_saved_for_the_next_start() {
    let mut bed = Bed::start(Options::default()).await;
    let (cookie, csrf) = sign_in(&bed).await;
    let saved = post_agent(
        &bed,
        &cookie,
        &[
            ("csrf", csrf),
            ("name", "codex".to_string()),
            ("backend", "acp".to_string()),
            ("command", "sh".to_string()),
            ("key", "sk-codex".to_string()),
            ("key_env", "OPENAI_API_KEY".to_string()),
        ],
    )
    .await;
    assert_eq!(saved.status(), 200);
    let said = saved.text().await.expect("text");
    assert!(said.contains("restart"), "{said}");
    let config = Config::load(&bed.config_path).expect("loads");
    let codex = &config.agents["codex"];
    assert_eq!(codex.command.as_deref(), Some("sh"));
    assert_eq!(codex.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert!(
        !bed.status().await.agents.contains_key("codex"),
        "an acp agent starts with the daemon, not before"
    );
    bed.stop().await;
}
