//! Edits and drafts: "not modified" is success, what edits and drafts refuse, and a streamed
//! answer that ends equal to the answer.

use scv_telegram::limits::DRAFT_MIN_INTERVAL;
use scv_telegram::{Edited, Keyboard, OutgoingText, ParseMode, Rejection};

use crate::{rejected, start};

#[tokio::test(start_paused = true)]
async fn an_identical_edit_is_unchanged_not_an_error() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    let m = client
        .send_text(&OutgoingText::plain(chat, "draft"))
        .await
        .expect("sent");
    let edit = |text: &'static str| client.edit_text(chat, m.message_id, text, None, None);
    assert_eq!(edit("final").await.expect("edit"), Edited::Changed);
    assert_eq!(edit("final").await.expect("same"), Edited::Unchanged);
    assert_eq!(
        handle
            .message(chat, m.message_id)
            .map(|(t, _)| t)
            .as_deref(),
        Some("final")
    );
}

#[tokio::test(start_paused = true)]
async fn edits_of_missing_or_over_long_messages_are_refused() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    rejected(
        client.edit_text(chat, 999, "x", None, None).await,
        Rejection::MessageNotFound,
    );
    let m = client
        .send_text(&OutgoingText::plain(chat, "x"))
        .await
        .expect("sent");
    let long = "y".repeat(4097);
    let e = rejected(
        client
            .edit_text(chat, m.message_id, &long, None, None)
            .await,
        Rejection::TooLong,
    );
    assert!(
        e.description()
            .is_some_and(|d| d.contains("MESSAGE_TOO_LONG"))
    );
    rejected(
        client.edit_text(chat, m.message_id, " ", None, None).await,
        Rejection::EmptyText,
    );
    rejected(
        client
            .edit_text(chat, m.message_id, "<i>x", Some(ParseMode::Html), None)
            .await,
        Rejection::BadMarkup,
    );
}

#[tokio::test(start_paused = true)]
async fn a_keyboard_removed_once_cannot_be_removed_twice() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    let kb = Keyboard::row(&[("Yes", "q:7:y"), ("No", "q:7:n")]);
    let m = client
        .send_text(&OutgoingText::plain(chat, "run it?").with_keyboard(kb))
        .await
        .expect("sent");
    assert!(m.reply_markup.is_some());
    assert_eq!(
        client
            .edit_keyboard(chat, m.message_id, None)
            .await
            .expect("removed"),
        Edited::Changed
    );
    assert_eq!(
        client
            .edit_keyboard(chat, m.message_id, None)
            .await
            .expect("again"),
        Edited::Unchanged
    );
    assert_eq!(
        handle.message(chat, m.message_id).and_then(|(_, k)| k),
        None
    );
}

#[tokio::test(start_paused = true)]
async fn drafts_only_in_private_chats_with_a_nonzero_id() {
    let (_fake, handle, client) = start().await;
    let group = handle.group(-4_000_000_010, "g").id;
    rejected(
        client.send_draft(group, 1, "x", None, false).await,
        Rejection::DraftRefused,
    );
    let chat = handle.owner_chat().id;
    rejected(
        client.send_draft(chat, 0, "x", None, false).await,
        Rejection::DraftRefused,
    );
    rejected(
        client
            .send_draft(chat, 1, &"z".repeat(4097), None, false)
            .await,
        Rejection::TooLong,
    );
    client
        .send_draft(chat, 1, "", None, false)
        .await
        .expect("empty = Thinking… placeholder");
    assert!(handle.sent().is_empty(), "a draft never becomes a message");
}

/// A 2,000-character answer streamed as drafts at the allowed pace, then sent once: the chat
/// ends with exactly the answer, and each frame is a prefix of it.
#[tokio::test(start_paused = true)]
async fn a_streamed_answer_ends_equal_to_the_answer() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    let answer: String = (0..2000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    for end in (250..=2000).step_by(250) {
        client
            .send_draft(chat, 42, &answer[..end], None, end > 1000)
            .await
            .expect("frame");
        tokio::time::sleep(DRAFT_MIN_INTERVAL).await;
    }
    client
        .send_text(&OutgoingText::plain(chat, answer.clone()))
        .await
        .expect("final");
    let frames = handle.drafts();
    assert_eq!(frames.len(), 8);
    assert!(
        frames
            .iter()
            .all(|f| answer.starts_with(&f.text) && f.draft_id == 42)
    );
    let stoppable: Vec<bool> = frames.iter().map(|f| f.can_stop).collect();
    assert_eq!(
        stoppable,
        [false, false, false, false, true, true, true, true],
        "as asked"
    );
    assert!(
        frames
            .windows(2)
            .all(|w| w[1].at - w[0].at >= DRAFT_MIN_INTERVAL)
    );
    let sent = handle.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, answer);
}

/// Edits count against the flood limits: a group's 21st change in a minute waits.
#[tokio::test(start_paused = true)]
async fn edits_in_a_group_are_paced_like_sends() {
    let config = scv_telegram::fake::FakeConfig {
        chat_burst: 100,
        ..Default::default()
    };
    let (_fake, handle, client) = crate::start_with(config, 1).await;
    let group = handle.group(-4_000_000_011, "g").id;
    let m = client
        .send_text(&OutgoingText::plain(group, "0"))
        .await
        .expect("sent");
    for i in 1..20 {
        let text = i.to_string();
        client
            .edit_text(group, m.message_id, &text, None, None)
            .await
            .expect("within 20");
    }
    let e = client
        .edit_text(group, m.message_id, "20", None, None)
        .await
        .expect_err("flood");
    assert!(
        matches!(e.class(), scv_telegram::ErrorClass::SlowDown(_)),
        "{e}"
    );
    assert_eq!(
        handle
            .message(group, m.message_id)
            .map(|(t, _)| t)
            .as_deref(),
        Some("19")
    );
}
