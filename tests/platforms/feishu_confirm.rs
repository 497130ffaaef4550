//! Confirm questions on Feishu against the fake over real sockets: asked as a card in the
//! owner's chat, answered by a click or by text, and the card updated in place when the question
//! closes (answer, expiry, withdrawal), durably across a restart, with a new message when the
//! card cannot be updated. The questions' clock is manual; nothing sleeps for real seconds.

use crate::feishu_support;
use crate::process_support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use feishu_support::*;
use process_support::changes::{Changes, Tree};
use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::feishu::build;
use scv_bridge::agent::Agent;
use scv_bridge::config::AccountSpec;
use scv_bridge::confirm::{Clock, ConfirmService};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::{ComponentState, ConfirmInfo, ConfirmState};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_feishu::fake::{FakeConfig, FakeFeishu, SentRecord};
use scv_feishu::frame::FrameType;
use serde_json::json;

const SEC: Duration = Duration::from_secs(1);

struct Factory {
    ctx: PlatformParts,
    confirm: Arc<ConfirmService>,
}

impl ComponentFactory for Factory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        // The daemon's way: the port lends the confirm service as the button answerer.
        build(
            self.ctx
                .ports()
                .with_answers(self.confirm.clone())
                .port(spec),
        )
    }
}

/// One run of the daemon with a Feishu account whose questions follow `clock`.
struct Run {
    daemon: RunningDaemon,
    confirm: Arc<ConfirmService>,
    conversation: Arc<Conversation>,
    clock: Clock,
    /// The daemon's state directory, where its store is written.
    state_dir: std::path::PathBuf,
}

/// Starts the daemon over the state in `dir`; `table` adds lines to `[feishu.work]`.
async fn start(
    fake: &FakeFeishu,
    dir: &Path,
    table: &str,
    credentials: Credentials,
    clock: Clock,
) -> Run {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nnotify = \"{ACCOUNT}\"\n[feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\n{table}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
        fake.base_url(),
    );
    std::fs::write(&path, text).expect("write config");
    let config = scv_bridge::config::Config::load(&path).expect("config");
    let creds = CredentialStore::Files(config.state_dir.join("credentials"));
    creds.save(ACCOUNT, &credentials).expect("save");
    type Slot = Arc<Mutex<Option<(Arc<ConfirmService>, Arc<Conversation>)>>>;
    let slot: Slot = Arc::default();
    let (slot2, agent_config, clock2) = (slot.clone(), config.agent.clone(), clock.clone());
    let wire = move |c: &CredentialStore, s: &scv_bridge::store::Store, r: &Arc<_>| {
        let agent: Arc<dyn Agent> = TestAgent::echo();
        let (confirm, conversation) = daemon::confirm_and_pipeline(s, c, clock2, r, agent);
        *slot2.lock().expect("lock") = Some((confirm.clone(), conversation.clone()));
        let factory: Arc<dyn ComponentFactory> = Arc::new(Factory {
            ctx: PlatformParts {
                credentials: c.clone(),
                store: s.clone(),
                conversation: conversation.clone(),
                agent: agent_config,
                mail: Default::default(),
            },
            confirm: confirm.clone(),
        });
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: Some(confirm),
        }
    };
    let state_dir = config.state_dir.clone();
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
    let (confirm, conversation) = slot.lock().expect("lock").clone().expect("wired");
    Run {
        daemon,
        confirm,
        conversation,
        clock,
        state_dir,
    }
}

impl Run {
    /// Asks "Deploy now?" with `timeout` seconds, waits for the card, and returns both once the
    /// service knows the card's message id.
    async fn ask(&self, fake: &FakeFeishu, timeout: u64) -> (ConfirmInfo, SentRecord) {
        let info = self
            .confirm
            .ask("Deploy now?", None, Some(timeout))
            .await
            .expect("asked");
        assert_eq!(info.state, ConfirmState::Pending, "{info:?}");
        assert!(
            fake.wait_until(WAIT, |f| !f.sent().is_empty()).await,
            "the card"
        );
        let card = fake.sent().remove(0);
        assert_eq!(card.msg_type, "interactive");
        assert_eq!(
            card.receive_id_type, "open_id",
            "the owner's chat by open_id"
        );
        // The service keeps the id in memory, then writes it to the store.
        let stored = self
            .until_stored(|| async {
                self.confirm
                    .view(&info.id)
                    .and_then(|v| v.message_id)
                    .is_some_and(|m| m == card.message_id)
            })
            .await;
        assert!(stored, "the card's message id is kept with the question");
        (info, card)
    }

    /// Where the item that shows question `id` closed stands in the outbox.
    async fn closing(&self, id: &str) -> Option<String> {
        self.conversation
            .delivery_state(&format!("confirm/{id}/closed"))
            .await
            .expect("outbox")
            .map(|d| d.as_str().to_string())
    }

