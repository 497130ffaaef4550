//! Sends begun and replies held, in one account's state: what an earlier run's record means,
//! what a failure forgets, what a chat's `/again` finds.

use super::*;
use crate::conversation::{OutboundKind, ReplyContext};
use crate::store::Store;

fn item(chat: &str, key: &str, text: &str) -> Outbound {
    Outbound {
        id: 1,
        account: crate::ids::AccountKey::parse("telegram:bot").expect("key"),
        chat: ChatId::new(chat),
        text: text.into(),
        idempotency_key: key.into(),
        reply: ReplyContext::default(),
        latest_reply: ReplyContext::default(),
        kind: OutboundKind::Reply,
        body: Body::Text,
        target: None,
        finishes: None,
    }
}

fn sends() -> (HeldSends, crate::store::StoreGuard) {
    let (store, guard) = Store::open_in_memory().expect("store");
    (
        HeldSends::new(AccountState::new(store, "telegram:bot")),
        guard,
    )
}

#[test]
fn only_the_bare_command_asks_again() {
    for yes in ["/again", " /again\n", "/AGAIN"] {
        assert!(is_again(yes), "{yes:?}");
    }
    for no in ["/again please", "again", "do it /again", ""] {
        assert!(!is_again(no), "{no:?}");
    }
}

#[test]
fn the_note_quotes_the_reply_in_its_own_language_unless_one_is_set() {
    let zh = note(None, "好的，这是\n\n答案");
    assert!(zh.contains("“好的，这是 答案”"), "{zh}");
    let en = note(None, "Sure,   here\nit is");
    assert!(en.contains("\"Sure, here it is\""), "{en}");
    let set = note(Some(Lang::En), "好的");
    assert!(set.contains("\"好的\""), "{set}");
    let long = note(None, &"x".repeat(100));
    assert!(
        long.contains(&format!("\"{}…\"", "x".repeat(PREVIEW_CHARS))),
        "{long}"
    );
}

#[tokio::test]
async fn a_second_attempt_passes_only_after_a_known_failure() {
    let (sends, _g) = sends();
    let msg = item("7", "k1", "hello");
    let first = sends.attempt(&msg);
    assert!(first.pass().await.expect("store"), "a fresh send goes");
    assert!(
        first.pass().await.expect("store"),
        "again within one attempt: still going"
    );
    first
        .settle(&Err::<(), _>(SendError::rejected(
            general::NETWORK,
            "refused",
        )))
        .await;

    let retry = sends.attempt(&msg);
    assert!(
        retry.pass().await.expect("store"),
        "a known failure forgot the record"
    );
    retry.outcome_unknown();
    retry
        .settle(&Err::<(), _>(SendError::transient(
            general::TIMEOUT,
            "no answer",
        )))
        .await;

    let after = sends.attempt(&msg);
    assert!(
        !after.pass().await.expect("store"),
        "an unknown outcome is held, not repeated"
    );
    assert!(after.begun_earlier());
}

#[tokio::test]
async fn a_success_keeps_the_record_so_a_crash_before_the_outbox_learns_holds_it() {
    let (sends, _g) = sends();
    let msg = item("7", "k1", "hello");
    let a = sends.attempt(&msg);
    assert!(a.pass().await.expect("store"));
    a.settle(&Ok::<(), SendError>(())).await;
    // The process dies here, before the outbox marks the item sent; the next run retries it.
    let next = sends.attempt(&msg);
    assert!(!next.pass().await.expect("store"));
}

#[tokio::test]
async fn held_replies_are_kept_per_chat_oldest_first_with_their_file() {
    let (sends, _g) = sends();
    sends.hold(&item("7", "k2", "second")).await.expect("hold");
    let mut with_file = item("7", "k1", "[chart.png]");
    with_file.body = Body::Media(MediaOut {
        kind: crate::agent::MediaKind::Image,
        path: "/ws/chart.png".into(),
        name: "chart.png".into(),
    });
    sends.hold(&with_file).await.expect("hold");
    sends
        .hold(&item("8", "k3", "other chat"))
        .await
        .expect("hold");

    let held = sends.held_for(&ChatId::new("7")).await.expect("read");
    let keys: Vec<&str> = held.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["k1", "k2"], "same second: by key");
    assert_eq!(
        held[0].1.media.as_ref().map(|m| m.name.as_str()),
        Some("chart.png")
    );
    assert_eq!(held[1].1.text, "second");
    assert_eq!(
        sends.held_for(&ChatId::new("9")).await.expect("read"),
        vec![]
    );
}

#[tokio::test]
async fn prune_forgets_what_is_too_old_or_unreadable() {
    let (sends, _g) = sends();
    sends.hold(&item("7", "fresh", "kept")).await.expect("hold");
    let old = Held {
        chat: "7".into(),
        text: "old".into(),
        media: None,
        at: unix_now() - KEEP_HELD_SECS - 10,
    };
    sends
        .state
        .call(move |s| {
            s.put_json(&format!("{HELD}old"), &old)?;
            s.put(&format!("{HELD}junk"), "not json")?;
            s.put(&format!("{BEGUN}stale"), "12")?;
            s.put(&format!("{BEGUN}now"), &unix_now().to_string())
        })
        .await
        .expect("seed");
    sends.prune().await;
    let held = sends.held_for(&ChatId::new("7")).await.expect("read");
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].0, "fresh");
    let begun = sends.state.call(|s| s.scan(BEGUN)).await.expect("scan");
    let names: Vec<String> = begun.into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, [format!("{BEGUN}now")]);
}
