//! Logs at every level carry no message text, file name, card content or secret.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use scv_dingtalk::Call;
use scv_dingtalk::card::{AnswerCard, CardSpace, CardTemplate};
use scv_dingtalk::fake::{FakeConfig, Fault, InboundBody};
use scv_dingtalk::send::Outgoing;
use scv_dingtalk::stream::AckReply;

use crate::{OWNER, Running};

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

/// Everything logged in this binary at TRACE from the moment the first caller asks.
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

const SECRET_TEXT: &str = "my-bank-pin-is-4921";
const FILE_NAME: &str = "salary-secret-7730.pdf";
const CARD_TEXT: &str = "card-secret-6604";
const REPLY: &str = "reply-secret-1187";

#[tokio::test(start_paused = true)]
async fn no_text_file_name_card_content_or_secret_reaches_the_logs() {
    let captured = captured();
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, SECRET_TEXT);
    r.next().await.ack.ack(AckReply::Done).unwrap();
    r.fake.push(&scv_dingtalk::fake::Inbound::new(
        OWNER,
        InboundBody::File(b"x".to_vec(), FILE_NAME.into()),
    ));
    r.next().await.ack.ack(AckReply::Done).unwrap();
    r.fake.send_raw(&format!(
        "{{\"type\":\"CALLBACK\",\"data\":\"{SECRET_TEXT}\""
    ));
    let t = CardTemplate {
        template_id: r.fake.config().card_templates[0].0.clone(),
        content_key: "content".into(),
    };
    let mut card = AnswerCard::start(
        &r.client,
        &t,
        &CardSpace::Direct {
            staff_id: OWNER.into(),
        },
    )
    .await
    .unwrap();
    card.finish(CARD_TEXT, false).await.unwrap();
    r.fake.fail_next(Call::BatchSend, Fault::Status(500));
    let reply = Outgoing::Text {
        content: REPLY.into(),
    };
    let _ = r.client.send_to_user(OWNER, &reply).await;
    let _ = r.client.send_to_user("nobody", &reply).await;
    r.fake.disconnect_all();
    r.sockets(2).await;
    r.fake.zombie_all();
    r.sockets(3).await;
    let secret = r.fake.config().client_secret.clone();
    let token = r.fake.current_token().unwrap();
    r.stop().await.unwrap();
    let logs = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    assert!(logs.contains("disconnect frame"), "the run logged: {logs}");
    for needle in [
        SECRET_TEXT,
        FILE_NAME,
        CARD_TEXT,
        REPLY,
        secret.as_str(),
        token.as_str(),
        "ticket=",
    ] {
        assert!(!logs.contains(needle), "{needle} leaked into the logs");
    }
}
