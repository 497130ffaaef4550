//! Media both ways through the media seam: a picture and a file the owner sends are downloaded,
//! decrypted and saved in the workspace inbox byte for byte; voice reaches the agent as WeCom's
//! transcript, marked; a workspace file the answer names is uploaded and sent as an image.

use scv_wecom::frame::cmd;

use crate::wecom::support::*;

/// A tiny PNG (the signature and an IHDR), enough for "is an image" checks.
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
];

#[tokio::test]
async fn media_in_lands_in_the_inbox_voice_is_a_transcript_and_a_file_goes_out() {
    let ws = tempfile::tempdir().expect("workspace");
    std::fs::create_dir_all(ws.path().join("out")).expect("out");
    std::fs::write(ws.path().join("out/chart.png"), PNG).expect("chart");
    let mut setup = Setup::owned();
    setup
        .table
        .push_str(&format!("workspace = \"{}\"\n", ws.path().display()));
    setup.agent = TestAgent::answering(|p| {
        if p.contains("chart") {
            "Here: ![chart](out/chart.png)".to_string()
        } else {
            "got it".to_string()
        }
    });
    let h = Harness::start(setup).await;
    h.connected().await;
    let doc: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    h.fake.push_image(OWNER, PNG);
    h.fake.push_file(OWNER, "../../escape.bin", &doc);
    h.fake.push_voice(OWNER, "turn off the light");
    h.until("three answers", |f| {
        f.bubbles().iter().filter(|b| b.finished).count() >= 3
    })
    .await;
    h.settle().await;
    let saved = h.agent.attachments.lock().expect("attachments").clone();
    assert_eq!(saved.len(), 2, "both files reached the agent");
    let inbox = std::fs::canonicalize(ws.path().join("inbox")).expect("inbox");
    let bytes: Vec<Vec<u8>> = saved
        .iter()
        .map(|a| {
            let p = std::fs::canonicalize(&a.path).expect("saved");
            assert!(p.starts_with(&inbox), "{} outside the inbox", p.display());
            std::fs::read(p).expect("read")
        })
        .collect();
    assert!(bytes.contains(&PNG.to_vec()), "the picture, byte for byte");
    assert!(bytes.contains(&doc), "the file, byte for byte");
    let prompts = h.agent.prompts();
    assert!(
        prompts
            .iter()
            .any(|p| p.contains("[voice transcript: turn off the light]")),
        "{prompts:?}"
    );

    h.fake.push_text(OWNER, "send the chart");
    h.until("the image", |f| {
        f.sent()
            .iter()
            .any(|s| s.cmd == cmd::SEND_MSG && s.body["msgtype"] == "image")
    })
    .await;
    let sent = h
        .fake
        .sent()
        .into_iter()
        .find(|s| s.body["msgtype"] == "image")
        .expect("image");
    assert_eq!(sent.to, OWNER);
    let id = sent.body["image"]["media_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(h.fake.media_ids().contains(&id), "an uploaded media_id");
    h.stop().await;
}

/// Answers "got it"; a prompt containing "wait" holds its turn until released.
struct GateAgent {
    started: tokio::sync::Notify,
    go: tokio::sync::Semaphore,
    attachments: std::sync::Mutex<Vec<scv_bridge::agent::Attachment>>,
}

impl scv_bridge::agent::Agent for GateAgent {
    fn turn(
        &self,
        req: scv_bridge::agent::TurnRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> futures_util::future::BoxFuture<
        '_,
        Result<scv_bridge::agent::TurnOutput, scv_bridge::agent::AgentError>,
    > {
        Box::pin(async move {
            if req.prompt.contains("wait") {
                self.started.notify_one();
                let _permit = self.go.acquire().await;
            }
            if let Ok(mut a) = self.attachments.lock() {
                a.extend(req.attachments.iter().cloned());
            }
            Ok(scv_bridge::agent::TurnOutput {
                text: "got it".into(),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(
        &'a self,
        _session: &'a scv_bridge::agent::SessionKey,
    ) -> futures_util::future::BoxFuture<'a, Result<(), scv_bridge::agent::AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_file_is_downloaded_right_after_journaling_and_keeps_its_name() {
    let ws = tempfile::tempdir().expect("workspace");
    let agent = std::sync::Arc::new(GateAgent {
        started: tokio::sync::Notify::new(),
        go: tokio::sync::Semaphore::new(0),
        attachments: Default::default(),
    });
    let mut setup = Setup::owned();
    setup
        .table
        .push_str(&format!("workspace = \"{}\"\n", ws.path().display()));
    setup.other_agent = Some(agent.clone());
    let h = Harness::start(setup).await;
    h.connected().await;
    // A long turn holds the chat; the file sent meanwhile waits behind it for its own turn.
    let started = agent.started.notified();
    h.fake.push_text(OWNER, "wait for me");
    started.await;
    let doc: Vec<u8> = (0..=255u8).cycle().take(40_000).collect();
    h.fake.push_file(OWNER, "../季度 report?.pdf", &doc);
    h.until("the file downloaded at once", |f| f.media_served() == 1)
        .await;
    // Its URL expires (5 minutes on WeCom, §2.6) before the turn reaches the file.
    h.fake.expire_media();
    agent.go.add_permits(1);
    h.until("both answers", |f| {
        f.bubbles().iter().filter(|b| b.finished).count() == 2
    })
    .await;
    h.settle().await;
    let saved = agent.attachments.lock().expect("attachments").clone();
    assert_eq!(saved.len(), 1, "the file reached the agent: {saved:?}");
    let name = saved[0].path.file_name().and_then(|n| n.to_str());
    assert_eq!(name, Some("季度 report_.pdf"), "WeCom's name, sanitized");
    assert_eq!(std::fs::read(&saved[0].path).expect("saved"), doc);
    assert_eq!(h.fake.media_served(), 1, "downloaded once, early");
    h.stop().await;
}
