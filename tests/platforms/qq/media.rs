//! Media both ways through the media seam: an image and a file the owner sends are saved in the
//! workspace inbox byte for byte (a `../` name stays inside), and a workspace file the answer
//! names is uploaded for the chat and sent as a media reply to the owner's message.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use scv_bridge::testing::InstantAgent;
use serde_json::json;

use super::support::*;

/// A tiny PNG (the signature and an IHDR), enough for "is an image" checks.
const PNG: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
];

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn media_in_lands_in_the_inbox_and_a_named_file_goes_out() {
    let ws = tempfile::tempdir().expect("workspace");
    std::fs::create_dir_all(ws.path().join("out")).expect("out");
    std::fs::write(ws.path().join("out/chart.png"), PNG).expect("chart");
    let mut setup = Setup::owned();
    setup
        .table
        .push_str(&format!("workspace = \"{}\"\n", ws.path().display()));
    setup.agent = Arc::new(InstantAgent::new(|p| {
        if p.contains("chart") {
            "Here: ![chart](out/chart.png)".to_string()
        } else {
            "got it".to_string()
        }
    }));
    let h = Harness::start(setup).await;
    h.connected().await;
    let doc: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let image = h.fake.add_media("a.png", PNG.to_vec());
    let file = h.fake.add_media("b.bin", doc.clone());
    h.fake.push_c2c_with(
        OWNER,
        "",
        vec![json!({"content_type": "image/png", "filename": "photo.png", "url": image, "size": PNG.len()})],
    );
    h.fake.push_c2c_with(
        OWNER,
        "",
        vec![json!({"content_type": "file", "filename": "../../escape.bin", "url": file, "size": doc.len()})],
    );
    h.until("two answers", |f| f.sent().len() >= 2).await;
    h.settle().await;
    let inbox = std::fs::canonicalize(ws.path().join("inbox")).expect("inbox");
    let saved: Vec<Vec<u8>> = files_under(ws.path())
        .into_iter()
        .filter(|p| !p.starts_with(ws.path().join("out")))
        .map(|p| {
            let p = std::fs::canonicalize(p).expect("saved");
            assert!(p.starts_with(&inbox), "{} outside the inbox", p.display());
            std::fs::read(p).expect("read")
        })
        .collect();
    assert!(saved.contains(&PNG.to_vec()), "the image, byte for byte");
    assert!(saved.contains(&doc), "the file, byte for byte");
    assert!(
        !ws.path()
            .parent()
            .expect("parent")
            .join("escape.bin")
            .exists()
    );

    let ask = h.fake.push_c2c(OWNER, "send the chart");
    h.until("the media reply", |f| {
        f.sent().iter().any(|s| s.msg_type == 7)
    })
    .await;
    h.settle().await;
    let up = h.fake.uploads().remove(0);
    assert_eq!(up.to, format!("user:{OWNER}"));
    assert_eq!((up.file_type, up.data_len), (1, Some(PNG.len())));
    let media = h
        .fake
        .sent()
        .into_iter()
        .find(|s| s.msg_type == 7)
        .expect("sent");
    assert_eq!(media.msg_id.as_deref(), Some(ask.id.as_str()));
    assert!(h.fake.rejected().is_empty(), "{:?}", h.fake.rejected());
    h.stop().await;
}
