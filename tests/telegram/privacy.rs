//! A full Telegram run's logs, at TRACE from every thread, carry no message text, answer text,
//! file name, pairing code or bot token (the log-privacy coverage, for Telegram).

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use scv_bridge::protocol::ComponentState;
use scv_telegram::Method;

use crate::support::*;

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

/// Everything this test binary logs at TRACE, from every thread.
fn captured() -> &'static Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        captured
    })
}

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
