//! Media: downloads by code under a cap, uploads by type and size, and their refusals.

use std::time::Duration;

use scv_dingtalk::fake::{FakeConfig, Fault, UPLOAD_TOO_LARGE};
use scv_dingtalk::media::MediaKind;
use scv_dingtalk::send::Outgoing;
use scv_dingtalk::{Call, Error, ErrorClass};

use crate::{OWNER, start, start_with};

#[tokio::test(start_paused = true)]
async fn a_file_a_user_sent_downloads_under_the_cap() {
    let (fake, client) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let code = fake.add_media(&bytes, "report.pdf");
    let dest = dir.path().join("report.pdf");
    let got = client
        .download(&code, &dest, 1 << 20)
        .await
        .expect("downloaded");
    assert_eq!(got.bytes, 50_000);
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    // Over the cap: refused and nothing left behind.
    let dest = dir.path().join("big.pdf");
    let e = client.download(&code, &dest, 10_000).await.unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    assert_eq!(e.class(), ErrorClass::Rejected);
    assert!(!dest.exists());
    // An unknown code: rejected.
    let e = client
        .download("dc-unknown", &dir.path().join("x"), 1 << 20)
        .await
        .unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");
}

#[tokio::test(start_paused = true)]
async fn an_expired_download_url_is_transient_and_a_new_call_gets_a_fresh_one() {
    let (fake, client) = start_with(FakeConfig {
        download_url_lifetime: Duration::ZERO,
        ..FakeConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let code = fake.add_media(b"abc", "a.png");
    let e = client
        .download(&code, &dir.path().join("a.png"), 100)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Http {
                status: 403,
                call: Call::DownloadUrl,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.class(), ErrorClass::Transient);
}

#[tokio::test(start_paused = true)]
async fn uploads_return_a_media_id_the_robot_api_takes() {
    let (fake, client) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chart.png");
    std::fs::write(&path, vec![7u8; 4096]).unwrap();
    let media_id = client
        .upload(&path, MediaKind::Image)
        .await
        .expect("uploaded");
    assert!(media_id.starts_with('@'));
    let up = &fake.uploads()[0];
    assert_eq!(
        (up.media_type.as_str(), up.file_name.as_str(), up.size),
        ("image", "chart.png", 4096)
    );
    client
        .send_to_user(
            OWNER,
            &Outgoing::Image {
                photo_url: media_id,
            },
        )
        .await
        .expect("sent");
    assert_eq!(fake.sent()[0].msg_key, "sampleImageMsg");
}

#[tokio::test(start_paused = true)]
async fn upload_refusals_type_size_and_a_revoked_token() {
    let (fake, client) = start_with(FakeConfig {
        upload_cap: Some(1024),
        ..FakeConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("tool.exe");
    std::fs::write(&exe, b"MZ").unwrap();
    let e = client.upload(&exe, MediaKind::File).await.unwrap_err();
    assert!(matches!(e, Error::Errcode { errcode: 40004, .. }), "{e}");
    assert_eq!(e.class(), ErrorClass::Rejected);
    let big = dir.path().join("big.pdf");
    std::fs::write(&big, vec![0u8; 2048]).unwrap();
    let e = client.upload(&big, MediaKind::File).await.unwrap_err();
    assert!(
        matches!(e, Error::Errcode { errcode, .. } if errcode == UPLOAD_TOO_LARGE),
        "{e}"
    );
    assert_eq!(e.class(), ErrorClass::Rejected);
    // Over the platform's own limit: refused before any byte is sent.
    let voice = dir.path().join("long.mp3");
    std::fs::File::create(&voice)
        .unwrap()
        .set_len(3 * 1024 * 1024)
        .unwrap();
    let before = fake.calls(Call::Upload);
    let e = client.upload(&voice, MediaKind::Voice).await.unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    assert_eq!(fake.calls(Call::Upload), before);
    // The old API's token refusal (200 errcode 40014): one refetch and one retry.
    let ok = dir.path().join("ok.pdf");
    std::fs::write(&ok, b"%PDF").unwrap();
    fake.revoke_tokens();
    let tokens = fake.token_requests();
    client
        .upload(&ok, MediaKind::File)
        .await
        .expect("retried with a fresh token");
    assert_eq!(fake.token_requests(), tokens + 1);
    fake.fail_next(Call::Upload, Fault::Errcode(-1));
    assert_eq!(
        client
            .upload(&ok, MediaKind::File)
            .await
            .unwrap_err()
            .class(),
        ErrorClass::Transient
    );
}
