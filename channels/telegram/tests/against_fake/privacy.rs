//! Logs at every level carry no message text, file name, button data or token: a whole round
//! trip (login check, poll, send, edit, draft, button, file both ways, refusals) runs under a
//! TRACE subscriber on this test's thread, where the fake's server tasks run too.

use std::io::Write;
use std::sync::{Arc, Mutex};

use scv_telegram::fake::Fault;
use scv_telegram::limits::MAX_DOWNLOAD_BYTES;
use scv_telegram::{Keyboard, Method, Offset, OutgoingText, UploadKind};
use serde_json::json;

use crate::start;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const SECRET_TEXT: &str = "my-bank-pin-is-4921";
const ANSWER: &str = "the-private-answer-8812";
const FILE_NAME: &str = "tax-return-2026.pdf";
const BUTTON: &str = "q:secret-77:y";

#[tokio::test]
async fn no_text_name_data_or_token_reaches_the_logs() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    round_trip().await;
    let logs = String::from_utf8_lossy(&captured.0.lock().expect("lock")).into_owned();
    assert!(
        logs.contains("getUpdates"),
        "the run logged something: {logs}"
    );
    let token = start().await.1.token();
    let secret = token.expose().split_once(':').expect("colon").1.to_owned();
    for needle in [SECRET_TEXT, ANSWER, FILE_NAME, BUTTON, secret.as_str()] {
        assert!(!logs.contains(needle), "{needle} leaked into the logs");
    }
}

async fn round_trip() {
    let (fake, handle, client) = start().await;
    scv_telegram::login::check_login(&fake.base_url(), handle.token().expose())
        .await
        .expect("login");
    let chat = handle.owner_chat();
    handle.push_text(chat.clone(), SECRET_TEXT);
    handle.push_file(chat.clone(), "document", SECRET_TEXT.as_bytes(), FILE_NAME);
    // One update without an id, which the client logs (by count) as left out.
    handle.push_raw(json!({"message": {"text": SECRET_TEXT}}));
    let batch = client.get_updates(Offset::START).await.expect("poll");
    files_both_ways(&client, &batch).await;
    let kb = Keyboard::row(&[("Yes", BUTTON)]);
    let sent = OutgoingText::plain(chat.id, ANSWER).with_keyboard(kb);
    let m = client.send_text(&sent).await.expect("send");
    let edit = client.edit_text(chat.id, m.message_id, SECRET_TEXT, None, None);
    edit.await.expect("edit");
    client
        .send_draft(chat.id, 1, ANSWER, None, false)
        .await
        .expect("draft");
    let q = handle.press_button(handle.owner(), &m, BUTTON);
    let next = batch.next_offset(Offset::START);
    client.get_updates(next).await.expect("poll");
    client
        .answer_callback(&q, Some(ANSWER))
        .await
        .expect("answer");
    // Refusals and a malformed answer log too, if anything does.
    let bad = OutgoingText::html(chat.id, format!("<x>{SECRET_TEXT}"));
    let _ = client.send_text(&bad).await;
    let raw = Fault::Raw(200, SECRET_TEXT.as_bytes().to_vec().into());
    handle.fault_next(Method::GetUpdates, raw);
    let _ = client.get_updates(Offset::START).await;
}

/// Downloads the batch's document and uploads it back, named and captioned.
async fn files_both_ways(client: &scv_telegram::Client, batch: &scv_telegram::Batch) {
    let m = batch.updates[1].message().expect("the document message");
    let doc = m.media().expect("doc");
    let file = client.get_file(&doc.file_id).await.expect("getFile");
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = dir.path().join(FILE_NAME);
    let got = client.download(&file, &dest, MAX_DOWNLOAD_BYTES).await;
    got.expect("download");
    let kind = UploadKind::Document;
    let up = client.send_file(m.chat.id, kind, &dest, FILE_NAME, Some(ANSWER));
    up.await.expect("upload");
}
