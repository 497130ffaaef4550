//! The fast lane's route is decided once, when a message is journaled, and stored with it: a
//! restart hands a journaled answer to the confirm service even when its question closed
//! meanwhile, instead of deciding again and giving the owner's "yes" to the agent.

use crate::confirm_support as support;

use std::path::Path;

use scv_bridge::store::Store;
use support::*;

/// The stored route of message `msg_id`.
async fn route_of(dir: &Path, msg_id: &str) -> Option<String> {
    let (store, guard) = Store::open(&dir.join("state.db")).expect("store");
    let id = msg_id.to_string();
    let route = store
        .call(move |t| {
            t.query_row(
                "SELECT fast_route FROM inbound_journal WHERE msg_id = ?1",
                [id],
                |r| r.get::<_, Option<String>>(0),
            )
        })
        .await
        .expect("query");
    tokio::task::spawn_blocking(move || guard.close())
        .await
        .expect("close");
    route
}

/// Journals the owner's `text` as this release journals a claimed answer, as a daemon killed
/// before handling it left it.
async fn journal_unhandled_answer(dir: &Path, msg_id: &str, text: &str) {
    let (store, guard) = Store::open(&dir.join("state.db")).expect("store");
    let (id, text) = (msg_id.to_string(), text.to_string());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    store
        .call(move |t| {
            t.execute(
                "INSERT INTO inbound_journal
                 (account, msg_id, chat, sender, text, at_unix_ms, reply, state, tools, journaled_unix, fast_route)
                 VALUES ('wechat:phone', ?1, ?2, ?2, ?3, 1, '', 'fast', 0, ?4, 'answer')",
                (id, OWNER, text, now),
            )
        })
        .await
        .expect("insert");
    tokio::task::spawn_blocking(move || guard.close())
        .await
        .expect("close");
}

#[tokio::test]
async fn accepted_messages_store_their_route() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    bed.svc.ask("Deploy?", None, None).await.expect("ask");
    bed.nth_sent(1).await;
    bed.say("a1", OWNER, "yes").await;
    bed.nth_sent(2).await;
    bed.say("c1", OWNER, "/help").await;
    bed.nth_sent(3).await;
    bed.say("m1", OWNER, "hello").await;
    assert_eq!(bed.nth_sent(4).await, "echo: hello");
    bed.shut().await;
    assert_eq!(route_of(dir.path(), "a1").await.as_deref(), Some("answer"));
    assert_eq!(route_of(dir.path(), "c1").await.as_deref(), Some("command"));
    assert_eq!(route_of(dir.path(), "m1").await, None);
}

#[tokio::test]
async fn an_answer_journaled_before_a_crash_stays_an_answer_after_its_question_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let info = bed.svc.ask("Deploy?", None, Some(600)).await.expect("ask");
    bed.nth_sent(1).await;
    bed.svc.withdraw(&info.id).await.expect("withdraw");
    bed.nth_sent(2).await;
    bed.shut().await;
    // The owner's "yes" was journaled (and claimed) while the question waited; the daemon died
    // before handling it. It restarts ten minutes later, long after the question closed.
    journal_unhandled_answer(dir.path(), "a1", "yes").await;
    let bed = Bed::open(dir.path(), T0_MS + 10 * 60_000, BedOptions::default()).await;
    let reply = bed.nth_sent(1).await;
    assert!(bed.agent.prompts().is_empty(), "{:?}", bed.agent.prompts());
    assert_eq!(reply, "There is no open question here.");
    bed.shut().await;
}
