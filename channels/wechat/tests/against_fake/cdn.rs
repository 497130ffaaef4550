//! Media over the fake CDN: streamed download and decryption with each key form, the checks
//! that refuse damaged media, and the upload + sendmessage round trip the fake verifies.

use scv_wechat::cdn::MediaKey;
use scv_wechat::cdn_client::{MediaDownload, MediaError, UploadKind, download_url, media_item};
use scv_wechat::fake::UploadFault;
use scv_wechat::media::CdnMedia;

use super::{PROMPTLY, start};

fn media(param: &str) -> CdnMedia {
    CdnMedia {
        encrypt_query_param: Some(param.to_string()),
        ..CdnMedia::default()
    }
}

#[tokio::test]
async fn downloads_decrypt_with_every_key_form_and_check_size_and_md5() {
    let (_fake, h, client) = start().await;
    let dir = tempfile::tempdir().expect("dir");
    let plain: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let key = MediaKey::random();
    let param = h.cdn_put(&plain, Some(&key));
    let base = h.cdn_base_url();
    for form in [key.hex(), key.base64_raw(), key.base64_of_hex()] {
        let d = MediaDownload {
            url: download_url(&base, &media(&param)).expect("url"),
            key: Some(MediaKey::from_media_field(&form).expect("key")),
            max_bytes: 1 << 20,
            size: Some(plain.len() as u64),
            md5: None,
        };
        let dest = dir.path().join("a");
        assert_eq!(
            client.download_media(&d, &dest).await.expect("download"),
            plain.len() as u64
        );
        assert_eq!(std::fs::read(&dest).expect("read"), plain);
    }
    // full_url is used verbatim; a keyless image is served in plain.
    let plain_param = h.cdn_put(b"GIF89a-plain", None);
    let with_full = CdnMedia {
        full_url: Some(h.cdn_full_url(&plain_param)),
        ..CdnMedia::default()
    };
    let d = MediaDownload {
        url: download_url("http://unused.invalid", &with_full).expect("url"),
        key: None,
        max_bytes: 100,
        size: None,
        md5: None,
    };
    let dest = dir.path().join("b");
    client
        .download_media(&d, &dest)
        .await
        .expect("plain download");
    assert_eq!(std::fs::read(&dest).expect("read"), b"GIF89a-plain");
}

#[tokio::test]
async fn damaged_media_is_refused_never_kept_as_good() {
    let (_fake, h, client) = start().await;
    let dir = tempfile::tempdir().expect("dir");
    let key = MediaKey::random();
    let plain = vec![5u8; 5000];
    let good = h.cdn_put(&plain, Some(&key));
    let base = h.cdn_base_url();
    let d = |param: &str, key: MediaKey, max: u64, size: Option<u64>, md5: Option<&str>| {
        MediaDownload {
            url: download_url(&base, &media(param)).expect("url"),
            key: Some(key),
            max_bytes: max,
            size,
            md5: md5.map(str::to_string),
        }
    };
    let dest = dir.path().join("x");
    // A wrong key (fixed, so its padding check is deterministic).
    let wrong = client
        .download_media(
            &d(
                &good,
                MediaKey::from_bytes([1; 16]),
                1 << 20,
                Some(5000),
                None,
            ),
            &dest,
        )
        .await;
    assert!(
        matches!(wrong, Err(MediaError::Crypto(_) | MediaError::Mismatch(_))),
        "{wrong:?}"
    );
    // Truncated ciphertext.
    let cipher = scv_wechat::cdn::encrypt(&key, &plain);
    let cut = h.cdn_put_raw(cipher[..cipher.len() - 5].to_vec());
    let e = client
        .download_media(&d(&cut, key.clone(), 1 << 20, None, None), &dest)
        .await;
    assert!(matches!(e, Err(MediaError::Crypto(_))), "{e:?}");
    // Larger than allowed, and a huge declared size.
    let e = client
        .download_media(&d(&good, key.clone(), 1000, None, None), &dest)
        .await;
    assert!(matches!(e, Err(MediaError::TooLarge { .. })), "{e:?}");
    let e = client
        .download_media(&d(&good, key.clone(), 1 << 20, Some(u64::MAX), None), &dest)
        .await;
    assert!(matches!(e, Err(MediaError::TooLarge { .. })), "{e:?}");
    // Wrong MD5, wrong size, a 500.
    let e = client
        .download_media(
            &d(
                &good,
                key.clone(),
                1 << 20,
                None,
                Some("00000000000000000000000000000000"),
            ),
            &dest,
        )
        .await;
    assert!(matches!(e, Err(MediaError::Mismatch("md5"))), "{e:?}");
    let e = client
        .download_media(&d(&good, key.clone(), 1 << 20, Some(4999), None), &dest)
        .await;
    assert!(matches!(e, Err(MediaError::Mismatch("size"))), "{e:?}");
    h.cdn_download_fault(500);
    let e = client
        .download_media(&d(&good, key, 1 << 20, None, None), &dest)
        .await;
    assert!(matches!(&e, Err(e) if e.is_transient()), "{e:?}");
}

