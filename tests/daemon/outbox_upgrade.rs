//! Upgrading with work in the outbox: rows a release before typed bodies stored (a question card
//! and its update as raw Feishu card JSON in the `rich` column), left pending when that daemon
//! was killed, go out after the upgrade exactly as that release would have sent them.

use crate::feishu_support;

use std::os::unix::fs::PermissionsExt;

use feishu_support::*;
use scv_bridge::store::Store;
use scv_feishu::fake::{FakeConfig, FakeFeishu};
use serde_json::Value;

/// The question card the earlier release stored for `q-7` (the bytes it built, as pinned).
const OLD_QUESTION_CARD: &str = r#"{"body":{"elements":[{"content":"Deploy?","tag":"markdown"},{"content":"Answer before 14:30 (or reply Y 7F / N 7F).","tag":"markdown"},{"columns":[{"elements":[{"behaviors":[{"type":"callback","value":{"a":"yes","q":"q-7"}}],"tag":"button","text":{"content":"Yes","tag":"plain_text"},"type":"primary"}],"tag":"column"},{"elements":[{"behaviors":[{"type":"callback","value":{"a":"no","q":"q-7"}}],"tag":"button","text":{"content":"No","tag":"plain_text"},"type":"danger"}],"tag":"column"}],"tag":"column_set"}]},"config":{"update_multi":true},"header":{"template":"orange","title":{"content":"Confirm","tag":"plain_text"}},"schema":"2.0"}"#;

/// The resolved card the earlier release stored for the update of that question.
const OLD_RESOLVED_CARD: &str = r#"{"body":{"elements":[{"content":"Deploy?","tag":"markdown"},{"content":"⌛ Expired at 14:30 without an answer","tag":"markdown"}]},"config":{"update_multi":true},"header":{"template":"grey","title":{"content":"Confirm","tag":"plain_text"}},"schema":"2.0"}"#;

/// Writes the two outbox rows with the earlier release's SQL, as its daemon left them when it
/// was killed before sending either.
async fn store_as_the_old_release(state_dir: &std::path::Path) {
    std::fs::create_dir_all(state_dir).expect("state dir");
    std::fs::set_permissions(state_dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let (store, guard) = Store::open(&state_dir.join("state.db")).expect("store");
    store
        .call(|t| {
            t.execute(
                "INSERT OR IGNORE INTO outbox (account, chat, idem_key, text, rich, reply, kind, state, created_unix)
                 VALUES (?1, ?2, ?3, ?4, ?5, '', 'proactive', 'pending', 1)",
                (
                    ACCOUNT,
                    OWNER,
                    "confirm/q-7/ask/0",
                    "Deploy?\nReply Y 7F or N 7F before 14:30",
                    OLD_QUESTION_CARD,
                ),
            )?;
            t.execute(
                "INSERT OR IGNORE INTO outbox
                 (account, chat, idem_key, text, rich, reply, kind, state, created_unix, target_key)
                 VALUES (?1, ?2, ?3, ?4, ?5, '', 'update', 'pending', 2, ?6)",
                (
                    ACCOUNT,
                    OWNER,
                    "confirm/q-7/closed/0",
                    "No answer before the deadline, so it counts as no: “Deploy?” (7F).",
                    OLD_RESOLVED_CARD,
                    "confirm/q-7/ask/0",
                ),
            )?;
            Ok(())
        })
        .await
        .expect("insert");
    tokio::task::spawn_blocking(move || guard.close())
        .await
        .expect("close store");
}

#[tokio::test]
async fn cards_stored_by_the_release_before_typed_bodies_are_sent_and_updated_as_stored() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &fake, "senders = \"owner\"\n");
    store_as_the_old_release(&config.state_dir).await;
    let setup = Setup::owned();
    let h = Harness::start_with(fake, dir, config, setup.credentials, setup.agent, None).await;
    h.until("the card and its update", |f| {
        !f.sent().is_empty() && !f.patches().is_empty()
    })
    .await;
    let sent = h.fake.sent();
    assert_eq!(sent.len(), 1, "sent once: {sent:?}");
    assert_eq!(sent[0].msg_type, "interactive");
    let old: Value = serde_json::from_str(OLD_QUESTION_CARD).expect("json");
    assert_eq!(sent[0].content, old, "the card as the old release sent it");
    let patches = h.fake.patches();
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].message_id, sent[0].message_id, "the card itself");
    let resolved: Value = serde_json::from_str(OLD_RESOLVED_CARD).expect("json");
    assert_eq!(patches[0].card, resolved);
    h.settle().await;
    assert_eq!(h.fake.sent().len(), 1, "nothing else went out");
    h.stop().await;
}
