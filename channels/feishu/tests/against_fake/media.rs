//! Media against the fake: resource downloads (bytes equal, size caps, wrong type or key),
//! image and file uploads with the platform's limits, and media messages.
#![cfg(feature = "fake")]

use crate::common;

use std::path::Path;

use common::client_for;
use scv_feishu::fake::{FakeConfig, FakeFeishu};
use scv_feishu::media::{MAX_FILE_BYTES, MAX_IMAGE_BYTES, MediaMessage, ResourceType};
use scv_feishu::{Client, Error, ErrorClass, ReceiveId, classify};

/// A PNG signature followed by `len - 8` varied bytes.
fn png(len: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..len.saturating_sub(8)).map(|i| (i * 31 % 251) as u8));
    v
}

fn api_code(e: &Error) -> Option<i64> {
    match e {
        Error::Api { code, .. } => Some(*code),
        _ => None,
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

async fn setup() -> (FakeFeishu, Client, tempfile::TempDir) {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_for(&fake);
    (fake, client, tempfile::tempdir().unwrap())
}

/// A raw multipart upload, bypassing the client's own checks, to see the fake's answer.
async fn raw_upload(
    fake: &FakeFeishu,
    client: &Client,
    api: &str,
    fields: &[(&str, &str)],
    part: (&str, Vec<u8>),
) -> serde_json::Value {
    let token = client.tenant_token().await.unwrap();
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    form = form.part(
        part.0.to_string(),
        reqwest::multipart::Part::bytes(part.1).file_name("x.bin"),
    );
    reqwest::Client::new()
        .post(format!("{}{api}", fake.base_url()))
        .bearer_auth(token.expose())
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_received_image_and_file_download_byte_for_byte() {
    let (fake, client, dir) = setup().await;
    let image = png(300_000);
    let pushed = fake.push_p2p_image("ou_owner", image.clone());
    let dest = dir.path().join("photo.png");
    let got = client
        .download_resource(
            &pushed.pushed.message_id,
            &pushed.keys[0],
            ResourceType::Image,
            &dest,
            u64::MAX,
        )
        .await
        .unwrap();
    assert_eq!(got.bytes, image.len() as u64);
    assert_eq!(std::fs::read(&dest).unwrap(), image);
    assert_eq!(got.content_type.as_deref(), Some("image/png"));
    assert_eq!(files_in(dir.path()), vec!["photo.png"], "no temporary left");

    let pdf = b"%PDF-1.7 a report".to_vec();
    let pushed = fake.push_p2p_file("ou_owner", "报告.pdf", pdf.clone());
    let dest = dir.path().join("r.pdf");
    let got = client
        .download_resource(
            &pushed.pushed.message_id,
            &pushed.keys[0],
            ResourceType::File,
            &dest,
            1 << 20,
        )
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), pdf);
    assert_eq!(got.file_name.as_deref(), Some("报告.pdf"));
}

#[tokio::test]
async fn a_resource_over_the_cap_is_refused_and_leaves_no_file() {
    let (fake, client, dir) = setup().await;
    let pushed = fake.push_p2p_image("ou_owner", png(200_000));
    let (id, key) = (&pushed.pushed.message_id, &pushed.keys[0]);
    let dest = dir.path().join("big.png");
    // Refused from the declared length.
    let e = client
        .download_resource(id, key, ResourceType::Image, &dest, 100_000)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { limit: 100_000 }), "{e}");
    assert!(matches!(classify(&e), ErrorClass::Rejected { .. }));
    assert!(files_in(dir.path()).is_empty());
    // Without a length: counted while streaming, the partial file removed.
    fake.serve_resources_unsized(true);
    let e = client
        .download_resource(id, key, ResourceType::Image, &dest, 100_000)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    assert!(
        files_in(dir.path()).is_empty(),
        "{:?}",
        files_in(dir.path())
    );
    // Unsized but within the cap: complete.
    client
        .download_resource(id, key, ResourceType::Image, &dest, 300_000)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap().len(), 200_000);
    // Over the platform's 100 MB: 234037.
    fake.make_resource_oversized(id, key);
    let e = client
        .download_resource(
            id,
            key,
            ResourceType::Image,
            &dir.path().join("x"),
            u64::MAX,
        )
        .await
        .unwrap_err();
    assert_eq!(api_code(&e), Some(234037), "{e}");
    assert_eq!(classify(&e), ErrorClass::Rejected { code: 234037 });
}

