//! Feishu media at the adapter: received messages as references (from the events the fake
//! pushes over a real long connection), `fetch` into a file, media outbox items uploaded and sent.

use std::sync::Arc;

use scv_feishu::event::{ChatType, EventBody, MessageEvent};
use scv_feishu::fake::{FakeConfig, FakeFeishu};
use scv_feishu::ws::{LongConnection, WsOptions};
use scv_feishu::{Client, ClientOptions};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::adapters::feishu::inbound::to_inbound;
use crate::adapters::feishu::sender::FeishuSender;
use crate::config::Channel;
use crate::conversation::body::MediaOut;
use crate::conversation::{
    Body, ChatId, ChatSender, Inbound, Outbound, OutboundKind, ReplyContext,
};
use crate::failure::Class;

const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn key() -> AccountKey {
    AccountKey::new(Channel::Feishu, "work")
}

fn png(len: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..len.saturating_sub(8)).map(|i| (i * 7 % 253) as u8));
    v
}

fn event(message_type: &str, content: &str) -> MessageEvent {
    MessageEvent {
        sender_open_id: "ou_owner".into(),
        sender_union_id: None,
        sender_type: "user".into(),
        message_id: "om_1".into(),
        root_id: None,
        parent_id: None,
        thread_id: None,
        chat_id: "oc_1".into(),
        chat_type: ChatType::P2p,
        message_type: message_type.into(),
        content: content.into(),
        mentions: Vec::new(),
        create_time_ms: Some(1),
    }
}

fn kinds(refs: &[MediaRef]) -> Vec<(MediaKind, String, String)> {
    refs.iter()
        .map(|r| {
            let l: Locator = serde_json::from_value(r.locator.clone()).expect("locator");
            assert_eq!(l.message_id, "om_1");
            (r.kind, l.key, l.ty)
        })
        .collect()
}

