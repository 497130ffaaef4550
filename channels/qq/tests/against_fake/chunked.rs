//! Files over the inline limit go up in blocks (§4.4, §8.8).

use std::time::Duration;

use scv_qq::fake::FakeConfig;
use scv_qq::limits::{MAX_INLINE_UPLOAD_BYTES, MAX_UPLOAD_BYTES};
use scv_qq::{Body, Error, ErrorClass, FileType, MediaSource, Rejection, Reply, Target, Trigger};

use crate::start;

const USER: &str = "E4F1A0B2C3D4E5F60718293A4B5C6D7E";

fn big() -> Vec<u8> {
    (0..MAX_INLINE_UPLOAD_BYTES as usize + 5)
        .map(|i| (i % 251) as u8)
        .collect()
}

#[tokio::test]
async fn a_file_over_the_inline_limit_goes_in_blocks_and_is_sent() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "the video please");
    let to = Target::User(USER.into());
    let data = big();
    let up = client
        .upload(
            &to,
            FileType::Video,
            &MediaSource::Data(data.clone()),
            Some("v.mp4"),
        )
        .await
        .expect("chunked");
    let rec = &fake.uploads()[0];
    assert_eq!((rec.data_len, rec.url.as_deref()), (Some(data.len()), None));
    let reply = Reply {
        trigger: Trigger::Message(m.id),
        msg_seq: 1,
    };
    client
        .send(
            &to,
            Some(&reply),
            &Body::Media {
                file_info: up.file_info,
            },
        )
        .await
        .expect("media reply");
}

#[tokio::test(start_paused = true)]
async fn a_busy_part_is_asked_again_every_second_until_the_platforms_timeout() {
    let (fake, client) = start(FakeConfig::default()).await;
    let to = Target::User(USER.into());
    fake.part_busy_next(2);
    let began = tokio::time::Instant::now();
    client
        .upload(&to, FileType::File, &MediaSource::Data(big()), None)
        .await
        .expect("after two retries");
    assert!(began.elapsed() >= Duration::from_secs(2));
    // Busy for longer than the fake's retry_timeout (5 s): a transient failure.
    fake.part_busy_next(100);
    let err = client
        .upload(&to, FileType::File, &MediaSource::Data(big()), None)
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.class()),
        (Some(40093001), ErrorClass::Transient)
    );
}

#[tokio::test]
async fn a_used_up_quota_and_an_oversized_file_are_refused() {
    let (fake, client) = start(FakeConfig::default()).await;
    let to = Target::User(USER.into());
    fake.upload_quota_used(true);
    let err = client
        .upload(&to, FileType::File, &MediaSource::Data(big()), None)
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Rejected(Rejection::Quota));
    let huge = vec![0u8; MAX_UPLOAD_BYTES as usize + 1];
    let err = client
        .upload(&to, FileType::File, &MediaSource::Data(huge), None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
    assert_eq!(
        fake.rejected().len(),
        1,
        "the oversized file never reached the wire"
    );
}
