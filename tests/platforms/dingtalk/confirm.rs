//! Confirm questions end to end against the fake, over real sockets, with the daemon's own
//! wiring (the confirm service as the pipeline's answer interceptor and the port's button
//! answerer): with a question card template configured, a question goes on a card with
//! callback buttons (spec §4.7 B); only the owner's press counts (staff id in the robot's
//! corp), once, and the ACK updates the card to say how the question ended. A typed "y CODE"
//! answers it too; a refused card leaves the question to the links that need no template.

use std::sync::{Arc, Mutex};

use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::Agent;
use scv_bridge::confirm::{Clock, ConfirmService};
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::{ComponentState, ConfirmInfo, ConfirmState};
use scv_bridge::secrets::CredentialStore;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_dingtalk::Call;
use scv_dingtalk::fake::{CardRecord, FakeConfig, FakeDingTalk, Fault};
use serde_json::json;

use super::support::*;

/// The question card template the fake knows.
const TEMPLATE: &str = "fake-question-card.schema";

/// The fake with the question template beside its AI-card one.
fn fake_with_template() -> FakeConfig {
    let mut c = fake_config();
    c.card_templates
        .push((TEMPLATE.into(), vec!["question".into(), "answered".into()]));
    c
}

struct Run {
    fake: FakeDingTalk,
    daemon: RunningDaemon,
    confirm: Arc<ConfirmService>,
    _dir: tempfile::TempDir,
}

/// The daemon as `run` wires it, one owner-only DingTalk account (`notify` names it) with
/// `table` lines, an echo agent.
async fn start(table: &str) -> Run {
    let fake = FakeDingTalk::start(fake_with_template())
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    let owner = fake.config().staff[0].clone();
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nnotify = \"{ACCOUNT}\"\n[dingtalk.team]\napi_base = \"{base}\"\noapi_base = \"{base}\"\nsenders = \"owner\"\nowner = \"{owner}\"\n{table}",
        dir.path().join("state").display(),
        dir.path().join("run").join("daemon.sock").display(),
        base = fake.base_url(),
    );
    std::fs::write(&path, text).expect("write config");
    let config = scv_bridge::config::Config::load(&path).expect("config");
    CredentialStore::Files(config.state_dir.join("credentials"))
        .save(ACCOUNT, &login(fake.config()))
        .expect("save");
    let slot: Arc<Mutex<Option<Arc<ConfirmService>>>> = Arc::default();
    let (slot2, agent_config) = (slot.clone(), config.agent.clone());
    let wire = move |c: &CredentialStore, s: &scv_bridge::store::Store, r: &Arc<_>| {
        let agent: Arc<dyn Agent> = TestAgent::echo();
        let (confirm, conversation) = daemon::confirm_and_pipeline(s, c, Clock::tokio(), r, agent);
        *slot2.lock().expect("lock") = Some(confirm.clone());
        let parts = PlatformParts {
            credentials: c.clone(),
            store: s.clone(),
            conversation: conversation.clone(),
            agent: agent_config,
            mail: Default::default(),
        };
        let factory: Arc<dyn ComponentFactory> =
            PlatformFactory::with_answers(parts, confirm.clone());
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: Some(confirm),
        }
    };
    let daemon = daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .expect("daemon");
    let waited = tokio::time::timeout(
        WAIT,
        scv_bridge::testing::wait_for_state(
            &daemon.core.registry(),
            ACCOUNT,
            ComponentState::Connected,
        ),
    )
    .await;
    assert!(waited.is_ok(), "connected");
    assert!(
        fake.wait_until(WAIT, |f| f.deliverable_connections() == 1)
            .await,
        "a socket taking pushes"
    );
    let confirm = slot.lock().expect("lock").clone().expect("wired");
    Run {
        fake,
        daemon,
        confirm,
        _dir: dir,
    }
}

impl Run {
    fn owner(&self) -> String {
        self.fake.config().staff[0].clone()
    }

    async fn until(&self, what: &str, cond: impl Fn(&FakeDingTalk) -> bool) {
        assert!(
            self.fake.wait_until(WAIT, cond).await,
            "timed out waiting for {what}: sent {:?}, cards {:?}",
            self.fake.sent().iter().map(text_of).collect::<Vec<_>>(),
            self.fake.cards()
        );
    }

    /// The owner writes once (so the robot knows its corp) and gets the echo.
    async fn owner_writes(&self) {
        let before = self.fake.sent().len();
        self.fake.push_text(&self.owner(), "hi");
        self.until("the echo", |f| f.sent().len() > before).await;
    }

    /// Asks "Deploy now?" and returns it with its code.
    async fn ask(&self) -> (ConfirmInfo, String) {
        let info = self
            .confirm
            .ask("Deploy now?", None, Some(600))
            .await
            .expect("asked");
        assert_eq!(info.state, ConfirmState::Pending, "{info:?}");
        let code = self.confirm.view(&info.id).expect("view").code;
        (info, code)
    }