#[tokio::test]
async fn only_a_key_of_that_message_and_of_the_right_type_is_served() {
    let (fake, client, dir) = setup().await;
    let img = fake.push_p2p_image("ou_owner", png(1000));
    let other = fake.push_p2p_file("ou_owner", "a.txt", b"abc".to_vec());
    let dest = dir.path().join("x");
    let code = |r: Result<_, Error>| api_code(&r.unwrap_err());
    // An image key asked as a file.
    let r = client
        .download_resource(
            &img.pushed.message_id,
            &img.keys[0],
            ResourceType::File,
            &dest,
            u64::MAX,
        )
        .await;
    assert_eq!(code(r), Some(234001));
    // Another message's key.
    let r = client
        .download_resource(
            &img.pushed.message_id,
            &other.keys[0],
            ResourceType::File,
            &dest,
            u64::MAX,
        )
        .await;
    assert_eq!(code(r), Some(234003));
    // A message the fake never handed out.
    let r = client
        .download_resource(
            "om_nope",
            &img.keys[0],
            ResourceType::Image,
            &dest,
            u64::MAX,
        )
        .await;
    assert_eq!(code(r), Some(234003));
    // A card's resources cannot be downloaded.
    let card = fake.push_p2p_raw("ou_owner", "interactive", r#"{"title":"x"}"#);
    let r = client
        .download_resource(
            &card.message_id,
            "img_x",
            ResourceType::Image,
            &dest,
            u64::MAX,
        )
        .await;
    assert_eq!(code(r), Some(234043));
    // A key that would change the path never leaves the client.
    let r = client
        .download_resource(
            &img.pushed.message_id,
            "../x",
            ResourceType::Image,
            &dest,
            u64::MAX,
        )
        .await;
    assert!(matches!(r, Err(Error::Invalid(_))));
    assert!(files_in(dir.path()).is_empty());
}

#[tokio::test]
async fn a_revoked_token_is_refetched_once_for_a_download() {
    let (fake, client, dir) = setup().await;
    let img = fake.push_p2p_image("ou_owner", png(5000));
    client.tenant_token().await.unwrap();
    fake.revoke_token();
    let dest = dir.path().join("a.png");
    client
        .download_resource(
            &img.pushed.message_id,
            &img.keys[0],
            ResourceType::Image,
            &dest,
            u64::MAX,
        )
        .await
        .unwrap();
    assert_eq!(fake.token_requests(), 2);
    assert_eq!(std::fs::read(&dest).unwrap().len(), 5000);
}

#[tokio::test]
async fn uploads_keep_the_platforms_limits_on_both_sides() {
    let (fake, client, dir) = setup().await;
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // The client refuses before sending: too large, empty, not an image.
    let big = write("big.png", &png(MAX_IMAGE_BYTES as usize + 1));
    assert!(matches!(
        client.upload_image(&big).await,
        Err(Error::TooLarge { .. })
    ));
    let empty = write("empty.png", b"");
    assert!(matches!(
        client.upload_image(&empty).await,
        Err(Error::Invalid(_))
    ));
    let text = write("notes.png", b"just text");
    assert!(matches!(
        client.upload_image(&text).await,
        Err(Error::Invalid(_))
    ));
    let huge = dir.path().join("huge.bin");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(MAX_FILE_BYTES + 1)
        .unwrap();
    assert!(matches!(
        client.upload_file(&huge, "huge.bin", None).await,
        Err(Error::TooLarge { .. })
    ));
    assert_eq!(fake.upload_requests(), 0, "nothing was sent");

    // The fake refuses the same on its own, with the platform's codes.
    let code = |v: serde_json::Value| v["code"].as_i64();
    let img = "/open-apis/im/v1/images";
    let msg = [("image_type", "message")];
    assert_eq!(
        code(
            raw_upload(
                &fake,
                &client,
                img,
                &msg,
                ("image", png(MAX_IMAGE_BYTES as usize + 1))
            )
            .await
        ),
        Some(234006)
    );
    assert_eq!(
        code(raw_upload(&fake, &client, img, &msg, ("image", Vec::new())).await),
        Some(234010)
    );
    assert_eq!(
        code(raw_upload(&fake, &client, img, &msg, ("image", b"text".to_vec())).await),
        Some(234011)
    );
    assert_eq!(
        code(raw_upload(&fake, &client, img, &[], ("image", png(100))).await),
        Some(234001)
    );
    assert_eq!(
        code(raw_upload(&fake, &client, img, &msg, ("file", png(100))).await),
        Some(234001)
    );
    let files = "/open-apis/im/v1/files";
    let pdf = [("file_type", "pdf"), ("file_name", "a.pdf")];
    assert_eq!(
        code(
            raw_upload(
                &fake,
                &client,
                files,
                &pdf,
                ("file", vec![7; MAX_FILE_BYTES as usize + 1])
            )
            .await
        ),
        Some(234006)
    );
    assert_eq!(
        code(raw_upload(&fake, &client, files, &pdf, ("file", Vec::new())).await),
        Some(234010)
    );
    let wrong = [("file_type", "zip"), ("file_name", "a.zip")];
    assert_eq!(
        code(raw_upload(&fake, &client, files, &wrong, ("file", vec![1])).await),
        Some(234001)
    );
    assert_eq!(
        code(
            raw_upload(
                &fake,
                &client,
                files,
                &[("file_type", "pdf")],
                ("file", vec![1])
            )
            .await
        ),
        Some(234001)
    );
    assert!(fake.uploads().is_empty());

    // Within the limits: keys handed out, bytes and fields kept.
    let photo = write("p.png", &png(MAX_IMAGE_BYTES as usize));
    let image_key = client.upload_image(&photo).await.unwrap();
    let doc = write("report.pdf", b"%PDF-1.7 body");
    let file_key = client.upload_file(&doc, "report.pdf", None).await.unwrap();
    let ups = fake.uploads();
    assert_eq!(ups[0].key, image_key);
    assert_eq!(ups[0].bytes.len() as u64, MAX_IMAGE_BYTES);
    assert_eq!(ups[1].key, file_key);
    assert_eq!(ups[1].file_type.as_deref(), Some("pdf"));
    assert_eq!(ups[1].file_name.as_deref(), Some("report.pdf"));
    assert_eq!(&ups[1].bytes[..], b"%PDF-1.7 body");
}

#[tokio::test]
async fn media_messages_name_uploads_and_are_sent_once_per_uuid() {
    let (fake, client, dir) = setup().await;
    let bytes = png(40_000);
    let p = dir.path().join("chart.png");
    std::fs::write(&p, &bytes).unwrap();
    let to = ReceiveId::OpenId("ou_owner".into());
    let image_key = client.upload_image(&p).await.unwrap();
    let media = MediaMessage::Image { image_key };
    let first = client.send_media(&to, &media, "out-1").await.unwrap();
    let again = client.send_media(&to, &media, "out-1").await.unwrap();
    assert_eq!(
        first.message_id, again.message_id,
        "same uuid, same message"
    );
    let sent = fake.sent_media();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].msg_type, "image");
    assert_eq!(&sent[0].upload.bytes[..], &bytes[..]);

    // A key never uploaded, or uploaded as the wrong kind, is refused.
    let e = client
        .send_media(
            &to,
            &MediaMessage::Image {
                image_key: "img_v2_made_up".into(),
            },
            "out-2",
        )
        .await
        .unwrap_err();
    assert_eq!(api_code(&e), Some(230001));
    let doc = dir.path().join("a.pdf");
    std::fs::write(&doc, b"%PDF").unwrap();
    let file_key = client.upload_file(&doc, "a.pdf", None).await.unwrap();
    let e = client
        .send_media(
            &to,
            &MediaMessage::Audio {
                file_key: file_key.clone(),
            },
            "out-3",
        )
        .await
        .unwrap_err();
    assert_eq!(api_code(&e), Some(230001), "audio needs an opus upload");
    let reply_to = fake.push_p2p_text("ou_owner", "send the pdf").message_id;
    client
        .reply_media(&reply_to, &MediaMessage::File { file_key }, false, "out-4")
        .await
        .unwrap();
    let sent = fake.sent_media();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        (sent[1].msg_type.as_str(), &sent[1].upload.bytes[..]),
        ("file", &b"%PDF"[..])
    );
}

