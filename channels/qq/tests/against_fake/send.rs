//! Sending within the platform's rules (§4, §8.7, §8.10): each refusal of the fake, and the
//! class the client gives it.

use std::time::Duration;

use scv_qq::fake::{FAKE_TOO_LONG, FakeConfig, RateLimitStyle};
use scv_qq::text::defang_links;
use scv_qq::{Body, Button, ClickResult, Error, ErrorClass, Rejection, Reply, Target, Trigger};

use crate::start;

const USER: &str = "E4F1A0B2C3D4E5F60718293A4B5C6D7E";
const GROUP: &str = "GROUP0B2C3D4E5F60718293A4B5C6D7E";
const MEMBER: &str = "MEMBER2C3D4E5F60718293A4B5C6D7E";

fn reply(id: &str, msg_seq: u32) -> Reply {
    Reply {
        trigger: Trigger::Message(id.into()),
        msg_seq,
    }
}

fn text(t: &str) -> Body {
    Body::Text(t.into())
}

fn rejected(r: Result<scv_qq::SentMessage, Error>) -> Rejection {
    match r.map(|_| ()).expect_err("refused").class() {
        ErrorClass::Rejected(why) => why,
        other => panic!("not a rejection: {other:?}"),
    }
}

#[tokio::test]
async fn replies_carry_msg_id_and_msg_seq_in_c2c_and_groups() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let sent = client
        .send(
            &Target::User(USER.into()),
            Some(&reply(&m.id, 1)),
            &text("hello"),
        )
        .await
        .unwrap();
    assert!(!sent.id.is_empty());
    let g = fake.push_group_at(GROUP, MEMBER, "hey bot");
    client
        .send(
            &Target::Group(GROUP.into()),
            Some(&reply(&g.id, 1)),
            &text("hi all"),
        )
        .await
        .unwrap();
    let s = fake.sent();
    assert_eq!(
        (s[0].msg_id.as_deref(), s[0].msg_seq, s[0].content.as_str()),
        (Some(m.id.as_str()), 1, "hello")
    );
    assert_eq!(s[1].to, format!("group:{GROUP}"));
}

#[tokio::test]
async fn without_a_trigger_the_send_is_refused_and_must_wait_for_the_owner() {
    let (fake, client) = start(FakeConfig::default()).await;
    let why = rejected(
        client
            .send(&Target::User(USER.into()), None, &text("digest"))
            .await,
    );
    assert_eq!(why, Rejection::NeedsTrigger);
    let why = rejected(
        client
            .send(&Target::Group(GROUP.into()), None, &text("digest"))
            .await,
    );
    assert_eq!(why, Rejection::NeedsTrigger);
    let codes: Vec<i64> = fake.rejected().iter().map(|r| r.code).collect();
    assert_eq!(codes, vec![40034102, 40034105]);
}

#[tokio::test]
async fn a_repeated_msg_seq_is_refused_and_the_next_seq_goes_through() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    client
        .send(&to, Some(&reply(&m.id, 1)), &text("one"))
        .await
        .unwrap();
    assert_eq!(
        rejected(client.send(&to, Some(&reply(&m.id, 1)), &text("one")).await),
        Rejection::DuplicateSeq
    );
    assert_eq!(fake.rejected()[0].code, 40054005);
    client
        .send(&to, Some(&reply(&m.id, 2)), &text("one"))
        .await
        .expect("next seq");
}

#[tokio::test]
async fn five_replies_per_message_then_the_window_is_closed() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    for seq in 1..=5 {
        client
            .send(&to, Some(&reply(&m.id, seq)), &text("part"))
            .await
            .expect("within budget");
    }
    assert_eq!(
        rejected(
            client
                .send(&to, Some(&reply(&m.id, 6)), &text("sixth"))
                .await
        ),
        Rejection::WindowClosed
    );
    assert_eq!(fake.rejected()[0].code, 40034024);
    // The owner writes again: a new trigger, a new budget.
    let again = fake.push_c2c(USER, "more");
    client
        .send(&to, Some(&reply(&again.id, 1)), &text("back"))
        .await
        .expect("new trigger");
}

