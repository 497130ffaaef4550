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