/// An open platform whose token endpoint answers and whose resource endpoint sends the answer's
/// head and a first piece, then nothing, on a real socket.
async fn stalling_platform() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                loop {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                    if head.contains("tenant_access_token") {
                        let body =
                            r#"{"code":0,"msg":"ok","tenant_access_token":"t-1","expire":7200}"#;
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = s.write_all(answer.as_bytes()).await;
                    } else {
                        let _ = s
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                            .await;
                        let _ = s.write_all(&[7u8; 1000]).await;
                        // Held open, silent, until the client gives up.
                        let _ = s.read(&mut buf).await;
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

// Paused clock: the idle timer fires without waiting for real; the 15-minute transfer bound
// would fire instead if the stall were not noticed.
#[tokio::test(start_paused = true)]
async fn a_download_that_stalls_is_given_up_after_the_idle_time() {
    use scv_feishu::{ClientOptions, Credentials, Domain};
    let base = stalling_platform().await;
    let creds = Credentials::new("cli_a", "s");
    let client = Client::new(ClientOptions::new(Domain::Custom(base), creds)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let t0 = tokio::time::Instant::now();
    let got = client
        .download_resource(
            "om_1",
            "file_1",
            ResourceType::File,
            &dir.path().join("f"),
            1 << 20,
        )
        .await;
    let took = t0.elapsed();
    assert!(
        matches!(&got, Err(Error::Network(m)) if m.contains("stalled")),
        "{got:?}"
    );
    assert!(
        took >= scv_feishu::media::TRANSFER_IDLE && took < std::time::Duration::from_secs(30),
        "gave up after {took:?}"
    );
    assert!(files_in(dir.path()).is_empty(), "no partial file left");
}