    /// Waits until `cond` holds, at most [`WAIT`]; false if it never did. Checked again
    /// whenever the store's files are written (inotify): what `cond` reads is recorded there,
    /// or kept in memory just before that write, and nothing else tells that it was.
    async fn until_stored<F: std::future::Future<Output = bool>>(
        &self,
        mut cond: impl FnMut() -> F,
    ) -> bool {
        let store = Tree::watch(&self.state_dir);
        let ceiling = tokio::time::sleep(WAIT);
        tokio::pin!(ceiling);
        loop {
            // Armed before the check, so a write during it still wakes the wait.
            let change = store.change();
            if cond().await {
                return true;
            }
            tokio::select! {
                () = change => {}
                () = &mut ceiling => return false,
            }
        }
    }

    /// Whether the closing item of `id` left the outbox.
    async fn closing_sent(&self, id: &str) -> bool {
        self.until_stored(|| async { self.closing(id).await.as_deref() == Some("sent") })
            .await
    }

    async fn state(&self, id: &str) -> ConfirmState {
        self.confirm.status(id).await.expect("status").state
    }

    async fn stop(self) {
        let report = self.daemon.stop().await;
        assert!(report.abandoned.is_empty());
    }
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn owned() -> Credentials {
    good_credentials(&FakeConfig::fast()).with("owner_id", OWNER)
}

fn interactive(fake: &FakeFeishu) -> Vec<SentRecord> {
    fake.sent()
        .into_iter()
        .filter(|s| s.msg_type == "interactive")
        .collect()
}

/// Waits until card `message_id` shows `line` and no buttons.
async fn wait_resolved(fake: &FakeFeishu, message_id: &str, line: &str) {
    let resolved = fake
        .wait_until(WAIT, |f| {
            f.message_content(message_id)
                .is_some_and(|c| c.to_string().contains(line))
        })
        .await;
    let now = fake.message_content(message_id).expect("card");
    assert!(resolved, "the card says {line:?}: {now}");
    assert!(
        !now.to_string().contains("\"button\""),
        "buttons removed: {now}"
    );
}

#[tokio::test]
async fn owner_answers_a_confirm_question_with_a_click() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = start(&fake, dir.path(), "", owned(), Clock::tokio()).await;
    let (asked, card) = run.ask(&fake, 600).await;

    let click = fake.push_card_click(
        OWNER,
        &card.message_id,
        json!({"q": asked.id, "a": "yes"}),
        FrameType::Card,
    );
    let answered = fake
        .wait_until(WAIT, |f| {
            f.acks()
                .iter()
                .any(|a| a.event_id.as_deref() == Some(click.event_id.as_str()))
        })
        .await;
    assert!(answered, "the click is answered");
    let ack = fake
        .acks()
        .into_iter()
        .find(|a| a.event_id.as_deref() == Some(click.event_id.as_str()))
        .expect("ack");
    let data = ack.data.expect("a callback response");
    assert_eq!(data["toast"]["type"], "success", "{data}");
    wait_resolved(&fake, &card.message_id, "Approved").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::Yes);
    // The click's response already replaced the card: nothing else is queued or patched.
    assert_eq!(run.closing(&asked.id).await, None);
    assert_eq!(fake.patch_requests(), 0);
    assert_eq!(fake.sent().len(), 1);
    run.stop().await;
}

#[tokio::test]
async fn a_text_answer_updates_the_card_in_place() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = start(&fake, dir.path(), "", owned(), Clock::manual(wall_ms())).await;
    let (asked, card) = run.ask(&fake, 600).await;
    let code = run.confirm.view(&asked.id).expect("view").code;

    // The owner answers in the p2p chat the card landed in (`oc_…`, not the open_id it was sent to).
    fake.push_p2p_text(OWNER, "yes");
    wait_resolved(&fake, &card.message_id, "Approved").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::Yes);
    let reply = format!("Got it: yes ({code}).");
    assert!(
        fake.wait_until(WAIT, |_| {
            fake.sent()
                .iter()
                .any(|s| s.chat_id == p2p_chat(OWNER) && text_of(&s.content) == reply)
        })
        .await,
        "the text reply: {:?}",
        fake.sent()
    );
    assert!(
        fake.wait_until(WAIT, |f| f.patches().len() == 1).await,
        "one patch: {:?}",
        fake.patches()
    );
    assert_eq!(fake.patches()[0].message_id, card.message_id);
    assert!(
        run.closing_sent(&asked.id).await,
        "the update left the outbox"
    );
    assert_eq!(interactive(&fake).len(), 1, "no second card");
    assert_eq!(fake.sent().len(), 2, "the card and the text reply");
    run.stop().await;
}

