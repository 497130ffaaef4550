//! A full DingTalk run's logs, at TRACE from every thread, carry no message text, answer text,
//! file name, pairing code, client secret, access token or reply-webhook key (the log-privacy
//! coverage, for DingTalk).
//!
//! This binary's other tests log too, into the same one subscriber: this test looks only for
//! its own texts.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use scv_dingtalk::Call;
use scv_dingtalk::fake::{Fault, Inbound, InboundBody};

use super::support::*;

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
async fn no_message_text_file_name_or_secret_reaches_the_logs() {
    captured();
    let ws = tempfile::tempdir().expect("workspace");
    let mut setup = Setup::owned();
    setup
        .table
        .push_str(&format!("workspace = \"{}\"\n", ws.path().display()));
    setup.agent = TestAgent::answering(|_| "ANSWER-zebra-4471".to_string());
    let secret = setup.fake.client_secret.clone();
    let h = Harness::start(setup).await;
    h.connected().await;
    let owner = h.fake.config().staff[0].clone();
    let stranger = h.fake.config().staff[1].clone();
    // The error paths too: a refused webhook (the reply then goes by the robot API) and an
    // unreadable frame.
    h.fake
        .fail_next(Call::SessionWebhook, Fault::Errcode(300001));
    h.fake.send_raw("{\"not\": \"RAWFRAME-yak-3301\"");
    let said = h.fake.push_text(&owner, "SECRET-walrus-9913");
    h.fake.push_text(&stranger, "STRANGER-otter-5521");
    let file = Inbound::new(
        &owner,
        InboundBody::File(b"FILEBODY-heron".to_vec(), "NAME-ibis-7730.pdf".into()),
    );
    let filed = h.fake.push(&file);
    h.until("both answers", |f| f.sent().len() >= 2).await;
    h.acked_and_settled(&filed.push.message_id).await;
    let session = h
        .fake
        .payload_of(&said.msg_id)
        .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
        .and_then(|v| v["sessionWebhook"].as_str().map(str::to_string))
        .and_then(|u| u.split_once("session=").map(|(_, s)| s.to_string()))
        .expect("a reply webhook");
    let token = h.fake.current_token().expect("a token");
    h.stop().await;
    let logs = String::from_utf8_lossy(&captured().0.lock().expect("lock")).into_owned();
    assert!(logs.contains("dingtalk"), "the run logged something");
    for needle in [
        "SECRET-walrus",
        "STRANGER-otter",
        "ANSWER-zebra",
        "NAME-ibis",
        "FILEBODY-heron",
        "RAWFRAME-yak",
        secret.as_str(),
        session.as_str(),
        token.as_str(),
    ] {
        assert!(!logs.contains(needle), "{needle} reached the logs");
    }
}
