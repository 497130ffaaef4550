//! Long polling: holding, journal-then-confirm, restarts, conflicts, expiry, hostile updates.

use std::time::Duration;

use bytes::Bytes;
use scv_telegram::fake::{FakeConfig, Fault};
use scv_telegram::update::ALLOWED_UPDATES;
use scv_telegram::{Client, ErrorClass, FatalReason, Method, Offset, UpdateKind};
use serde_json::json;

use crate::{PROMPTLY, start, start_with};

#[tokio::test(start_paused = true)]
async fn a_long_poll_hangs_until_a_message_is_pushed() {
    let (_fake, handle, client) = start_with(FakeConfig::default(), 30).await;
    let started = tokio::time::Instant::now();
    let poll = tokio::spawn({
        let client = client.clone();
        async move { client.get_updates(Offset::START).await }
    });
    assert!(
        handle
            .wait_until(PROMPTLY, |h| h.polls_in_flight() == 1)
            .await
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(!poll.is_finished(), "held while nothing is queued");
    let pushed = handle.push_text(handle.owner_chat(), "hello bot");
    let batch = poll.await.expect("joins").expect("poll");
    assert!(started.elapsed() >= Duration::from_secs(10));
    assert_eq!(batch.updates.len(), 1);
    assert_eq!(batch.updates[0].message(), Some(&pushed));
    assert_eq!(pushed.body().as_deref(), Some("hello bot"));
    // The kinds the bridge needs are always asked for (an omitted list would keep another's).
    let asked = handle.allowed_updates().expect("sent");
    assert_eq!(asked, ALLOWED_UPDATES.map(str::to_owned).to_vec());
}

#[tokio::test(start_paused = true)]
async fn an_idle_poll_ends_empty_after_the_poll_time() {
    let (_fake, _handle, client) = start_with(FakeConfig::default(), 25).await;
    let started = tokio::time::Instant::now();
    let batch = client.get_updates(Offset::START).await.expect("empty poll");
    assert!(batch.is_empty());
    assert_eq!(started.elapsed(), Duration::from_secs(25));
    assert_eq!(
        batch.next_offset(Offset::new(7)),
        Offset::new(7),
        "nothing moves"
    );
}

/// The cursor protocol: a batch stays on the server until a later poll carries its offset, so
/// a client that dies before persisting gets it again, and one that persisted does not.
#[tokio::test(start_paused = true)]
async fn a_batch_is_confirmed_only_by_the_next_offset_and_a_restart_resumes() {
    let (fake, handle, client) = start().await;
    let a = handle.push_text(handle.owner_chat(), "one");
    let b = handle.push_text(handle.owner_chat(), "two");
    let first = client.get_updates(Offset::START).await.expect("poll");
    assert_eq!(first.updates.len(), 2);
    assert_eq!(handle.pending(), 2, "delivered is not confirmed");
    // Killed before journaling: a new client with the old stored offset gets both again.
    let restarted = Client::new(&fake.base_url(), handle.token()).expect("url");
    let again = restarted.get_updates(Offset::START).await.expect("poll");
    let ids = |b: &scv_telegram::Batch| b.updates.iter().map(|u| u.update_id).collect::<Vec<_>>();
    assert_eq!(
        ids(&again),
        ids(&first),
        "replayed, same ids: the journal dedupes on them"
    );
    assert_eq!(again.updates[0].dedupe_key(), first.updates[0].dedupe_key());
    assert_eq!(
        again.updates[1].message().map(|m| m.dedupe_key()),
        Some(b.dedupe_key())
    );
    // Journaled, offset stored: the next poll confirms both and they never come back.
    let stored = again.next_offset(Offset::START);
    assert_eq!(stored.get(), again.updates[1].update_id + 1);
    let c = handle.push_text(handle.owner_chat(), "three");
    let next = restarted.get_updates(stored).await.expect("poll");
    assert_eq!(next.updates.len(), 1);
    assert_eq!(next.updates[0].message(), Some(&c));
    assert_ne!(a.dedupe_key(), c.dedupe_key());
    // On shutdown the persisted offset is told to the server without waiting.
    client
        .confirm(next.next_offset(stored))
        .await
        .expect("confirm");
    assert_eq!(handle.pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_negative_stored_offset_never_reaches_the_server() {
    let (_fake, handle, client) = start().await;
    for t in ["a", "b", "c"] {
        handle.push_text(handle.owner_chat(), t);
    }
    // Sent as-is, -1 would make the server forget all but the last (the cc-connect trap).
    let batch = client.get_updates(Offset::new(-1)).await.expect("poll");
    assert_eq!(batch.updates.len(), 3, "nothing forgotten");
}

#[tokio::test(start_paused = true)]
async fn ids_that_jump_after_a_silence_still_confirm() {
    let (_fake, handle, client) = start().await;
    handle.push_text(handle.owner_chat(), "before");
    let first = client.get_updates(Offset::START).await.expect("poll");
    let offset = first.next_offset(Offset::START);
    handle.jump_update_ids(9_000_000_000);
    handle.push_text(handle.owner_chat(), "after a week");
    let second = client.get_updates(offset).await.expect("poll");
    assert_eq!(second.updates[0].update_id, 9_000_000_000);
    let offset = second.next_offset(offset);
    assert!(client.get_updates(offset).await.expect("poll").is_empty());
}

#[tokio::test(start_paused = true)]
async fn updates_unconfirmed_for_24_hours_are_gone() {
    let (_fake, handle, client) = start().await;
    handle.push_text(handle.owner_chat(), "old");
    tokio::time::advance(Duration::from_secs(24 * 3600 + 1)).await;
    assert_eq!(handle.pending(), 0);
    assert!(
        client
            .get_updates(Offset::START)
            .await
            .expect("poll")
            .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn a_second_poller_knocks_out_the_first_with_a_fix_that_says_so() {
    let (fake, handle, client) = start_with(FakeConfig::default(), 30).await;
    let first = tokio::spawn({
        let client = client.clone();
        async move { client.get_updates(Offset::START).await }
    });
    assert!(
        handle
            .wait_until(PROMPTLY, |h| h.polls_in_flight() == 1)
            .await
    );
    let other = Client::new(&fake.base_url(), handle.token())
        .expect("url")
        .with_poll_timeout(Duration::from_secs(30));
    let second = tokio::spawn(async move { other.get_updates(Offset::START).await });
    let e = first.await.expect("joins").expect_err("409");
    let class = e.class();
    assert_eq!(
        class,
        ErrorClass::Fatal {
            relogin: false,
            reason: FatalReason::OtherPoller
        },
        "{e}"
    );
    let ErrorClass::Fatal { reason, .. } = class else {
        unreachable!()
    };
    assert!(reason.hint().contains("another program"));
    handle.push_text(handle.owner_chat(), "to the survivor");
    assert_eq!(second.await.expect("joins").expect("poll").updates.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_set_webhook_blocks_polling_until_deleted_once() {
    let (_fake, handle, client) = start().await;
    handle.set_webhook("https://example.org/hook");
    handle.push_text(handle.owner_chat(), "waiting");
    let e = client.get_updates(Offset::START).await.expect_err("409");
    assert_eq!(
        e.class(),
        ErrorClass::Fatal {
            relogin: false,
            reason: FatalReason::WebhookSet
        }
    );
    let info = client.webhook_info().await.expect("info");
    assert_eq!(info.url, "https://example.org/hook");
    assert_eq!(info.pending_update_count, 1);
    client.delete_webhook().await.expect("deleted");
    assert!(!handle.webhook_set());
    let batch = client.get_updates(Offset::START).await.expect("poll");
    assert_eq!(batch.updates.len(), 1, "pending updates kept by the fix");
}

#[tokio::test(start_paused = true)]
async fn a_poll_the_server_never_answers_times_out_as_transient() {
    let (_fake, handle, client) = start_with(FakeConfig::default(), 25).await;
    handle.fault_next(Method::GetUpdates, Fault::Hang);
    let started = tokio::time::Instant::now();
    let e = client.get_updates(Offset::START).await.expect_err("hangs");
    assert_eq!(started.elapsed(), client.poll_deadline());
    assert!(matches!(e, scv_telegram::Error::Timeout { .. }), "{e}");
    assert_eq!(e.class(), ErrorClass::Transient);
}

#[tokio::test(start_paused = true)]
async fn hostile_updates_never_fail_the_batch() {
    let (_fake, handle, client) = start().await;
    let owner = handle.owner_chat();
    handle.push_update("message", json!({})); // every field missing
    handle.push_update("message", json!({"message_id": "x", "chat": 5}));
    // A kind from the future: not asked for, so the fake holds it back (allowed_updates)...
    handle.push_update("message_reaction_v99", json!({"new": true}));
    // ...and one a newer server sends anyway.
    handle.push_raw(json!({"update_id": 100_000_050, "business_message_v99": {"x": 1}}));
    handle.push_raw(json!({"message": {"text": "no update id"}}));
    handle.push_raw(json!("not even an object"));
    let huge = "字".repeat(100_000);
    handle.push_text(owner.clone(), &huge);
    let edit = json!({"message_id": 1, "chat": owner, "date": 1, "edit_date": 2, "text": "e",
        "extra_field_from_the_future": {"x": 1}});
    handle.push_update("edited_message", edit);
    let batch = client
        .get_updates(Offset::START)
        .await
        .expect("the batch survives");
    assert_eq!(batch.skipped, 2, "no update_id: left out, counted");
    let kinds: Vec<&UpdateKind> = batch.updates.iter().map(|u| &u.kind).collect();
    assert!(matches!(kinds[0], UpdateKind::Unreadable(d) if d.starts_with("message")));
    assert!(matches!(kinds[1], UpdateKind::Unreadable(d) if !d.contains("\"x\"")));
    assert!(matches!(kinds[2], UpdateKind::Other(k) if k == "business_message_v99"));
    assert_eq!(
        batch.updates.len(),
        5,
        "the kind not asked for was held back"
    );
    assert_eq!(
        batch.updates[3].message().and_then(|m| m.text.clone()),
        Some(huge)
    );
    assert!(matches!(kinds[4], UpdateKind::EditedMessage(m) if m.edit_date == Some(2)));
    // Every id moves the offset, the unreadable ones too: the highest + 1.
    let highest = batch
        .updates
        .iter()
        .map(|u| u.update_id)
        .max()
        .expect("some");
    assert_eq!(highest, 100_000_050);
    assert_eq!(batch.next_offset(Offset::START).get(), highest + 1);
}

#[tokio::test(start_paused = true)]
async fn bad_utf8_in_a_caption_is_replaced_not_fatal() {
    let (_fake, handle, client) = start().await;
    let mut body = br#"{"ok":true,"result":[{"update_id":5,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"date":1,"caption":"a"#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe]);
    body.extend_from_slice(br#"b"}}]}"#);
    handle.fault_next(Method::GetUpdates, Fault::Raw(200, Bytes::from(body)));
    let batch = client.get_updates(Offset::START).await.expect("decoded");
    let caption = batch.updates[0].message().and_then(|m| m.caption.clone());
    assert_eq!(caption.as_deref(), Some("a\u{fffd}\u{fffd}b"));
    // A gateway's HTML page is transient, and a truncated body too.
    handle.fault_next(
        Method::GetUpdates,
        Fault::Raw(502, Bytes::from_static(b"<html>")),
    );
    assert_eq!(
        client
            .get_updates(Offset::START)
            .await
            .expect_err("502")
            .class(),
        ErrorClass::Transient
    );
    handle.fault_next(
        Method::GetUpdates,
        Fault::Raw(200, Bytes::from_static(b"{\"ok\":tr")),
    );
    assert_eq!(
        client
            .get_updates(Offset::START)
            .await
            .expect_err("cut")
            .class(),
        ErrorClass::Transient
    );
}

#[tokio::test(start_paused = true)]
async fn an_endless_answer_is_cut_off_not_buffered() {
    let (_fake, handle, client) = start().await;
    let huge = vec![b' '; scv_telegram::client::MAX_ANSWER_BYTES + 1];
    handle.fault_next(Method::GetUpdates, Fault::Raw(200, Bytes::from(huge)));
    let e = client
        .get_updates(Offset::START)
        .await
        .expect_err("too big");
    assert!(e.to_string().contains("answer over"), "{e}");
    assert_eq!(e.class(), ErrorClass::Transient);
}

#[tokio::test(start_paused = true)]
async fn answers_of_the_wrong_shape_are_malformed_not_a_panic() {
    let (_fake, handle, client) = start().await;
    for body in [
        &br#"{"ok":true,"result":{"update_id":1}}"#[..],
        br#"{"ok":true}"#,
        br#"[1,2,3]"#,
        br#"{"ok":false,"error_code":99999999}"#,
        br#"null"#,
    ] {
        handle.fault_next(
            Method::GetUpdates,
            Fault::Raw(200, Bytes::from_static(body)),
        );
        let e = client
            .get_updates(Offset::START)
            .await
            .expect_err("refused");
        assert!(
            matches!(e.class(), ErrorClass::Transient | ErrorClass::Rejected(_)),
            "{e}"
        );
    }
    handle.fault_next(
        Method::GetMe,
        Fault::Raw(
            200,
            Bytes::from_static(br#"{"ok":true,"result":{"id":"x"}}"#),
        ),
    );
    let e = client.get_me().await.expect_err("not a bot");
    assert!(matches!(e, scv_telegram::Error::Malformed { .. }), "{e}");
    assert!(
        !e.to_string().contains("\"x\""),
        "no answer text in the error: {e}"
    );
}
