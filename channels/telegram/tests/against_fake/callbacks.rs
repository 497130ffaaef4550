//! Button presses: who pressed, answered once within the deadline, and the stop button.

use std::time::Duration;

use scv_telegram::fake::FakeConfig;
use scv_telegram::{Keyboard, Offset, OutgoingText, Rejection, UpdateKind};

use crate::{rejected, start, start_with};

#[tokio::test(start_paused = true)]
async fn a_press_arrives_with_its_presser_and_is_answered_once() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    let kb = Keyboard::row(&[("Yes", "q:7:y"), ("No", "q:7:n"), ("Always", "q:7:a")]);
    let m = client
        .send_text(&OutgoingText::plain(chat, "allow?").with_keyboard(kb))
        .await
        .expect("sent");
    let stranger = handle.stranger_chat(8_000_000_003);
    let theirs = handle.press_button(
        scv_telegram::User {
            id: stranger.id,
            is_bot: false,
            first_name: "S".into(),
            username: None,
            language_code: None,
        },
        &m,
        "q:7:y",
    );
    let ours = handle.press_button(handle.owner(), &m, "q:7:n");
    let batch = client.get_updates(Offset::START).await.expect("poll");
    let presses: Vec<_> = batch
        .updates
        .iter()
        .filter_map(|u| match &u.kind {
            UpdateKind::CallbackQuery(q) => Some(q.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(presses.len(), 2);
    assert_eq!(presses[0].id, theirs);
    assert_eq!(
        presses[0].from.id, stranger.id,
        "the presser is there to check"
    );
    assert_eq!(presses[1].from.id, handle.owner().id);
    assert_eq!(presses[1].data.as_deref(), Some("q:7:n"));
    assert_eq!(
        presses[1].message.as_ref().map(|m| m.message_id),
        Some(m.message_id)
    );
    client
        .answer_callback(&theirs, Some("not allowed"))
        .await
        .expect("answered");
    client.answer_callback(&ours, None).await.expect("answered");
    rejected(
        client.answer_callback(&ours, None).await,
        Rejection::QueryTooOld,
    );
    rejected(
        client.answer_callback("forged", None).await,
        Rejection::QueryTooOld,
    );
    assert_eq!(handle.callback_answers().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_answer_after_the_deadline_is_too_old() {
    let config = FakeConfig {
        callback_deadline: Duration::from_secs(15),
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config, 1).await;
    let chat = handle.owner_chat().id;
    let m = client
        .send_text(&OutgoingText::plain(chat, "q"))
        .await
        .expect("sent");
    let on_time = handle.press_button(handle.owner(), &m, "q:1:y");
    let late = handle.press_button(handle.owner(), &m, "q:1:n");
    tokio::time::advance(Duration::from_secs(15)).await;
    client
        .answer_callback(&on_time, None)
        .await
        .expect("at the deadline");
    tokio::time::advance(Duration::from_millis(1)).await;
    rejected(
        client.answer_callback(&late, None).await,
        Rejection::QueryTooOld,
    );
}

#[tokio::test(start_paused = true)]
async fn the_stop_button_arrives_as_generation_stopped() {
    let (_fake, handle, client) = start().await;
    handle.press_stop(handle.owner_chat(), 42);
    let batch = client.get_updates(Offset::START).await.expect("poll");
    let UpdateKind::GenerationStopped(stop) = &batch.updates[0].kind else {
        panic!("got {:?}", batch.updates[0].kind);
    };
    assert_eq!((stop.chat.id, stop.draft_id), (handle.owner().id, 42));
}
