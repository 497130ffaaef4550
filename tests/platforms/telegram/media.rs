//! Media both ways through the media seam: a photo and a document the owner sends are saved in
//! the workspace inbox byte for byte (a `../` name stays inside), and a workspace file the
//! answer names goes out as a photo with the same bytes.

use scv_bridge::protocol::ComponentState;

use super::support::*;

/// A tiny PNG (the signature and an IHDR), enough for "is an image" checks.
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
];

#[tokio::test]
async fn media_in_lands_in_the_inbox_and_a_named_file_goes_out() {
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
    h.wait_state(ComponentState::Connected).await;
    let owner = h.fake.owner_chat();
    let doc: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    h.fake.push_file(owner.clone(), "photo", PNG, "ignored.png");
    h.fake
        .push_file(owner.clone(), "document", &doc, "../../escape.bin");
    h.until("two answers", |f| f.sent().len() >= 2).await;
    h.drain().await;
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
    assert!(bytes.contains(&PNG.to_vec()), "the photo, byte for byte");
    assert!(bytes.contains(&doc), "the document, byte for byte");

    h.fake.push_text(owner.clone(), "send the chart");
    h.until("the upload", |f| !f.uploads().is_empty()).await;
    h.drain().await;
    let up = h.fake.uploads().remove(0);
    assert_eq!(up.chat_id, owner.id);
    assert_eq!(up.method.to_ascii_lowercase(), "sendphoto");
    assert_eq!(up.bytes.as_ref(), PNG, "the workspace file, byte for byte");
    h.stop().await;
}
