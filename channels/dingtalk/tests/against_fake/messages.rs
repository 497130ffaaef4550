//! Every message type over the socket, parsed: text in DMs and groups, media with download
//! codes, voice with recognition, quotes, non-org senders, self-echoes, other corps.

use scv_dingtalk::fake::{FakeConfig, Inbound as Push, InboundBody};
use scv_dingtalk::media::safe_file_name;
use scv_dingtalk::message::{Body, RichPart, RobotMessage};
use scv_dingtalk::stream::{AckReply, Inbound};

use crate::{OWNER, Running};

async fn receive(r: &mut Running, push: &Push) -> RobotMessage {
    r.fake.push(push);
    let d = r.next().await;
    let m = match d.parse() {
        Ok(Inbound::Message(m)) => *m,
        other => panic!("{other:?}"),
    };
    d.ack.ack(AckReply::Done).unwrap();
    m
}

#[tokio::test(start_paused = true)]
async fn every_message_type_parses() {
    let mut r = Running::start(FakeConfig::default()).await;
    let group = r.fake.config().groups[0].clone();
    let corp = r.fake.config().corp_id.clone();

    let m = receive(&mut r, &Push::text(OWNER, "hello")).await;
    assert!(m.is_direct() && m.addresses_bot() && !m.is_from_bot() && !m.is_foreign_corp());
    assert_eq!(m.body(), Body::Text("hello".into()));
    let owner = m.owner_key().unwrap();
    assert_eq!(
        (owner.corp_id.as_str(), owner.staff_id.as_str()),
        (corp.as_str(), OWNER)
    );
    assert!(m.session_webhook().is_some());
    assert!(!m.robot_code_differs(&r.fake.config().client_id));
    assert!(m.robot_code_differs("dingSomeOtherRobot"));

    let m = receive(&mut r, &Push::text(OWNER, "status?").in_group(&group, true)).await;
    assert_eq!(
        m.body(),
        Body::Text("status?".into()),
        "the leading space is trimmed"
    );
    assert!(!m.is_direct() && m.addresses_bot());
    assert_eq!(m.conversation_id, group);
    let m = receive(
        &mut r,
        &Push::text(OWNER, "chatter").in_group(&group, false),
    )
    .await;
    assert!(!m.addresses_bot());

    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn media_messages_carry_download_codes_and_voice_its_text() {
    let mut r = Running::start(FakeConfig::default()).await;
    let m = receive(&mut r, &Push::new(OWNER, InboundBody::Picture(vec![1, 2]))).await;
    assert!(
        matches!(m.body(), Body::Picture { download_code } if download_code.starts_with("dc-"))
    );
    let m = receive(
        &mut r,
        &Push::new(OWNER, InboundBody::RichText("see".into(), vec![3])),
    )
    .await;
    let Body::RichText(parts) = m.body() else {
        panic!()
    };
    assert_eq!(parts[0], RichPart::Text("see".into()));
    assert!(matches!(&parts[1], RichPart::Picture { .. }));
    let m = receive(
        &mut r,
        &Push::new(OWNER, InboundBody::Audio(vec![4], Some("转写文本".into()))),
    )
    .await;
    assert!(matches!(m.body(), Body::Audio { recognition: Some(t), .. } if t == "转写文本"));
    let m = receive(&mut r, &Push::new(OWNER, InboundBody::Video(vec![5]))).await;
    assert!(matches!(m.body(), Body::Video { video_type, .. } if video_type == "mp4"));
    let m = receive(
        &mut r,
        &Push::new(OWNER, InboundBody::File(vec![6], "../../etc/passwd".into())),
    )
    .await;
    let Body::File { file_name, .. } = m.body() else {
        panic!()
    };
    assert_eq!(safe_file_name(&file_name, "file"), "passwd");
    let m = receive(&mut r, &Push::new(OWNER, InboundBody::Unsupported)).await;
    assert!(matches!(m.body(), Body::Unsupported(n) if !n.is_empty()));
    let m = receive(
        &mut r,
        &Push::new(
            OWNER,
            InboundBody::Quote {
                text: "this".into(),
                quoted: "msgOld==".into(),
            },
        ),
    )
    .await;
    assert_eq!(m.quoted_msg_id(), Some("msgOld=="));
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn strangers_self_echoes_and_other_corps_are_recognisable() {
    let mut r = Running::start(FakeConfig::default()).await;
    let m = receive(&mut r, &Push::text("", "who am I")).await;
    assert!(
        m.owner_key().is_none(),
        "a non-org sender is never the owner"
    );
    let mut echo = Push::text(OWNER, "my own reply");
    echo.from_bot = true;
    assert!(receive(&mut r, &echo).await.is_from_bot());
    let mut foreign = Push::text(OWNER, "hi from elsewhere");
    foreign.corp_id = Some("dingOtherCorp".into());
    let m = receive(&mut r, &foreign).await;
    assert!(m.is_foreign_corp());
    assert_ne!(
        m.owner_key().unwrap().corp_id,
        r.fake.config().corp_id,
        "same staff id, other corp: not the owner"
    );
    r.stop().await.unwrap();
}