#[tokio::test(start_paused = true)]
async fn c2c_replies_work_for_60_minutes_and_group_replies_for_5() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let g = fake.push_group_at(GROUP, MEMBER, "hi");
    let (user, group) = (Target::User(USER.into()), Target::Group(GROUP.into()));
    tokio::time::advance(Duration::from_secs(4 * 60 + 50)).await;
    client
        .send(&group, Some(&reply(&g.id, 1)), &text("in time"))
        .await
        .expect("group, 4m50s");
    tokio::time::advance(Duration::from_secs(20)).await;
    assert_eq!(
        rejected(
            client
                .send(&group, Some(&reply(&g.id, 2)), &text("late"))
                .await
        ),
        Rejection::WindowClosed
    );
    client
        .send(&user, Some(&reply(&m.id, 1)), &text("in time"))
        .await
        .expect("c2c, 5m10s");
    tokio::time::advance(Duration::from_secs(55 * 60)).await;
    assert_eq!(
        rejected(
            client
                .send(&user, Some(&reply(&m.id, 2)), &text("late"))
                .await
        ),
        Rejection::WindowClosed
    );
}

#[tokio::test]
async fn a_trigger_from_another_chat_is_refused() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let other = Target::User("OTHER0000000000000000000000000000".into());
    assert_eq!(
        rejected(
            client
                .send(&other, Some(&reply(&m.id, 1)), &text("x"))
                .await
        ),
        Rejection::WindowClosed
    );
    let unknown = reply("ROBOT1.0_never", 1);
    let to = Target::User(USER.into());
    assert_eq!(
        rejected(client.send(&to, Some(&unknown), &text("x")).await),
        Rejection::WindowClosed
    );
}

#[tokio::test]
async fn links_are_refused_and_defanged_text_goes_through() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    let raw = "docs at https://example.com/guide";
    assert_eq!(
        rejected(client.send(&to, Some(&reply(&m.id, 1)), &text(raw)).await),
        Rejection::Url
    );
    assert_eq!(fake.rejected()[0].code, 40054010);
    let d = defang_links(raw);
    assert_eq!(d.links, 1);
    client
        .send(&to, Some(&reply(&m.id, 2)), &Body::Text(d.text))
        .await
        .expect("defanged");
}

#[tokio::test]
async fn markdown_and_keyboards_need_their_permissions() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    let md = Body::Markdown {
        content: "**hi**".into(),
        keyboard: None,
    };
    assert_eq!(
        rejected(client.send(&to, Some(&reply(&m.id, 1)), &md).await),
        Rejection::Permission { code: 50056 }
    );
    let button = Button {
        id: "y".into(),
        label: "Yes".into(),
        visited_label: "Yes".into(),
        data: "yes 1234".into(),
        only: Some(USER.into()),
    };
    let kb = Body::Markdown {
        content: "ok?".into(),
        keyboard: Some(vec![vec![button]]),
    };
    assert_eq!(
        rejected(client.send(&to, Some(&reply(&m.id, 2)), &kb).await),
        Rejection::Permission { code: 304037 }
    );

    let granted = FakeConfig {
        markdown_allowed: true,
        keyboard_allowed: true,
        ..FakeConfig::default()
    };
    let (fake, client) = start(granted).await;
    let m = fake.push_c2c(USER, "hi");
    client
        .send(&to, Some(&reply(&m.id, 1)), &kb)
        .await
        .expect("granted");
    let body = &fake.sent()[0].body;
    assert_eq!(
        body["keyboard"]["content"]["rows"][0]["buttons"][0]["action"]["permission"]["specify_user_ids"]
            [0],
        USER
    );
}

#[tokio::test]
async fn text_over_the_limit_is_refused_by_the_fake_and_before_the_wire_by_the_client() {
    let (fake, client) = start(FakeConfig {
        max_text_chars: 10,
        ..FakeConfig::default()
    })
    .await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    let why = rejected(
        client
            .send(&to, Some(&reply(&m.id, 1)), &text("eleven chars"))
            .await,
    );
    assert_eq!(
        why,
        Rejection::Other {
            code: FAKE_TOO_LONG
        }
    );
    let long = "x".repeat(scv_qq::limits::MAX_TEXT_CHARS + 1);
    assert_eq!(
        rejected(
            client
                .send(&to, Some(&reply(&m.id, 2)), &Body::Text(long))
                .await
        ),
        Rejection::TooLarge
    );
    assert_eq!(
        fake.rejected().len(),
        1,
        "the client's own refusal never reached the wire"
    );
}

#[tokio::test]
async fn rate_limits_slow_down_1_s_doubling_and_a_success_resets_the_wait() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    fake.rate_limit_next(2, RateLimitStyle::Http429);
    let slow = |r: Result<scv_qq::SentMessage, Error>| r.map(|_| ()).unwrap_err().class();
    assert_eq!(
        slow(client.send(&to, Some(&reply(&m.id, 1)), &text("a")).await),
        ErrorClass::SlowDown(Duration::from_secs(1))
    );
    assert_eq!(
        slow(client.send(&to, Some(&reply(&m.id, 2)), &text("a")).await),
        ErrorClass::SlowDown(Duration::from_secs(2))
    );
    client
        .send(&to, Some(&reply(&m.id, 3)), &text("a"))
        .await
        .expect("limit over");
    fake.rate_limit_next(1, RateLimitStyle::Code22009);
    assert_eq!(
        slow(client.send(&to, Some(&reply(&m.id, 4)), &text("a")).await),
        ErrorClass::SlowDown(Duration::from_secs(1))
    );
    assert_eq!(fake.rejected().last().map(|r| r.code), Some(22009));
}

