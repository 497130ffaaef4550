//! A full Telegram run's logs, at TRACE from every thread, carry no message text, answer text,
//! file name, pairing code or bot token (the log-privacy coverage, for Telegram).

use scv_bridge::protocol::ComponentState;
use scv_telegram::Method;

use crate::captured;
use crate::telegram_support::*;

#[tokio::test]
async fn no_message_text_file_name_or_token_reaches_the_logs() {
    captured();
    let ws = tempfile::tempdir().expect("workspace");
    let mut setup = Setup::owned();
    setup
        .table
        .push_str(&format!("workspace = \"{}\"\n", ws.path().display()));
    setup.agent = TestAgent::answering(|_| "ANSWER-zebra-<b>-4471".to_string());
    let token = setup.fake.token.clone();
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let owner = h.fake.owner_chat();
    // A refused send and a refused markup go through the error paths too.
    h.fake
        .fail_next(Method::SendMessage, 429, "Too Many Requests: retry after 1");
    h.fake.push_text(owner.clone(), "SECRET-walrus-9913");
    h.fake
        .push_text(h.fake.stranger_chat(42), "STRANGER-otter-5521");
    h.fake.push_file(
        owner.clone(),
        "document",
        b"FILEBODY-heron",
        "NAME-ibis-7730.txt",
    );
    h.until("both answers", |f| f.sent().len() >= 2).await;
    h.drain().await;
    h.stop().await;
    let logs = String::from_utf8_lossy(&captured().0.lock().expect("lock")).into_owned();
    assert!(
        logs.contains("telegram"),
        "the run logged something: {}",
        logs.len()
    );
    for needle in [
        "SECRET-walrus",
        "STRANGER-otter",
        "ANSWER-zebra",
        "NAME-ibis",
        "FILEBODY-heron",
        token.as_str(),
        token.split_once(':').map(|(_, s)| s).unwrap_or("x"),
    ] {
        assert!(!logs.contains(needle), "{needle} reached the logs");
    }
}
