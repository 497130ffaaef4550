//! Media both ways (§2.1, §4.4, §8.8): uploads per chat type, media replies, downloads.

use scv_qq::fake::{FAKE_FILE_TOO_LARGE, FAKE_MEDIA_SCOPE, FakeConfig};
use scv_qq::{Body, Error, ErrorClass, FileType, MediaSource, Rejection, Reply, Target, Trigger};
use serde_json::json;

use crate::{Running, fast, quick_options, start};

const USER: &str = "E4F1A0B2C3D4E5F60718293A4B5C6D7E";
const GROUP: &str = "GROUP0B2C3D4E5F60718293A4B5C6D7E";

#[tokio::test]
async fn an_upload_for_a_user_is_sent_as_a_media_reply() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "send me the chart");
    let to = Target::User(USER.into());
    let up = client
        .upload(
            &to,
            FileType::Image,
            &MediaSource::Data(vec![0x89, b'P', b'N', b'G']),
            None,
        )
        .await
        .expect("upload");
    assert_eq!(fake.uploads()[0].data_len, Some(4));
    let reply = Reply {
        trigger: Trigger::Message(m.id),
        msg_seq: 1,
    };
    client
        .send(
            &to,
            Some(&reply),
            &Body::Media {
                file_info: up.file_info.clone(),
            },
        )
        .await
        .expect("media reply");
    assert_eq!(fake.sent()[0].msg_type, 7);
    assert_eq!(
        fake.sent()[0].body["media"]["file_info"],
        up.file_info.as_str()
    );
}

#[tokio::test]
async fn a_group_upload_does_not_work_in_a_c2c_chat() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let up = client
        .upload(
            &Target::Group(GROUP.into()),
            FileType::File,
            &MediaSource::Url("https://h/x.pdf".into()),
            Some("x.pdf"),
        )
        .await
        .expect("group upload");
    let reply = Reply {
        trigger: Trigger::Message(m.id),
        msg_seq: 1,
    };
    let err = client
        .send(
            &Target::User(USER.into()),
            Some(&reply),
            &Body::Media {
                file_info: up.file_info,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected(Rejection::Other {
            code: FAKE_MEDIA_SCOPE
        })
    );
}

#[tokio::test]
async fn an_inline_file_over_the_platforms_limit_is_refused() {
    let (_fake, client) = start(FakeConfig {
        max_file_bytes: 8,
        ..FakeConfig::default()
    })
    .await;
    let to = Target::User(USER.into());
    let err = client
        .upload(
            &to,
            FileType::File,
            &MediaSource::Data(vec![0; 9]),
            Some("a.bin"),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected(Rejection::Other {
            code: FAKE_FILE_TOO_LARGE
        })
    );
}

#[tokio::test]
async fn an_inbound_voice_attachment_without_a_scheme_is_downloaded_with_its_transcript() {
    let mut run = Running::start(fast(), quick_options()).await;
    let url = run.fake.add_media("v.silk", b"#!SILK_V3 voice".to_vec());
    assert!(!url.contains("://"));
    let pushed = run.fake.push_c2c_with(
        USER,
        "",
        vec![json!({"content_type": "voice", "url": url,
        "asr_refer_text": "remind me at five", "size": 15})],
    );
    let d = run.next_event().await;
    let Ok(scv_qq::Event::Message(m)) = d.event else {
        panic!("a message")
    };
    assert_eq!(m.id, pushed.id);
    let a = &m.attachments[0];
    assert_eq!(a.asr_refer_text.as_deref(), Some("remind me at five"));
    let bytes = run
        .client
        .download(&a.url, scv_qq::limits::MAX_INBOUND_ATTACHMENT_BYTES)
        .await
        .expect("download");
    assert_eq!(bytes, b"#!SILK_V3 voice");
    let err = run.client.download(&a.url, 4).await.unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    let gone = run
        .client
        .download(&url.replace("v.silk", "nope"), 100)
        .await
        .unwrap_err();
    assert!(matches!(gone.class(), ErrorClass::Rejected(_)), "{gone}");
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_expired_file_info_is_refused() {
    let config = FakeConfig {
        media_ttl: std::time::Duration::from_secs(60),
        ..FakeConfig::default()
    };
    let (fake, client) = start(config).await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    let up = client
        .upload(
            &to,
            FileType::Image,
            &MediaSource::Data(vec![1, 2, 3]),
            None,
        )
        .await
        .unwrap();
    assert_eq!(up.ttl, 60);
    tokio::time::advance(std::time::Duration::from_secs(61)).await;
    let reply = Reply {
        trigger: Trigger::Message(m.id),
        msg_seq: 1,
    };
    let err = client
        .send(
            &to,
            Some(&reply),
            &Body::Media {
                file_info: up.file_info,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected(Rejection::Other {
            code: FAKE_MEDIA_SCOPE
        })
    );
}

#[tokio::test]
async fn an_upload_that_asks_the_platform_to_send_at_once_is_an_active_message() {
    // The client never asks for it; the fake refuses it as the platform does, and the answer's
    // code is the one the client reads as "needs a trigger".
    let (fake, _) = start(FakeConfig::default()).await;
    let token: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/app/getAppAccessToken", fake.base_url()))
        .json(&json!({"appId": fake.credentials().app_id, "clientSecret": fake.credentials().app_secret.expose()}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let resp = reqwest::Client::new()
        .post(format!("{}/v2/users/{USER}/files", fake.base_url()))
        .header(
            "Authorization",
            format!("QQBot {}", token["access_token"].as_str().unwrap()),
        )
        .json(&json!({"file_type": 1, "url": "https://h/x.png", "srv_send_msg": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let v: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(v["code"], 40034102);
    let as_read = Error::Api {
        call: scv_qq::Call::Upload,
        http_status: 400,
        code: 40034102,
        message: String::new(),
        retry_after: None,
    };
    assert_eq!(
        as_read.class(),
        ErrorClass::Rejected(Rejection::NeedsTrigger)
    );
}