#[tokio::test]
async fn typing_goes_out_in_c2c_and_its_failure_is_transient() {
    let (fake, client) = start(FakeConfig::default()).await;
    let m = fake.push_c2c(USER, "hi");
    let to = Target::User(USER.into());
    client
        .send(&to, Some(&reply(&m.id, 1)), &Body::Typing { seconds: 30 })
        .await
        .expect("typing");
    assert_eq!(fake.sent()[0].body["input_notify"]["input_second"], 30);
    fake.fail_typing(true);
    let err = client
        .send(&to, Some(&reply(&m.id, 2)), &Body::Typing { seconds: 30 })
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.class()),
        (Some(50059), ErrorClass::Transient)
    );
}

#[tokio::test]
async fn a_click_is_acknowledged_and_its_event_id_answers_once() {
    let (fake, client) = start(FakeConfig::default()).await;
    let click = fake.push_click_c2c(USER, "yes 1234");
    client
        .ack_interaction(&click.id, ClickResult::Ok)
        .await
        .expect("ack");
    let acks = fake.interaction_acks();
    assert_eq!((acks[0].id.as_str(), acks[0].code), (click.id.as_str(), 0));
    let to = Target::User(USER.into());
    let by_event = Reply {
        trigger: Trigger::Event(click.id.clone()),
        msg_seq: 1,
    };
    client
        .send(&to, Some(&by_event), &text("approved"))
        .await
        .expect("event reply");
    let again = Reply {
        trigger: Trigger::Event(click.id.clone()),
        msg_seq: 2,
    };
    assert_eq!(
        rejected(client.send(&to, Some(&again), &text("again")).await),
        Rejection::WindowClosed
    );
    // A click id is not a msg_id.
    let g = fake.push_click_group(GROUP, MEMBER, "no 1");
    let wrong = reply(&g.id, 1);
    assert_eq!(
        rejected(
            client
                .send(&Target::Group(GROUP.into()), Some(&wrong), &text("x"))
                .await
        ),
        Rejection::WindowClosed
    );
    // FRIEND_ADD grants one passive message by its event id.
    let f = fake.push_friend_add(USER);
    let hello = Reply {
        trigger: Trigger::Event(f.frame_id),
        msg_seq: 1,
    };
    client
        .send(&to, Some(&hello), &text("welcome"))
        .await
        .expect("friend-add reply");
}

#[tokio::test]
async fn ids_that_are_not_platform_ids_never_reach_a_url() {
    let (fake, client) = start(FakeConfig::default()).await;
    let err = client
        .send(&Target::User("../users/x".into()), None, &text("x"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err}");
    assert!(
        client
            .ack_interaction("a/b", ClickResult::Ok)
            .await
            .is_err()
    );
    assert_eq!(fake.token_requests(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_reply_budget_stops_before_the_platform_would_refuse() {
    use scv_qq::window::ReplyBudget;
    let (fake, client) = start(FakeConfig::default()).await;
    let began = tokio::time::Instant::now();
    let now_ms = || began.elapsed().as_millis() as u64;
    let g = fake.push_group_at(GROUP, MEMBER, "hi");
    let message = scv_qq::Message {
        id: g.id.clone(),
        scene: scv_qq::Scene::Group {
            group_openid: GROUP.into(),
            member_openid: MEMBER.into(),
        },
        content: "hi".into(),
        timestamp: None,
        attachments: Vec::new(),
        from_bot: false,
        addressed: true,
    };
    let mut budget = ReplyBudget::for_message(&message, now_ms());
    let to = Target::Group(GROUP.into());
    tokio::time::advance(Duration::from_secs(4 * 60 + 49)).await;
    let r = budget.take(now_ms()).expect("inside the window");
    client
        .send(&to, Some(&r), &text("in time"))
        .await
        .expect("the platform agrees");
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(
        budget.take(now_ms()),
        None,
        "inside the margin: queue instead"
    );
    // The platform would still have taken it: the margin errs on the safe side.
    let late = Reply {
        trigger: Trigger::Message(g.id.clone()),
        msg_seq: 9,
    };
    client
        .send(&to, Some(&late), &text("x"))
        .await
        .expect("still open on the platform");
}
