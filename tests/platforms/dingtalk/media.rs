//! Media both ways through the media seam: a file the owner sends is saved in the workspace
//! inbox byte for byte (a `../` name stays inside), a voice note's own transcript reaches the
//! agent, and a workspace picture the answer names is uploaded and sent.

use scv_dingtalk::Call;
use scv_dingtalk::fake::{Inbound, InboundBody};

use super::support::*;

/// A tiny PNG (the signature and an IHDR), enough for "is an image" checks.
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
];

#[tokio::test]
async fn media_in_lands_in_the_inbox_and_a_named_picture_goes_out() {
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
    let owner = h.fake.config().staff[0].clone();
    let doc: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    h.fake.push(&Inbound::new(
        &owner,
        InboundBody::File(doc.clone(), "../../escape.pdf".into()),
    ));
    let voice = h.fake.push(&Inbound::new(
        &owner,
        InboundBody::Audio(b"AMR-bytes".to_vec(), Some("turn on the lights".into())),
    ));
    h.until("two answers", |f| f.sent().len() >= 2).await;
    h.acked_and_settled(&voice.push.message_id).await;
    let saved = h.agent.attachments.lock().expect("attachments").clone();
    // A transcribed voice note reaches the agent as its transcript only (the media seam's rule).
    assert_eq!(saved.len(), 1, "the file reached the agent: {saved:?}");
    let inbox = std::fs::canonicalize(ws.path().join("inbox")).expect("inbox");
    let bytes: Vec<Vec<u8>> = saved
        .iter()
        .map(|a| {
            let p = std::fs::canonicalize(&a.path).expect("saved");
            assert!(p.starts_with(&inbox), "{} outside the inbox", p.display());
            std::fs::read(p).expect("read")
        })
        .collect();
    assert_eq!(bytes, [doc], "the file, byte for byte");
    assert!(
        h.agent
            .prompts()
            .iter()
            .any(|p| p.contains("turn on the lights")),
        "the platform's transcript: {:?}",
        h.agent.prompts()
    );

    let before = h.fake.sent().len();
    let asked = h.fake.push_text(&owner, "send the chart");
    h.until("the picture", |f| {
        f.sent().iter().any(|s| s.msg_key == "sampleImageMsg")
    })
    .await;
    h.acked_and_settled(&asked.push.message_id).await;
    let up = h.fake.uploads().remove(0);
    assert_eq!((up.media_type.as_str(), up.size), ("image", PNG.len()));
    let sent = h.fake.sent();
    let picture = sent
        .iter()
        .find(|s| s.msg_key == "sampleImageMsg")
        .expect("sent");
    assert_eq!(picture.call, Call::BatchSend, "files go by the robot API");
    assert_eq!(picture.param["photoURL"], up.media_id);
    assert!(sent.len() > before + 1, "the answer's text went too");
    h.stop().await;
}
