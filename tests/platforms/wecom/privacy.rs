//! A full WeCom run of the real binary at `RUST_LOG=trace` logs no message text, answer text,
//! file name, file content, media URL or key, nor the bot's secret (the log-privacy coverage,
//! for WeCom). The binary's own filter keeps the WebSocket library, which logs whole frames at
//! trace, quiet; this shows that holds for WeCom's frames too.

use std::time::Duration;

use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_wecom::fake::{FakeConfig, FakeWeCom};

use crate::process_support::bed::{ProcessBed, openai_agent};
use crate::process_support::terminate;
use crate::wecom::support::OWNER;

const PATIENCE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_run_logs_no_text_name_url_or_secret() {
    let model = FakeOpenAi::start().await.expect("model");
    model.push(Reply::text("ANSWER-zebra-4471"));
    model.push(Reply::text("ANSWER-zebra-4472"));
    let fake = FakeWeCom::start(FakeConfig::default()).await.expect("fake");
    let ws = tempfile::tempdir().expect("workspace");
    let url = fake.ws_url();
    let bed = ProcessBed::new(
        |_| {
            format!(
                "{}[wecom.bot]\nurl = \"{url}\"\nsenders = \"owner\"\nowner = \"{OWNER}\"\nworkspace = \"{}\"\n",
                openai_agent(&model.base_url(), "m", "WECOM_PRIVACY_KEY"),
                ws.path().display()
            )
        },
        &[
            ("RUST_LOG", "trace"),
            ("WECOM_PRIVACY_KEY", "k"),
            ("NO_COLOR", "1"),
        ],
    );
    let cfg = fake.config().clone();
    bed.save_login(
        "wecom:bot",
        &scv_bridge::secrets::Credentials::default()
            .with("bot_id", &cfg.bot_id)
            .with("secret", &cfg.secret),
    );
    let mut daemon = bed.spawn();
    assert!(
        fake.wait_until(PATIENCE, |f| f.subscribed()).await,
        "never subscribed; log:\n{}",
        bed.log()
    );
    fake.push_text(OWNER, "SECRET-walrus-9913");
    fake.push_text("LiSi", "STRANGER-otter-5521");
    let file = fake.push_file(OWNER, "NAME-ibis-7730.txt", b"FILEBODY-heron");
    assert!(
        fake.wait_until(PATIENCE, |f| f
            .bubbles()
            .iter()
            .filter(|b| b.finished)
            .count()
            >= 2)
            .await,
        "two answers; log:\n{}",
        bed.log()
    );
    terminate(&mut daemon.0);
    let logs = bed.log();
    assert!(
        logs.contains("wecom"),
        "the run logged something: {}",
        logs.len()
    );
    let pushed = fake.pushes();
    let media_url = pushed
        .iter()
        .find(|p| p.pointer("/body/msgid").and_then(|v| v.as_str()) == Some(file.msgid.as_str()))
        .and_then(|p| {
            p.pointer("/body/file/url")
                .and_then(|v| v.as_str())
                .map(String::from)
        })
        .expect("the file's URL");
    for needle in [
        "SECRET-walrus",
        "STRANGER-otter",
        "ANSWER-zebra",
        "NAME-ibis",
        "FILEBODY-heron",
        cfg.secret.as_str(),
        media_url.as_str(),
    ] {
        assert!(!logs.contains(needle), "{needle} reached the logs");
    }
}
