//! Replies and robot sends: the webhook while it lives, the robot API after, and every
//! refusal the fake makes, classified.

use std::time::Duration;

use scv_dingtalk::fake::{FakeConfig, Fault};
use scv_dingtalk::message::{RobotMessage, SessionWebhook};
use scv_dingtalk::send::Outgoing;
use scv_dingtalk::{Call, Client, Error, ErrorClass, FatalReason, NotSent, Secret};
use serde_json::json;

use crate::{OWNER, start, start_with};

fn text(s: &str) -> Outgoing {
    Outgoing::Text { content: s.into() }
}

fn md(title: &str, body: &str) -> Outgoing {
    Outgoing::Markdown {
        title: title.into(),
        text: body.into(),
    }
}

/// A message as the fake pushes it, without a socket: its payload from the push record.
async fn webhook_of(fake: &scv_dingtalk::fake::FakeDingTalk) -> SessionWebhook {
    let pushed = fake.push_text(OWNER, "hi");
    let hook = fake.payload_of(&pushed.msg_id).expect("recorded");
    RobotMessage::parse(&hook)
        .unwrap()
        .session_webhook()
        .expect("a webhook")
}

#[tokio::test(start_paused = true)]
async fn a_reply_goes_through_the_session_webhook_while_it_lives() {
    let (fake, client) = start().await;
    let hook = webhook_of(&fake).await;
    client
        .reply_by_webhook(&hook, &md("Answer", "**done**"))
        .await
        .expect("reply");
    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].call, Call::SessionWebhook);
    assert_eq!(sent[0].param["markdown"]["text"], "**done**");
    // Media cannot go that way: refused before any request.
    let e = client
        .reply_by_webhook(
            &hook,
            &Outgoing::Image {
                photo_url: "@m".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected);
    assert_eq!(fake.calls(Call::SessionWebhook), 1);
}

#[tokio::test(start_paused = true)]
async fn an_expired_webhook_is_refused_locally_or_by_the_platform() {
    // Less than the 5 min margin left: refused locally.
    let (fake, client) = start_with(FakeConfig {
        webhook_lifetime: Duration::from_secs(240),
        ..FakeConfig::default()
    })
    .await;
    let hook = webhook_of(&fake).await;
    let e = client
        .reply_by_webhook(&hook, &text("late"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::WebhookExpired), "{e}");
    assert_eq!(fake.calls(Call::SessionWebhook), 0);
    // The platform's own expiry (300001): the same error, and the robot API still works.
    let (fake, client) = start_with(FakeConfig {
        webhook_lifetime: Duration::from_secs(600),
        ..FakeConfig::default()
    })
    .await;
    let hook = webhook_of(&fake).await;
    tokio::time::advance(Duration::from_secs(601)).await;
    let e = client
        .reply_by_webhook(&hook, &text("late"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::WebhookExpired), "{e}");
    assert_eq!(e.class(), ErrorClass::Rejected);
    client
        .send_to_user(OWNER, &text("late"))
        .await
        .expect("the robot API instead");
    // A bad body on a live webhook: rejected.
    let hook = webhook_of(&fake).await;
    let e = client.reply_by_webhook(&hook, &text("")).await.unwrap_err();
    assert!(matches!(e, Error::Errcode { errcode: 40035, .. }), "{e}");
    assert_eq!(e.class(), ErrorClass::Rejected);
    // Throttled webhook (observed 130101): slow down.
    fake.fail_next(Call::SessionWebhook, Fault::Errcode(130101));
    let e = client
        .reply_by_webhook(&hook, &text("x"))
        .await
        .unwrap_err();
    assert!(matches!(e.class(), ErrorClass::SlowDown(d) if d >= Duration::from_secs(60)));
}

