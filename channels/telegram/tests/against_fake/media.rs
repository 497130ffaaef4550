//! Files both ways: byte equality, the download and upload limits, safe names, resends.

use std::time::Duration;

use scv_telegram::fake::FakeConfig;
use scv_telegram::limits::{MAX_DOWNLOAD_BYTES, MAX_UPLOAD_PHOTO_BYTES};
use scv_telegram::{Error, MediaKind, Offset, Rejection, UploadKind};

use crate::{rejected, start, start_with};

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

#[tokio::test]
async fn an_inbound_document_downloads_byte_equal_under_a_safe_name() {
    let (_fake, handle, client) = start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = bytes(300_000);
    handle.push_file(
        handle.owner_chat(),
        "document",
        &data,
        "../../etc/report.pdf",
    );
    handle.push_file(handle.owner_chat(), "photo", &data[..1000], "");
    let batch = client.get_updates(Offset::START).await.expect("poll");
    let doc = batch.updates[0]
        .message()
        .and_then(|m| m.media())
        .expect("media");
    assert_eq!(doc.kind, MediaKind::Document);
    assert_eq!(
        doc.file_name.as_deref(),
        Some("report.pdf"),
        "no way out of the inbox"
    );
    assert_eq!(doc.file_size, Some(300_000));
    let file = client.get_file(&doc.file_id).await.expect("getFile");
    let dest = dir.path().join("report.pdf");
    let n = client
        .download(&file, &dest, MAX_DOWNLOAD_BYTES)
        .await
        .expect("download");
    assert_eq!(n, 300_000);
    assert_eq!(std::fs::read(&dest).expect("read"), data);
    let photo = batch.updates[1]
        .message()
        .and_then(|m| m.media())
        .expect("photo");
    assert_eq!(photo.kind, MediaKind::Photo);
    let file = client.get_file(&photo.file_id).await.expect("getFile");
    let dest = dir.path().join("photo.jpg");
    client
        .download(&file, &dest, MAX_DOWNLOAD_BYTES)
        .await
        .expect("download");
    assert_eq!(std::fs::read(&dest).expect("read"), &data[..1000]);
}

#[tokio::test]
async fn a_file_over_20_mb_is_too_big_to_get() {
    let (_fake, handle, client) = start().await;
    let m = handle.push_big_file(
        handle.owner_chat(),
        "video",
        MAX_DOWNLOAD_BYTES + 1,
        "long.mp4",
    );
    let media = m.media().expect("video");
    assert_eq!(media.kind, MediaKind::Video);
    let e = rejected(client.get_file(&media.file_id).await, Rejection::FileTooBig);
    assert!(
        e.description()
            .is_some_and(|d| d.contains("file is too big"))
    );
}

#[tokio::test]
async fn a_download_over_the_callers_cap_stops_and_leaves_no_file() {
    let (_fake, handle, client) = start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let m = handle.push_file(handle.owner_chat(), "document", &bytes(5000), "a.bin");
    let mut file = client
        .get_file(&m.media().expect("doc").file_id)
        .await
        .expect("getFile");
    let dest = dir.path().join("a.bin");
    // Known size over the cap: refused before any request.
    let e = client.download(&file, &dest, 4999).await.expect_err("cap");
    assert!(
        matches!(
            e,
            Error::TooBig {
                size: 5000,
                limit: 4999,
                ..
            }
        ),
        "{e}"
    );
    // Unknown size: the stream is cut at the cap and the partial file removed.
    file.file_size = None;
    let e = client.download(&file, &dest, 4999).await.expect_err("cap");
    assert_eq!(
        e.class(),
        scv_telegram::ErrorClass::Rejected(Rejection::FileTooBig)
    );
    assert!(!dest.exists(), "no partial file left");
}

#[tokio::test]
async fn an_upload_arrives_byte_equal_and_resends_by_file_id() {
    let (_fake, handle, client) = start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chart.png");
    let data = bytes(200_000);
    std::fs::write(&path, &data).expect("write");
    let chat = handle.owner_chat().id;
    let sent = client
        .send_file(
            chat,
            UploadKind::Document,
            &path,
            "chart.png",
            Some("the chart"),
        )
        .await
        .expect("upload");
    let doc = sent.document.expect("a document");
    let up = &handle.uploads()[0];
    assert_eq!(
        (up.bytes.as_ref(), up.file_name.as_str()),
        (&data[..], "chart.png")
    );
    assert_eq!(up.caption.as_deref(), Some("the chart"));
    let again = client
        .resend_file(chat, UploadKind::Document, &doc.file_id)
        .await
        .expect("resend");
    assert_eq!(again.document.map(|d| d.file_id), Some(doc.file_id));
    let photo = client
        .send_file(chat, UploadKind::Photo, &path, "c.png", None)
        .await
        .expect("photo");
    assert_eq!(photo.photo.len(), 1);
}