#[tokio::test]
async fn expiry_updates_the_card_in_place() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = start(&fake, dir.path(), "", owned(), Clock::manual(wall_ms())).await;
    let (asked, card) = run.ask(&fake, 30).await;
    run.clock.advance(30 * SEC);
    assert_eq!(run.state(&asked.id).await, ConfirmState::Expired);
    wait_resolved(&fake, &card.message_id, "Expired at").await;
    assert_eq!(fake.patches().len(), 1);
    assert_eq!(fake.sent().len(), 1, "no new message");
    run.stop().await;
}

#[tokio::test]
async fn withdrawal_updates_the_card_in_place() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = start(&fake, dir.path(), "", owned(), Clock::manual(wall_ms())).await;
    let (asked, card) = run.ask(&fake, 600).await;
    // Nobody polls for a minute: the deadline loop withdraws it on its own.
    run.clock.advance(60 * SEC);
    wait_resolved(&fake, &card.message_id, "Withdrawn").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::Withdrawn);
    assert_eq!(fake.patches().len(), 1);
    assert_eq!(fake.sent().len(), 1, "no new message");
    run.stop().await;
}

#[tokio::test]
async fn a_restart_between_closing_and_patching_patches_once() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = start(&fake, dir.path(), "", owned(), Clock::manual(wall_ms())).await;
    let (asked, card) = run.ask(&fake, 30).await;
    // Feishu fails every patch (HTTP 500) until the daemon has stopped.
    fake.fail_next_patches(usize::MAX);
    run.clock.advance(30 * SEC);
    assert_eq!(run.state(&asked.id).await, ConfirmState::Expired);
    assert!(fake.wait_until(WAIT, |f| f.patch_requests() >= 1).await);
    let now = run.clock.now_ms();
    run.stop().await;
    assert!(fake.patches().is_empty());
    assert_eq!(
        run_closing_after_restart(&fake, dir.path(), now, &asked.id).await,
        "sent"
    );
    assert_eq!(fake.patches().len(), 1, "patched exactly once");
    assert_eq!(fake.patches()[0].message_id, card.message_id);
    wait_resolved(&fake, &card.message_id, "Expired at").await;
    assert_eq!(fake.sent().len(), 1, "no new message, no second question");
}

/// Starts the daemon again at `now_ms`, waits for the closing update of `id` to leave the
/// outbox, and returns its state after stopping.
async fn run_closing_after_restart(fake: &FakeFeishu, dir: &Path, now_ms: u64, id: &str) -> String {
    fake.fail_next_patches(0);
    let run = start(fake, dir, "", owned(), Clock::manual(now_ms)).await;
    run.closing_sent(id).await;
    let state = run.closing(id).await;
    assert_eq!(
        run.state(id).await,
        ConfirmState::Expired,
        "still expired after the restart"
    );
    run.stop().await;
    state.unwrap_or_default()
}

#[tokio::test]
async fn a_card_that_cannot_be_patched_gets_a_new_closing_message() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = start(&fake, dir.path(), "", owned(), Clock::manual(wall_ms())).await;
    let (asked, card) = run.ask(&fake, 30).await;
    fake.recall_message(&card.message_id);
    run.clock.advance(30 * SEC);
    assert_eq!(run.state(&asked.id).await, ConfirmState::Expired);
    assert!(
        fake.wait_until(WAIT, |f| f.sent().len() == 2).await,
        "a new message: {:?}",
        fake.sent()
    );
    let notice = fake.sent().remove(1);
    assert_eq!(notice.msg_type, "interactive", "the resolved card");
    assert_eq!(notice.receive_id, OWNER);
    assert!(
        notice.content.to_string().contains("Expired at"),
        "{}",
        notice.content
    );
    assert_eq!(fake.patch_requests(), 1, "tried once, refused for good");
    assert!(fake.patches().is_empty());
    run.stop().await;
}

#[tokio::test]
async fn a_configured_owner_without_a_stored_one_is_asked_and_answers() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    // `owner` in the configuration; the stored credentials name nobody.
    let creds = good_credentials(&FakeConfig::fast());
    let table = format!("owner = \"{OWNER}\"\n");
    let run = start(&fake, dir.path(), &table, creds, Clock::manual(wall_ms())).await;
    let (asked, card) = run.ask(&fake, 600).await;
    assert_eq!(asked.chat, ACCOUNT);
    assert_eq!(card.receive_id, OWNER);
    let code = run.confirm.view(&asked.id).expect("view").code;

    // A stranger's answer does not count; the owner's does.
    fake.push_p2p_text("ou_stranger", &format!("y {code}"));
    fake.push_p2p_text(OWNER, &format!("n {code}"));
    wait_resolved(&fake, &card.message_id, "Declined").await;
    assert_eq!(run.state(&asked.id).await, ConfirmState::No);
    run.stop().await;
}