#[tokio::test(start_paused = true)]
async fn a_webhook_on_another_host_is_never_posted_to() {
    let (fake, client) = start().await;
    let hook = SessionWebhook {
        url: Secret::new("http://203.0.113.9/robot/sendBySession?session=x"),
        expires_at_ms: scv_dingtalk::send::now_ms() + 3_600_000,
    };
    let e = client
        .reply_by_webhook(&hook, &text("x"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "{e}");
    assert_eq!(fake.calls(Call::SessionWebhook), 0);
}

#[tokio::test(start_paused = true)]
async fn one_to_one_and_group_sends_return_the_process_query_key() {
    let (fake, client) = start().await;
    let sent = client
        .send_to_user(OWNER, &md("Hi", "# hello"))
        .await
        .expect("sent");
    assert!(sent.process_query_key.starts_with("pqk-"));
    let group = fake.config().groups[0].clone();
    let g = client
        .send_to_group(&group, &text("to all"))
        .await
        .expect("group");
    let rec = fake.sent();
    assert_eq!(rec[0].msg_key, "sampleMarkdown");
    assert_eq!(rec[0].param, json!({"title": "Hi", "text": "# hello"}));
    assert_eq!(rec[0].target, [OWNER]);
    assert_eq!(rec[1].process_query_key, g.process_query_key);
}

#[tokio::test(start_paused = true)]
async fn http_200_that_is_not_success_is_classified_from_the_body() {
    let (fake, client) = start().await;
    let e = client
        .send_to_user("no-such-staff", &text("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotSent {
                reason: NotSent::InvalidRecipient,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.class(), ErrorClass::Rejected);
    fake.fail_next(Call::BatchSend, Fault::FlowControlled);
    let e = client.send_to_user(OWNER, &text("x")).await.unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotSent {
                reason: NotSent::FlowControlled,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.class(),
        ErrorClass::SlowDown(scv_dingtalk::limits::THROTTLE_SLOW_DOWN)
    );
    assert!(fake.sent().is_empty(), "nothing was delivered");
}

#[tokio::test(start_paused = true)]
async fn more_than_the_qps_in_one_second_slows_down_for_the_platforms_second() {
    let (fake, client) = start().await;
    for i in 0..20 {
        client
            .send_to_user(OWNER, &text(&format!("{i}")))
            .await
            .expect("within the limit");
    }
    let e = client.send_to_user(OWNER, &text("21st")).await.unwrap_err();
    assert!(
        matches!(&e, Error::Api { status: 403, code, .. } if code.contains("QpsLimit")),
        "{e}"
    );
    let ErrorClass::SlowDown(wait) = e.class() else {
        panic!("{e}")
    };
    assert_eq!(wait, Duration::from_secs(1));
    tokio::time::advance(wait).await;
    client
        .send_to_user(OWNER, &text("after the wait"))
        .await
        .expect("allowed again");
    assert_eq!(fake.sent().len(), 21);
}

#[tokio::test(start_paused = true)]
async fn wrong_robot_missing_scope_bad_markup_and_limits_are_refused() {
    let (fake, client) = start().await;
    let mut o = fake.client_options();
    o.robot_code = Some("dingNotThisRobot".into());
    let e = Client::new(o)
        .unwrap()
        .send_to_user(OWNER, &text("x"))
        .await
        .unwrap_err();
    assert_eq!(
        e.class(),
        ErrorClass::Fatal(FatalReason::RobotNotFound),
        "{e}"
    );

    fake.fail_next(Call::BatchSend, Fault::missing_scope("qyapi_robot_sendmsg"));
    let e = client.send_to_user(OWNER, &text("x")).await.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Fatal(FatalReason::MissingScope));
    let Error::Api {
        required_scopes, ..
    } = &e
    else {
        panic!()
    };
    assert_eq!(required_scopes, &["qyapi_robot_sendmsg"]);

    // A markdown without a title is malformed for the platform.
    let e = client
        .send_to_user(OWNER, &md("", "body"))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Api { status: 400, code, .. } if code.starts_with("invalidParameter")),
        "{e}"
    );
    assert_eq!(e.class(), ErrorClass::Rejected);

    let group = fake.config().groups[0].clone();
    let big = text(&"字".repeat(5_001));
    let e = client.send_to_group(&group, &big).await.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");
    let e = client
        .send_to_group("cidNotMine==", &text("x"))
        .await
        .unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");

    let many: Vec<String> = (0..21).map(|i| format!("s{i}")).collect();
    let e = client.send_to_users(&many, &text("x")).await.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected);
    assert!(fake.sent().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_fake_refuses_more_than_twenty_recipients() {
    let (fake, client) = start().await;
    client.check_login().await.unwrap();
    let token = fake.current_token().expect("issued");
    let many: Vec<String> = (0..21).map(|i| format!("s{i}")).collect();
    let r = reqwest::Client::new()
        .post(format!(
            "{}/v1.0/robot/oToMessages/batchSend",
            fake.base_url()
        ))
        .header("x-acs-dingtalk-access-token", token)
        .json(
            &json!({"robotCode": fake.config().client_id, "userIds": many,
                      "msgKey": "sampleText", "msgParam": "{\"content\":\"x\"}"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test(start_paused = true)]
async fn gateways_hangs_and_the_monthly_quota() {
    let (fake, client) = start().await;
    fake.fail_next(Call::BatchSend, Fault::Status(502));
    assert_eq!(
        client
            .send_to_user(OWNER, &text("x"))
            .await
            .unwrap_err()
            .class(),
        ErrorClass::Transient
    );
    fake.fail_next(Call::BatchSend, Fault::Hang);
    let e = client.send_to_user(OWNER, &text("x")).await.unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert_eq!(e.class(), ErrorClass::Transient);
    fake.set_quota(Some(1));
    client
        .send_to_user(OWNER, &text("last of the month"))
        .await
        .unwrap();
    let e = client
        .send_to_user(OWNER, &text("over quota"))
        .await
        .unwrap_err();
    // The quota code is unconfirmed: the message is refused, the account is not stopped.
    assert_eq!(e.class(), ErrorClass::Rejected, "{e}");
}

#[tokio::test(start_paused = true)]
async fn yes_no_buttons_go_as_an_action_card_and_the_thinking_reaction_comes_and_goes() {
    let (fake, client) = start().await;
    let q = scv_dingtalk::confirm::yes_no_buttons("Confirm", "Deploy?", "q42", "Yes", "No");
    client.send_to_user(OWNER, &q).await.expect("sent");
    let rec = &fake.sent()[0];
    assert_eq!(rec.msg_key, "sampleActionCard2");
    assert_eq!(
        rec.param["actionURL1"],
        "dtmd://dingtalkclient/sendMessage?content=yes%20%23q42"
    );
    // A button card cannot go through the webhook.
    let hook = webhook_of(&fake).await;
    assert_eq!(
        client
            .reply_by_webhook(&hook, &q)
            .await
            .unwrap_err()
            .class(),
        ErrorClass::Rejected
    );

    use scv_dingtalk::emotion::THINKING;
    client
        .react("msgA==", "cidA==", THINKING)
        .await
        .expect("reacted");
    client
        .unreact("msgA==", "cidA==", THINKING)
        .await
        .expect("recalled");
    let e = fake.emotions();
    assert_eq!((e.len(), e[0].recall, e[1].recall), (2, false, true));
    assert_eq!(e[0].name, THINKING);
    let e = client.react("", "cidA==", THINKING).await.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rejected);
}