    /// Waits for the question's card.
    async fn card(&self) -> CardRecord {
        self.until("the question card", |f| {
            f.cards().iter().any(|c| c.template_id == TEMPLATE)
        })
        .await;
        self.fake
            .cards()
            .into_iter()
            .find(|c| c.template_id == TEMPLATE)
            .expect("card")
    }

    /// Presses `answer` on `card` as `staff` and waits for the press's ACK.
    async fn press(&self, card: &CardRecord, staff: &str, answer: &str) {
        let p = self
            .fake
            .click_card(&card.out_track_id, staff, json!({"answer": answer}));
        let id = p.push.message_id;
        self.until("the press's ACK", |f| {
            f.acks().iter().any(|a| a.message_id == id)
        })
        .await;
    }

    fn answered(&self, card: &CardRecord) -> String {
        let now = self.fake.card(&card.out_track_id).expect("card");
        now.params["answered"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    async fn state(&self, id: &str) -> ConfirmState {
        self.confirm.status(id).await.expect("status").state
    }

    async fn stop(self) {
        let report = self.daemon.stop().await;
        assert!(report.abandoned.is_empty(), "{:?}", report.abandoned);
    }
}

fn templated() -> String {
    format!("question_card_template_id = \"{TEMPLATE}\"\n")
}

#[tokio::test]
async fn the_owners_press_on_the_question_card_answers_it_once_and_the_card_says_so() {
    let run = start(&templated()).await;
    run.owner_writes().await;
    let sent = run.fake.sent().len();
    let (asked, code) = run.ask().await;
    let card = run.card().await;
    let owner = run.owner();
    assert!(
        card.open_space_id.ends_with(&format!("IM_ROBOT.{owner}")),
        "{}",
        card.open_space_id
    );
    let question = card.params["question"].as_str().unwrap_or_default();
    assert!(
        question.contains("Deploy now?") && question.contains(&code),
        "the question with its code, for a typed answer: {question}"
    );
    assert_eq!(run.answered(&card), "", "open");

    // Someone else's press changes nothing.
    let stranger = run.fake.config().staff[1].clone();
    run.press(&card, &stranger, "yes").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::Pending);
    assert_eq!(run.answered(&card), "");

    // The owner's counts, and the ACK says how it ended; a second press changes nothing.
    run.press(&card, &owner, "no").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::No);
    assert!(
        run.answered(&card).starts_with("❌ Declined"),
        "{}",
        run.answered(&card)
    );
    run.press(&card, &owner, "yes").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::No);
    assert!(
        run.answered(&card).starts_with("❌ Declined"),
        "{}",
        run.answered(&card)
    );
    assert_eq!(
        run.fake.sent().len(),
        sent,
        "no other message: the card says it"
    );
    run.stop().await;
}

#[tokio::test]
async fn a_typed_answer_with_the_code_answers_the_card_question() {
    let run = start(&templated()).await;
    run.owner_writes().await;
    let (asked, code) = run.ask().await;
    let card = run.card().await;
    let owner = run.owner();
    run.fake.push_text(&owner, &format!("y {code}"));
    let reply = format!("Got it: yes ({code}).");
    run.until("the text reply", |f| {
        f.sent().iter().any(|s| text_of(s) == reply)
    })
    .await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::Yes);
    // A press after the typed answer only shows how it ended.
    run.press(&card, &owner, "no").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::Yes);
    assert!(
        run.answered(&card).starts_with("✅ Approved"),
        "{}",
        run.answered(&card)
    );
    run.stop().await;
}

#[tokio::test]
async fn a_press_before_the_robot_knows_its_corp_does_not_count() {
    // Nobody wrote yet: a staff id without the robot's corp cannot be told from another
    // corp's same id, so the safe side ignores the press; a typed answer still works.
    let run = start(&templated()).await;
    let (asked, _) = run.ask().await;
    let card = run.card().await;
    run.press(&card, &run.owner(), "yes").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::Pending);
    assert_eq!(run.answered(&card), "");
    run.stop().await;
}

#[tokio::test]
async fn a_refused_question_card_leaves_the_question_to_the_links() {
    let run = start(&templated()).await;
    run.owner_writes().await;
    let before = run.fake.sent().len();
    run.fake.fail_next(Call::CardCreate, Fault::NotDelivered);
    let (_, code) = run.ask().await;
    run.until("the question with links", |f| f.sent().len() > before)
        .await;
    let md = text_of(&run.fake.sent()[before]);
    assert!(
        md.contains(&format!("content=yes%20{code}")),
        "the links that need no template: {md}"
    );
    assert_eq!(run.fake.calls(Call::CardCreate), 1);
    run.stop().await;
}

#[tokio::test]
async fn without_a_question_template_the_question_goes_with_links() {
    let run = start("").await;
    run.owner_writes().await;
    let before = run.fake.sent().len();
    let (_, code) = run.ask().await;
    run.until("the question with links", |f| f.sent().len() > before)
        .await;
    let md = text_of(&run.fake.sent()[before]);
    assert!(md.contains(&format!("content=no%20{code}")), "{md}");
    assert_eq!(run.fake.calls(Call::CardCreate), 0, "no card");
    run.stop().await;
}