#[test]
fn every_downloadable_kind_becomes_a_reference() {
    let t = |k: MediaKind, key: &str, ty: &str| (k, key.to_string(), ty.to_string());
    let rows = [
        (
            "image",
            r#"{"image_key":"img_a"}"#,
            vec![t(MediaKind::Image, "img_a", "image")],
        ),
        (
            "file",
            r#"{"file_key":"f_a","file_name":"a.pdf"}"#,
            vec![t(MediaKind::File, "f_a", "file")],
        ),
        (
            "audio",
            r#"{"file_key":"f_v","duration":2000}"#,
            vec![t(MediaKind::Audio, "f_v", "file")],
        ),
        (
            "media",
            r#"{"file_key":"f_m","image_key":"img_c","file_name":"x.mp4","duration":1}"#,
            vec![t(MediaKind::Video, "f_m", "file")],
        ),
        (
            "post",
            r#"{"title":"t","content":[[{"tag":"text","text":"look"}],[{"tag":"img","image_key":"img_1"}],[{"tag":"media","file_key":"f_2","image_key":"img_3"}]]}"#,
            vec![
                t(MediaKind::Image, "img_1", "image"),
                t(MediaKind::Video, "f_2", "file"),
            ],
        ),
        (
            "post",
            r#"{"zh_cn":{"title":"","content":[[{"tag":"img","image_key":"img_z"}]]}}"#,
            vec![t(MediaKind::Image, "img_z", "image")],
        ),
        (
            "post",
            r#"{"post":{"en_us":{"content":[[{"tag":"img","image_key":"img_e"}]]}}}"#,
            vec![t(MediaKind::Image, "img_e", "image")],
        ),
        // Not downloadable through the API: no reference, the description stays.
        ("sticker", r#"{"file_key":"f_s"}"#, vec![]),
        ("folder", r#"{"file_key":"f_d","file_name":"d"}"#, vec![]),
        ("text", r#"{"text":"hi"}"#, vec![]),
        // Malformed: no panic, no reference.
        ("image", "not json", vec![]),
        ("image", r#"{"image_key":""}"#, vec![]),
        ("file", r#"{"file_name":"a.pdf"}"#, vec![]),
        ("post", r#"{"content":"rows?"}"#, vec![]),
        ("post", r#"[1,2]"#, vec![]),
    ];
    for (ty, content, want) in rows {
        assert_eq!(
            kinds(&media_refs(&event(ty, content))),
            want,
            "{ty} {content}"
        );
    }
    let file = media_refs(&event("file", r#"{"file_key":"f","file_name":"报告.pdf"}"#));
    assert_eq!(file[0].name.as_deref(), Some("报告.pdf"));
    let many: Vec<_> = (0..40)
        .map(|i| json!([{"tag": "img", "image_key": format!("img_{i}")}]))
        .collect();
    let post = json!({"title": "", "content": many}).to_string();
    assert_eq!(media_refs(&event("post", &post)).len(), MAX_ITEMS);
}

#[test]
fn the_description_text_stays_beside_the_media() {
    let i = to_inbound(
        &key(),
        &event("image", r#"{"image_key":"img_a"}"#),
        "ou_bot",
        0,
    )
    .expect("taken");
    assert_eq!(i.text, "[image]");
    assert_eq!(i.media.len(), 1);
    let i = to_inbound(&key(), &event("image", "{broken"), "ou_bot", 0).expect("taken");
    assert_eq!((i.text.as_str(), i.media.len()), ("[image]", 0));
}

/// A fake, a client and a long connection delivering what the fake pushes.
struct Link {
    fake: FakeFeishu,
    client: Client,
    rx: mpsc::Receiver<scv_feishu::ws::Delivery>,
    stop: CancellationToken,
}

impl Link {
    async fn start() -> Link {
        let fake = FakeFeishu::start(FakeConfig::default())
            .await
            .expect("fake");
        let client =
            Client::new(ClientOptions::new(fake.domain(), fake.credentials())).expect("client");
        let conn = Arc::new(LongConnection::new(client.clone(), WsOptions::default()));
        let (tx, rx) = mpsc::channel(16);
        let stop = CancellationToken::new();
        tokio::spawn({
            let stop = stop.clone();
            async move { conn.run(tx, stop).await }
        });
        Link {
            fake,
            client,
            rx,
            stop,
        }
    }

    /// The next pushed message, as the adapter maps it.
    async fn inbound(&mut self) -> Inbound {
        let d = tokio::time::timeout(WAIT, self.rx.recv())
            .await
            .expect("a delivery in time")
            .expect("connection running");
        let EventBody::Message(m) = d.parse().expect("event").body else {
            panic!("not a message event");
        };
        to_inbound(&key(), &m, "ou_bot", 0).expect("taken")
    }

    fn sender(&self) -> FeishuSender {
        FeishuSender::new(self.client.clone(), key())
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[tokio::test]
async fn an_inbound_photo_becomes_a_reference_and_fetch_writes_its_bytes() {
    let mut link = Link::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let photo = png(250_000);
    link.fake.push_p2p_image("ou_owner", photo.clone());
    let i = link.inbound().await;
    assert_eq!(i.media.len(), 1);
    assert_eq!(i.media[0].kind, MediaKind::Image);
    let dest = dir.path().join("photo.png");
    let n = link
        .sender()
        .fetch(&i.media[0], &i.reply, &dest, 10 << 20)
        .await
        .expect("fetched");
    assert_eq!(n, photo.len() as u64);
    assert_eq!(std::fs::read(&dest).expect("written"), photo);

    // A post's images, a file, a voice note and a video the same way.
    let (a, b) = (png(3000), png(4000));
    link.fake
        .push_p2p_post_images("ou_owner", "two shots", vec![a.clone(), b.clone()]);
    let i = link.inbound().await;
    assert_eq!(i.text, "two shots");
    for (m, want) in i.media.iter().zip([&a, &b]) {
        let dest = dir.path().join("p");
        link.sender()
            .fetch(m, &i.reply, &dest, 1 << 20)
            .await
            .expect("fetched");
        assert_eq!(&std::fs::read(&dest).expect("written"), want);
    }
    link.fake
        .push_p2p_file("ou_owner", "a.pdf", b"%PDF-1".to_vec());
    link.fake
        .push_p2p_audio("ou_owner", b"OggS voice".to_vec(), 1500);
    link.fake
        .push_p2p_video("ou_owner", "v.mp4", b"mp4 video".to_vec(), png(100));
    for (kind, bytes, name) in [
        (MediaKind::File, &b"%PDF-1"[..], Some("a.pdf")),
        (MediaKind::Audio, &b"OggS voice"[..], None),
        (MediaKind::Video, &b"mp4 video"[..], Some("v.mp4")),
    ] {
        let i = link.inbound().await;
        assert_eq!((i.media.len(), i.media[0].kind), (1, kind));
        assert_eq!(i.media[0].name.as_deref(), name);
        let dest = dir.path().join("f");
        link.sender()
            .fetch(&i.media[0], &i.reply, &dest, 1 << 20)
            .await
            .expect("fetched");
        assert_eq!(std::fs::read(&dest).expect("written"), bytes);
    }
}

#[tokio::test]
async fn a_fetch_that_cannot_succeed_says_why_and_keeps_nothing() {
    let mut link = Link::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let sender = link.sender();
    let reply = ReplyContext::default();
    let dest = dir.path().join("x");
    // A reference whose locator lost its key (a journal row from elsewhere, a bug).
    let broken = MediaRef {
        kind: MediaKind::Image,
        name: None,
        size: None,
        transcript: None,
        locator: json!({"m": "om_1"}),
    };
    let f = sender
        .fetch(&broken, &reply, &dest, 1 << 20)
        .await
        .unwrap_err();
    assert_eq!((f.class, f.code), (Class::Rejected, MEDIA_MALFORMED));
    assert!(f.message.contains("cannot be downloaded"), "{}", f.message);
    // Over the bridge's cap.
    link.fake.push_p2p_image("ou_owner", png(50_000));
    let i = link.inbound().await;
    let f = sender
        .fetch(&i.media[0], &i.reply, &dest, 10_000)
        .await
        .unwrap_err();
    assert_eq!(
        (f.class, f.code.as_str()),
        (Class::Rejected, "feishu.media_too_large")
    );
    assert!(
        f.message
            .starts_with("downloading the item from Feishu failed"),
        "{}",
        f.message
    );
    // Deleted on the platform meanwhile.
    link.fake.recall_message(i.msg_id.as_str());
    let f = sender
        .fetch(&i.media[0], &i.reply, &dest, 1 << 20)
        .await
        .unwrap_err();
    assert_eq!(f.code.as_str(), "feishu.media_unavailable");
    // Over the platform's 100 MB.
    link.fake.push_p2p_file("ou_owner", "huge.bin", vec![1; 10]);
    let i = link.inbound().await;
    let l: Locator = serde_json::from_value(i.media[0].locator.clone()).expect("locator");
    link.fake.make_resource_oversized(&l.message_id, &l.key);
    let f = sender
        .fetch(&i.media[0], &i.reply, &dest, u64::MAX)
        .await
        .unwrap_err();
    assert_eq!(f.code.as_str(), "feishu.media_too_large");
    assert!(
        std::fs::read_dir(dir.path()).expect("dir").next().is_none(),
        "nothing kept"
    );
    // The app lacks the download scope: a person's fix, naming the scope.
    link.fake.fail_resources_with(Some(99991672));
    let f = sender
        .fetch(&i.media[0], &i.reply, &dest, u64::MAX)
        .await
        .unwrap_err();
    assert_eq!(
        (f.class, f.code.as_str()),
        (Class::Fatal, "feishu.missing_scope")
    );
    assert!(f.message.contains("im:message"), "{}", f.message);
}

fn media_item(path: std::path::PathBuf, kind: MediaKind, outbox_key: &str) -> Outbound {
    Outbound {
        id: 1,
        account: key(),
        chat: ChatId::new("oc_p2p_ou_owner"),
        text: "[chart.png]".into(),
        idempotency_key: outbox_key.into(),
        reply: ReplyContext::default(),
        latest_reply: ReplyContext::default(),
        kind: OutboundKind::Reply,
        body: Body::Media(MediaOut {
            kind,
            path,
            name: "chart.png".into(),
        }),
        target: None,
        finishes: crate::ids::OutboxKey::first_piece_of(outbox_key).map(str::to_string),
    }
}

#[tokio::test]
async fn a_media_item_arrives_as_an_image_with_the_files_bytes_once() {
    let link = Link::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let bytes = png(120_000);
    let path = dir.path().join("chart.png");
    std::fs::write(&path, &bytes).expect("write");
    let item = media_item(path, MediaKind::Image, "feishu:work/om_9/1");
    let sent = link.sender().send(&item).await.expect("sent");
    // A retry after a crash between the send and its record: uploaded again, sent once.
    let again = link.sender().send(&item).await.expect("sent again");
    assert_eq!(sent.msg_id, again.msg_id);
    let got = link.fake.sent_media();
    assert_eq!(got.len(), 1, "one message for one outbox key");
    assert_eq!(got[0].msg_type, "image");
    assert_eq!(&got[0].upload.bytes[..], &bytes[..]);
    assert_eq!(got[0].uuid.as_deref(), Some("feishu:work/om_9/1"));
    assert_eq!(link.fake.uploads().len(), 2);
}

#[tokio::test]
async fn files_go_as_files_within_the_platforms_limits() {
    let link = Link::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let sender = link.sender();
    // An image over 10 MB goes as a file; a PDF as a file with its type.
    let big = dir.path().join("big.png");
    std::fs::write(&big, png((10 << 20) + 1)).expect("write");
    sender
        .send(&media_item(big, MediaKind::Image, "k1"))
        .await
        .expect("sent");
    let pdf = dir.path().join("r.pdf");
    std::fs::write(&pdf, b"%PDF-1.7").expect("write");
    let mut item = media_item(pdf, MediaKind::File, "k2");
    if let Body::Media(m) = &mut item.body {
        m.name = "report.pdf".into();
    }
    sender.send(&item).await.expect("sent");
    let got = link.fake.sent_media();
    assert_eq!(got.len(), 2);
    assert_eq!(
        (got[0].msg_type.as_str(), got[0].upload.file_type.as_deref()),
        ("file", Some("stream"))
    );
    assert_eq!(got[0].upload.bytes.len(), (10 << 20) + 1);
    assert_eq!(
        (got[1].msg_type.as_str(), got[1].upload.file_type.as_deref()),
        ("file", Some("pdf"))
    );
    assert_eq!(got[1].upload.file_name.as_deref(), Some("report.pdf"));

    // Refused before any upload: over 30 MB, empty, missing.
    let huge = dir.path().join("huge.bin");
    std::fs::File::create(&huge)
        .expect("create")
        .set_len((30 << 20) + 1)
        .expect("len");
    let empty = dir.path().join("empty.png");
    std::fs::write(&empty, b"").expect("write");
    let gone = dir.path().join("gone.png");
    let before = link.fake.upload_requests();
    for (path, code) in [
        (huge, "feishu.media_too_large"),
        (empty, "feishu.media_refused"),
        (gone, "feishu.media_file"),
    ] {
        let f = sender
            .send(&media_item(path, MediaKind::Image, "k3"))
            .await
            .unwrap_err();
        assert_eq!(
            (f.class, f.code.as_str()),
            (Class::Rejected, code),
            "{}",
            f.message
        );
    }
    assert_eq!(link.fake.upload_requests(), before);
    assert_eq!(link.fake.sent_media().len(), 2);
    // The app lacks the upload scope: a person's fix, naming the scope.
    link.fake.fail_uploads_with(Some(99991672));
    let png_path = dir.path().join("c.png");
    std::fs::write(&png_path, png(100)).expect("write");
    let f = sender
        .send(&media_item(png_path, MediaKind::Image, "k4"))
        .await
        .unwrap_err();
    assert_eq!(
        (f.class, f.code.as_str()),
        (Class::Fatal, "feishu.missing_scope")
    );
    assert!(f.message.contains("im:resource"), "{}", f.message);
}

#[tokio::test]
async fn in_a_group_the_file_goes_in_the_thread_of_the_question() {
    let link = Link::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let asked = link
        .fake
        .push_group_text("oc_group", "ou_owner", "the chart please", true)
        .message_id;
    let path = dir.path().join("chart.png");
    std::fs::write(&path, png(2000)).expect("write");
    let mut item = media_item(path, MediaKind::Image, "k-group");
    item.chat = ChatId::new("oc_group");
    item.reply = super::super::inbound::ReplyRef {
        message_id: Some(asked.clone()),
        group: true,
    }
    .to_context();
    link.sender().send(&item).await.expect("sent");
    let sent = link.fake.sent();
    let last = sent.last().expect("one sent");
    assert_eq!(last.msg_type, "image");
    assert_eq!(last.chat_id, "oc_group");
    assert_eq!(last.reply_to, Some((asked, true)));
}
