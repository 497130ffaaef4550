//! Feishu media through a running daemon, against the fake over real sockets: an owner's photo
//! is fetched through the resource endpoint into the workspace and handed to the agent; a
//! queued workspace image arrives as an image with the file's bytes; an upload the app has no
//! scope for shows in the account's health with the scope to add.

use crate::feishu_support;

use feishu_support::{Harness, OWNER, Setup, p2p_chat};
use scv_bridge::agent::MediaKind;
use scv_bridge::conversation::body::MediaOut;
use scv_bridge::conversation::{Body, ChatId};
use scv_bridge::protocol::ComponentState;

fn png(len: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..len - 8).map(|i| (i * 13 % 241) as u8));
    v
}

/// Queues `path` as a media item to the owner's chat under `key`.
async fn queue(h: &Harness, path: std::path::PathBuf, key: &str) {
    let body = Body::Media(MediaOut {
        kind: MediaKind::Image,
        path,
        name: "chart.png".into(),
    });
    h.conversation
        .send_proactive(
            &h.key(),
            &ChatId::new(p2p_chat(OWNER)),
            "[chart.png]",
            Some(&body),
            key,
        )
        .await
        .expect("queued");
}

#[tokio::test]
async fn an_owners_photo_lands_in_the_workspace_and_reaches_the_agent_with_its_bytes() {
    let ws = tempfile::tempdir().expect("workspace");
    let mut setup = Setup::owned();
    setup
        .table
        .push_str(&format!("workspace = \"{}\"\n", ws.path().display()));
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let photo = png(300_000);
    h.fake.push_p2p_image(OWNER, photo.clone());
    let chat = p2p_chat(OWNER);
    h.until("the answer", |f| {
        f.sent()
            .iter()
            .any(|m| m.receive_id == chat || m.chat_id == chat)
    })
    .await;
    let got = h.agent.attachments();
    assert_eq!(got.len(), 1, "one file handed to the agent");
    assert_eq!(got[0].kind, MediaKind::Image);
    assert!(
        got[0].path.starts_with(ws.path().join("inbox")),
        "saved under the workspace's inbox"
    );
    assert_eq!(std::fs::read(&got[0].path).expect("saved"), photo);
    h.stop().await;
}

#[tokio::test]
async fn a_queued_workspace_image_arrives_as_an_image_with_the_files_bytes() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    let dir = tempfile::tempdir().expect("dir");
    let bytes = png(300_000);
    let path = dir.path().join("chart.png");
    std::fs::write(&path, &bytes).expect("write");
    queue(&h, path, "answer/om_1/media/0").await;
    h.until("the image", |f| !f.sent_media().is_empty()).await;
    let sent = h.fake.sent_media();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].msg_type, "image");
    assert_eq!(&sent[0].upload.bytes[..], &bytes[..]);
    assert!(sent[0].uuid.is_some(), "sent with the outbox key's uuid");
    h.stop().await;
}

#[tokio::test]
async fn an_upload_without_the_scope_shows_in_health_with_the_scope_to_add() {
    let h = Harness::start(Setup::owned()).await;
    h.wait_state(ComponentState::Connected).await;
    h.fake.fail_uploads_with(Some(99991672));
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("chart.png");
    std::fs::write(&path, png(1000)).expect("write");
    queue(&h, path, "answer/om_2/media/0").await;
    h.until_health("a sends note naming the scope", |c| {
        c.notes
            .iter()
            .any(|n| n.text.contains("sends failing") && n.text.contains("im:resource"))
    })
    .await;
    assert!(h.fake.sent_media().is_empty());
    h.stop().await;
}
