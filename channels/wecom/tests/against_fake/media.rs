//! Media both ways: encrypted downloads that expire, chunked uploads, sends (§2.6, §4.6,
//! §7.10, §7.15).

use std::time::Duration;

use scv_wecom::classify::BAD_PARAMETER;
use scv_wecom::fake::{FakeConfig, Fault, MixedPart};
use scv_wecom::frame::cmd;
use scv_wecom::limits::{
    FILE_DOWNLOAD_TIMEOUT, INBOUND_MEDIA_MAX_BYTES, MEDIA_ID_LIFETIME, MEDIA_URL_VALIDITY,
    UPLOAD_CHUNK_BYTES,
};
use scv_wecom::media::MediaKind;
use scv_wecom::message::MediaRef;
use scv_wecom::{CallbackKind, ChatTarget, Content, Error, ErrorClass};

use crate::{OWNER, Running};

fn media_of(kind: &CallbackKind) -> MediaRef {
    let CallbackKind::Message { content, .. } = kind else {
        panic!("not a message")
    };
    content.media()[0].clone()
}

fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

#[tokio::test(start_paused = true)]
async fn images_files_and_videos_download_decrypted_with_the_files_name() {
    let config = FakeConfig {
        strip_key_padding: true,
        ..FakeConfig::default()
    };
    let mut r = Running::start(config).await;
    let photo = bytes(70_001);
    r.fake.push_image(OWNER, &photo);
    let (cb, _) = r.next_handle().await;
    let m = media_of(&cb.kind);
    assert!(
        !m.aeskey.as_deref().unwrap().ends_with('='),
        "padding stripped by the knob"
    );
    let got = r
        .conn
        .download(&m, INBOUND_MEDIA_MAX_BYTES, FILE_DOWNLOAD_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(got.bytes, photo);
    assert_eq!(got.file_name, None);
    r.fake
        .push_file(OWNER, "../季度报告 v2.pdf", b"%PDF-1.7 ...");
    let (cb, _) = r.next_handle().await;
    assert!(matches!(
        &cb.kind,
        CallbackKind::Message {
            content: Content::File(_),
            ..
        }
    ));
    let got = r
        .conn
        .download(
            &media_of(&cb.kind),
            INBOUND_MEDIA_MAX_BYTES,
            FILE_DOWNLOAD_TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(got.bytes, b"%PDF-1.7 ...");
    assert_eq!(
        got.file_name.as_deref(),
        Some("季度报告 v2.pdf"),
        "no path climbs out"
    );
    r.fake.push_video(OWNER, &bytes(1000));
    let (cb, _) = r.next_handle().await;
    let got = r
        .conn
        .download(
            &media_of(&cb.kind),
            INBOUND_MEDIA_MAX_BYTES,
            FILE_DOWNLOAD_TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(got.bytes, bytes(1000));
    r.fake.push_mixed(
        OWNER,
        None,
        &[
            MixedPart::Image(bytes(10)),
            MixedPart::Text("and".into()),
            MixedPart::Image(bytes(20)),
        ],
    );
    let (cb, _) = r.next_handle().await;
    let CallbackKind::Message { content, .. } = &cb.kind else {
        panic!()
    };
    let media = content.media();
    assert_eq!(media.len(), 2);
    let second = r
        .conn
        .download(media[1], INBOUND_MEDIA_MAX_BYTES, FILE_DOWNLOAD_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(second.bytes, bytes(20));
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_expired_url_a_wrong_key_and_an_oversized_item_are_rejected() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_image(OWNER, &bytes(5000));
    let (cb, _) = r.next_handle().await;
    let m = media_of(&cb.kind);
    let err = r
        .conn
        .download(&m, 4000, FILE_DOWNLOAD_TIMEOUT)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }));
    assert_eq!(err.class(), ErrorClass::Rejected { code: 0 });
    let wrong = MediaRef {
        aeskey: Some("c2hvcnQ=".into()),
        ..m.clone()
    };
    let err = r
        .conn
        .download(&wrong, INBOUND_MEDIA_MAX_BYTES, FILE_DOWNLOAD_TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Rejected { code: 0 });
    tokio::time::advance(MEDIA_URL_VALIDITY).await;
    let err = r
        .conn
        .download(&m, INBOUND_MEDIA_MAX_BYTES, FILE_DOWNLOAD_TIMEOUT)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Http { status: 404 }), "{err}");
    assert_eq!(err.class(), ErrorClass::Rejected { code: 0 });
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn uploads_go_in_chunks_within_the_concurrency_limit_and_send_by_media_id() {
    let mut r = Running::start(FakeConfig::default()).await;
    r.fake.push_text(OWNER, "send me the log");
    r.next().await;
    // Slow answers make concurrency real: more than 3 chunks in flight would be refused.
    r.fake.set_ack_delay(Duration::from_millis(200));
    let file = bytes(UPLOAD_CHUNK_BYTES * 11 + 5);
    r.fake.fail_next(cmd::UPLOAD_CHUNK, Fault::Code(-1), 1);
    let up = r
        .conn
        .upload(MediaKind::File, "build.log", &file)
        .await
        .unwrap();
    let chunks = r.fake.frames_of(cmd::UPLOAD_CHUNK);
    assert_eq!(
        chunks.len(),
        13,
        "12 chunks and one retried after the injected system error"
    );
    assert_eq!(chunks.iter().filter(|c| c.errcode != Some(0)).count(), 1);
    let first = chunks
        .iter()
        .map(|c| c.body.as_ref().unwrap()["chunk_index"].as_u64().unwrap())
        .min();
    assert_eq!(first, Some(0), "chunk_index is 0-based");
    r.conn
        .send_media(
            &ChatTarget::Direct {
                userid: OWNER.into(),
            },
            &up,
        )
        .await
        .unwrap();
    let sent = r.fake.sent();
    assert_eq!(
        sent.last().unwrap().body["file"]["media_id"],
        up.media_id.as_str()
    );
    // Three days on, the media_id is gone.
    tokio::time::advance(MEDIA_ID_LIFETIME).await;
    let err = r
        .conn
        .send_media(
            &ChatTarget::Direct {
                userid: OWNER.into(),
            },
            &up,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected {
            code: BAD_PARAMETER
        }
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn too_many_chunks_at_once_get_a_system_error_from_the_fake() {
    let r = Running::start(FakeConfig::default()).await;
    r.fake.set_ack_delay(Duration::from_millis(200));
    let init =
        serde_json::json!({"type": "file", "filename": "x", "total_size": 4, "total_chunks": 4});
    let id = r
        .conn
        .command(cmd::UPLOAD_INIT, "init1", init, Duration::from_secs(30))
        .await
        .unwrap();
    let upload_id = id.body.unwrap()["upload_id"].as_str().unwrap().to_owned();
    let ids: Vec<String> = (0..4).map(|i| format!("c{i}")).collect();
    let chunk = |i: usize| {
        let body =
            serde_json::json!({"upload_id": upload_id, "chunk_index": i, "base64_data": "eA=="});
        r.conn
            .command(cmd::UPLOAD_CHUNK, &ids[i], body, Duration::from_secs(30))
    };
    let (a, b, c, d) = tokio::join!(chunk(0), chunk(1), chunk(2), chunk(3));
    let refused: Vec<_> = [a, b, c, d].into_iter().filter_map(Result::err).collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(
        refused[0].class(),
        ErrorClass::Transient,
        "a system error is retried"
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_upload_whose_bytes_do_not_match_its_md5_is_refused_at_finish() {
    let r = Running::start(FakeConfig::default()).await;
    let t = Duration::from_secs(30);
    let init = serde_json::json!({"type": "file", "filename": "x", "total_size": 1, "total_chunks": 1,
        "md5": scv_wecom::media::md5_hex(b"y")});
    let up = r
        .conn
        .command(cmd::UPLOAD_INIT, "i1", init, t)
        .await
        .unwrap();
    let upload_id = up.body.unwrap()["upload_id"].as_str().unwrap().to_owned();
    let chunk =
        serde_json::json!({"upload_id": upload_id, "chunk_index": 0, "base64_data": "eA=="});
    r.conn
        .command(cmd::UPLOAD_CHUNK, "c1", chunk, t)
        .await
        .unwrap();
    let finish = serde_json::json!({"upload_id": upload_id});
    let err = r
        .conn
        .command(cmd::UPLOAD_FINISH, "f1", finish, t)
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected {
            code: BAD_PARAMETER
        }
    );
    // Over 100 chunks is refused by the client before anything is sent.
    let big = vec![0u8; UPLOAD_CHUNK_BYTES * 100 + 1];
    let err = r
        .conn
        .upload(MediaKind::File, "big", &big)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }));
    assert_eq!(r.fake.frames_of(cmd::UPLOAD_INIT).len(), 1);
    r.stop().await.unwrap();
}
