//! No message text, file name, media URL or secret in any log line at any level (§ privacy).

use std::io::Write;
use std::sync::{Arc, Mutex};

use scv_wecom::classify::REPLY_EXPIRED;
use scv_wecom::fake::{FakeConfig, Fault};
use scv_wecom::frame::cmd;
use scv_wecom::limits::{FILE_DOWNLOAD_TIMEOUT, MEDIA_URL_VALIDITY};
use scv_wecom::{Credentials, login};

use crate::{OWNER, Running, options};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn nothing_private_reaches_a_log_line_at_any_level() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut r = Running::start(FakeConfig::default()).await;
    let secret = r.fake.config().secret.clone();
    let _ = login::check(
        &options(&r.fake),
        &Credentials::new(r.fake.config().bot_id.clone(), "wrong-s3cret"),
    )
    .await;
    r.fake.push_text(OWNER, "my private words");
    let (_, handle) = r.next_handle().await;
    r.fake
        .fail_next(cmd::RESPOND_MSG, Fault::Code(REPLY_EXPIRED), 1);
    r.conn
        .reply_or_send(&handle, "the private answer")
        .await
        .unwrap();
    r.fake.push_raw("{\"unreadable private note\"");
    r.fake.push_file(OWNER, "secret-plan.pdf", b"private bytes");
    let (cb, _) = r.next_handle().await;
    let scv_wecom::CallbackKind::Message { content, .. } = cb.kind else {
        panic!()
    };
    let media = content.media()[0].clone();
    tokio::time::advance(MEDIA_URL_VALIDITY).await;
    let _ = r
        .conn
        .download(&media, 1 << 20, FILE_DOWNLOAD_TIMEOUT)
        .await;
    r.fake.drop_all();
    let mut status = r.conn.status();
    let _ = tokio::time::timeout(crate::PROMPTLY, status.wait_for(|s| s.subscribes == 2)).await;
    r.stop().await.unwrap();

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("handle gone"), "the capture works: {text}");
    for private in [
        "private words",
        "private answer",
        "private note",
        "secret-plan",
        "private bytes",
        secret.as_str(),
        "wrong-s3cret",
        media.url.as_str(),
    ] {
        assert!(
            !text.contains(private),
            "{private:?} leaked into the logs:\n{text}"
        );
    }
}
