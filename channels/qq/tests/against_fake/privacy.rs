//! No message text, token or secret reaches a log line at any level, through the paths that
//! log: a socket ending in an error, an unreadable frame, a refused send.

use std::io::Write;
use std::sync::{Arc, Mutex};

use scv_qq::{Body, Reply, Target, Trigger};

use crate::{Running, fast, quick_options};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn nothing_private_is_logged_at_trace_level() {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    let secret_text = "my bank PIN is 9271";
    let m = run.fake.push_c2c("U1", secret_text);
    run.next_event().await;
    run.fake.push_raw(
        "C2C_MESSAGE_CREATE",
        serde_json::json!({"content": secret_text}),
    );
    run.next_event().await;
    let reply = Reply {
        trigger: Trigger::Message(m.id),
        msg_seq: 1,
    };
    let url_text = format!("{secret_text} https://bank.example");
    let to = Target::User("U1".into());
    assert!(
        run.client
            .send(&to, Some(&reply), &Body::Text(url_text))
            .await
            .is_err()
    );
    assert!(run.fake.close_socket(4009));
    assert!(run.ready().await);
    run.stop().await;

    let logged = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("qq gateway socket ended"),
        "the paths that log were taken: {logged}"
    );
    for private in ["9271", "fake-app-secret", "FAKE_TOKEN"] {
        assert!(!logged.contains(private), "{private} in the log:\n{logged}");
    }
}