#[tokio::test]
async fn an_upload_is_verified_by_the_fake_and_retried_only_when_it_may_heal() {
    let (_fake, h, client) = start().await;
    let user = "peer@im.wechat";
    h.push_text(user, "hi");
    let token = h.latest_context_token(user).expect("token");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("chart.png");
    // 16-aligned on purpose: the ciphertext grows by a whole block.
    let plain: Vec<u8> = (0..4096u32).map(|i| (i % 256) as u8).collect();
    std::fs::write(&path, &plain).expect("write");
    let base = h.cdn_base_url();
    // A 500 and a 200 without the header are retried within the three attempts.
    h.cdn_upload_fault(UploadFault::ServerError);
    h.cdn_upload_fault(UploadFault::NoHeader);
    let up = client
        .upload_media(&base, &path, UploadKind::Image, user)
        .await
        .expect("upload");
    assert_eq!(up.filesize, 4112);
    client
        .send_media(
            user,
            Some(&token),
            media_item(UploadKind::Image, &up, "chart.png"),
            "c1",
        )
        .await
        .expect("send");
    let got = h.wait_for_media(1, PROMPTLY).await;
    assert_eq!(got[0].bytes, plain);
    assert_eq!(got[0].item_type, 2);
    // A file, through upload_param only.
    h.cdn_param_only(true);
    let up = client
        .upload_media(&base, &path, UploadKind::File, user)
        .await
        .expect("upload");
    client
        .send_media(
            user,
            Some(&token),
            media_item(UploadKind::File, &up, "chart.png"),
            "c2",
        )
        .await
        .expect("send file");
    let got = h.wait_for_media(2, PROMPTLY).await;
    assert_eq!(got[1].file_name.as_deref(), Some("chart.png"));
    // A 4xx is final: one attempt, no retry.
    let before = h.requests().len();
    h.cdn_upload_fault(UploadFault::Refuse(400, "bad".into()));
    h.cdn_upload_fault(UploadFault::ServerError);
    let e = client
        .upload_media(&base, &path, UploadKind::Image, user)
        .await;
    assert!(
        matches!(&e, Err(MediaError::Http { status: 400, message }) if message == "bad"),
        "{e:?}"
    );
    let _ = before;
    // An item with a wrong size is refused by sendmessage.
    let mut bad = media_item(UploadKind::Image, &up, "x");
    bad.image_item.as_mut().expect("image").mid_size = Some(4096);
    assert!(
        client
            .send_media(user, Some(&token), bad, "c3")
            .await
            .is_err()
    );
    assert_eq!(h.sent_media().len(), 2);
}

/// A CDN that sends the answer's head and a first piece, then nothing, on a real socket.
async fn stalling_cdn() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let head = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(&[7u8; 1000]).await;
                // Held open, silent, until the client gives up.
                let _ = s.read(&mut buf).await;
            });
        }
    });
    format!("http://{addr}/download")
}

// Paused clock: the idle timer fires without waiting for real; the 300 s transfer bound would
// fire instead if the stall were not noticed.
#[tokio::test(start_paused = true)]
async fn a_download_that_stalls_is_given_up_after_the_idle_time_not_the_transfer_bound() {
    let url = stalling_cdn().await;
    let client = scv_wechat::Client::new("http://127.0.0.1:9", None).expect("client");
    let dir = tempfile::tempdir().expect("dir");
    let d = MediaDownload {
        url,
        key: None,
        max_bytes: 1 << 20,
        size: None,
        md5: None,
    };
    let t0 = tokio::time::Instant::now();
    let got = client.download_media(&d, &dir.path().join("a")).await;
    let took = t0.elapsed();
    assert!(
        matches!(&got, Err(MediaError::Network(m)) if m.contains("stalled")),
        "{got:?}"
    );
    assert!(
        took >= scv_wechat::cdn_client::TRANSFER_IDLE && took < std::time::Duration::from_secs(30),
        "gave up after {took:?}"
    );
}
