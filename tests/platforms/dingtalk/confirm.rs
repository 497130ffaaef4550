//! Confirm questions end to end against the fake, over real sockets, with the daemon's own
//! wiring (the confirm service as the pipeline's answer interceptor and the port's button
//! answerer): with a question card template configured, a question goes on a card with
//! callback buttons (spec §4.7 B); only the owner's press counts (staff id in the robot's
//! corp), once, and the ACK updates the card to say how the question ended. A typed "y CODE"
//! answers it too, and an expiry closes it, each updating the card in place; a refused card
//! leaves the question to the links that need no template, where a typed answer's reply says
//! it all and an expiry comes as a notice.

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
/// `table` lines, an echo agent, the questions on `clock`.
async fn start(table: &str) -> Run {
    start_on(table, Clock::tokio()).await
}

async fn start_on(table: &str, clock: Clock) -> Run {
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
        let (confirm, conversation) = daemon::confirm_and_pipeline(s, c, clock, r, agent);
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

    /// Waits until `card` says `said` (in English first: the account's language is `auto`).
    async fn until_answered(&self, card: &CardRecord, said: &str) {
        self.until(&format!("the card saying {said:?}"), |f| {
            f.card(&card.out_track_id).is_some_and(|c| {
                c.params["answered"]
                    .as_str()
                    .is_some_and(|a| a.starts_with(said))
            })
        })
        .await;
    }

    /// Waits until the service knows question `id` went out (before that, its deadline
    /// finds it undelivered); checked at each change of the fake (pings come every 200 ms).
    async fn until_delivered(&self, id: &str) {
        let confirm = self.confirm.clone();
        self.until("the question known as delivered", move |_| {
            confirm.view(id).and_then(|v| v.message_id).is_some()
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
    // The card shows it in place (its buttons hide), with no other message.
    run.until_answered(&card, "✅ Approved").await;
    assert_eq!(run.fake.calls(Call::CardUpdate), 1);
    // A press after the typed answer changes nothing.
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
async fn an_expired_question_card_says_so_in_place() {
    let clock = Clock::manual(wall_ms());
    let run = start_on(&templated(), clock.clone()).await;
    run.owner_writes().await;
    let sent = run.fake.sent().len();
    let info = run
        .confirm
        .ask("Deploy now?", None, Some(30))
        .await
        .expect("asked");
    let card = run.card().await;
    run.until_delivered(&info.id).await;
    clock.advance(std::time::Duration::from_secs(30));
    assert_eq!(run.state(&info.id).await, ConfirmState::Expired);
    run.until_answered(&card, "⌛ Expired").await;
    assert_eq!(run.fake.sent().len(), sent, "no notice beside the card");
    run.stop().await;
}

#[tokio::test]
async fn with_links_a_typed_answer_adds_only_its_reply_and_an_expiry_a_notice() {
    let clock = Clock::manual(wall_ms());
    let run = start_on("", clock.clone()).await;
    run.owner_writes().await;
    let before = run.fake.sent().len();
    let (asked, code) = run.ask().await;
    run.until("the question with links", |f| f.sent().len() > before)
        .await;
    run.fake.push_text(&run.owner(), &format!("n {code}"));
    run.until("the reply", |f| f.sent().len() > before + 1)
        .await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::No);
    let expiring = run
        .confirm
        .ask("Restart now?", None, Some(30))
        .await
        .expect("asked");
    run.until("the second question", |f| f.sent().len() > before + 2)
        .await;
    run.until_delivered(&expiring.id).await;
    clock.advance(std::time::Duration::from_secs(30));
    assert_eq!(run.state(&expiring.id).await, ConfirmState::Expired);
    run.until("the expiry notice", |f| f.sent().len() > before + 3)
        .await;
    let texts: Vec<String> = run.fake.sent()[before..].iter().map(text_of).collect();
    assert_eq!(
        texts.len(),
        4,
        "question, reply, question, notice: {texts:?}"
    );
    assert_eq!(texts[1], format!("Got it: no ({code})."));
    assert_eq!(run.fake.calls(Call::CardUpdate), 0);
    run.stop().await;
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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