#[tokio::test]
async fn an_upload_over_the_platforms_limit_gets_413() {
    // The fake's photo limit lowered so the test moves kilobytes, not 10 MB; the client's own
    // check uses the real limit, so the request reaches the fake.
    let config = FakeConfig {
        max_upload_photo: 1000,
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config, 1).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.jpg");
    std::fs::write(&path, bytes(1001)).expect("write");
    let chat = handle.owner_chat().id;
    let e = rejected(
        client
            .send_file(chat, UploadKind::Photo, &path, "big.jpg", None)
            .await,
        Rejection::FileTooBig,
    );
    assert!(matches!(e, Error::Api { code: 413, .. }), "{e}");
    assert!(handle.uploads().is_empty());
}

#[tokio::test]
async fn a_file_over_the_real_limit_is_refused_before_uploading() {
    let (_fake, handle, client) = start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.jpg");
    // Sparse: the size is there, the bytes are not.
    let f = std::fs::File::create(&path).expect("create");
    f.set_len(MAX_UPLOAD_PHOTO_BYTES + 1).expect("set_len");
    let chat = handle.owner_chat().id;
    let e = rejected(
        client
            .send_file(chat, UploadKind::Photo, &path, "huge.jpg", None)
            .await,
        Rejection::FileTooBig,
    );
    assert!(matches!(e, Error::TooBig { .. }), "{e}");
    let missing = client
        .send_file(
            chat,
            UploadKind::Document,
            &dir.path().join("gone"),
            "gone",
            None,
        )
        .await
        .expect_err("no such file");
    assert!(matches!(missing, Error::Io { .. }));
    assert!(
        !missing.to_string().contains("gone"),
        "no path in the error: {missing}"
    );
    assert!(handle.uploads().is_empty());
}

#[tokio::test]
async fn a_caption_over_1024_is_refused_as_too_long() {
    let (_fake, handle, client) = start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.txt");
    std::fs::write(&path, b"x").expect("write");
    let caption = "c".repeat(1025);
    let chat = handle.owner_chat().id;
    rejected(
        client
            .send_file(chat, UploadKind::Document, &path, "a.txt", Some(&caption))
            .await,
        Rejection::TooLong,
    );
}

#[tokio::test(start_paused = true)]
async fn a_download_link_expires_after_an_hour_and_get_file_renews_it() {
    let (_fake, handle, client) = start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let m = handle.push_file(handle.owner_chat(), "voice", &bytes(100), "");
    let media = m.media().expect("voice");
    assert_eq!(media.kind, MediaKind::Voice);
    let file = client.get_file(&media.file_id).await.expect("getFile");
    tokio::time::advance(scv_telegram::limits::FILE_LINK_LIFETIME + Duration::from_secs(1)).await;
    let dest = dir.path().join("v.ogg");
    let e = rejected(
        client.download(&file, &dest, MAX_DOWNLOAD_BYTES).await,
        Rejection::LinkExpired,
    );
    assert!(matches!(e, Error::Api { code: 404, .. }), "{e}");
    let file = client.get_file(&media.file_id).await.expect("renewed");
    client
        .download(&file, &dest, MAX_DOWNLOAD_BYTES)
        .await
        .expect("download");
    assert_eq!(std::fs::read(&dest).expect("read"), bytes(100));
}

#[tokio::test]
async fn unknown_file_ids_and_chats_are_refused() {
    let (_fake, handle, client) = start().await;
    rejected(client.get_file("no-such-file").await, Rejection::Other);
    let chat = handle.owner_chat().id;
    rejected(
        client
            .resend_file(chat, UploadKind::Photo, "no-such-file")
            .await,
        Rejection::Other,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("a.txt");
    std::fs::write(&path, b"x").expect("write");
    rejected(
        client
            .send_file(42, UploadKind::Document, &path, "a.txt", None)
            .await,
        Rejection::ChatUnreachable,
    );
}
