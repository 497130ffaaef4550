//! Proactive sends and cards (§4.3, §4.7, §7.14, §7.16).

use std::time::Duration;

use scv_wecom::card::{Button, ButtonCard, answered_card};
use scv_wecom::classify::{BAD_MSGTYPE, BAD_PARAMETER, DEVICE_NOT_SUPPORTED, INVALID_CHATID};
use scv_wecom::fake::FakeConfig;
use scv_wecom::frame::{cmd, new_req_id};
use scv_wecom::limits::{ACK_TIMEOUT, MARKDOWN_MAX_CHARS, SEND_PER_MINUTE, SEND_RATE_LIMIT_WAIT};
use scv_wecom::{CallbackKind, ChatTarget, Error, ErrorClass, Event};
use serde_json::json;

use crate::{OWNER, Running};

fn owner() -> ChatTarget {
    ChatTarget::Direct {
        userid: OWNER.into(),
    }
}

fn config() -> FakeConfig {
    FakeConfig {
        known_chats: vec![OWNER.into()],
        ..FakeConfig::default()
    }
}

fn yes_no(task_id: &str) -> ButtonCard {
    let b = |t: &str, k: &str| Button {
        text: t.into(),
        style: 1,
        key: k.into(),
    };
    ButtonCard {
        title: "Run rm -rf build?".into(),
        desc: None,
        buttons: vec![b("Yes", "yes"), b("No", "no")],
        task_id: task_id.into(),
    }
}

#[tokio::test(start_paused = true)]
async fn markdown_goes_to_known_chats_only_in_exact_case_split_at_the_limit() {
    let r = Running::start(config()).await;
    let long = format!(
        "{}\n\n{}",
        "a".repeat(MARKDOWN_MAX_CHARS - 10),
        "b".repeat(100)
    );
    r.conn.send_markdown(&owner(), &long).await.unwrap();
    let sent = r.fake.sent();
    assert_eq!(sent.len(), 2, "split at the paragraph");
    assert!(
        sent.iter()
            .all(|s| s.to == OWNER && s.body["msgtype"] == "markdown")
    );
    let lower = ChatTarget::Direct {
        userid: OWNER.to_lowercase(),
    };
    let err = r.conn.send_markdown(&lower, "hi").await.unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected {
            code: INVALID_CHATID
        }
    );
    let err = r.conn.send_markdown(&owner(), "   ").await.unwrap_err();
    assert!(
        matches!(err, Error::Invalid(_)),
        "blank text never goes out"
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_bad_msgtype_or_an_empty_payload_is_40008() {
    let r = Running::start(config()).await;
    for body in [
        json!({"chatid": OWNER, "msgtype": "text", "text": {"content": "x"}}),
        json!({"chatid": OWNER, "msgtype": "markdown", "markdown": {"content": ""}}),
        json!({"chatid": OWNER, "msgtype": "markdown"}),
    ] {
        let err = r
            .conn
            .command(cmd::SEND_MSG, &new_req_id(cmd::SEND_MSG), body, ACK_TIMEOUT)
            .await
            .unwrap_err();
        assert_eq!(err.class(), ErrorClass::Rejected { code: BAD_MSGTYPE });
    }
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn over_the_send_rate_is_a_slow_down_of_a_minute() {
    let r = Running::start(config()).await;
    for _ in 0..SEND_PER_MINUTE {
        r.conn.send_markdown(&owner(), "tick").await.unwrap();
    }
    let err = r
        .conn
        .send_markdown(&owner(), "one too many")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(45009));
    assert_eq!(err.class(), ErrorClass::SlowDown(SEND_RATE_LIMIT_WAIT));
    tokio::time::sleep(SEND_RATE_LIMIT_WAIT).await;
    r.conn
        .send_markdown(&owner(), "after the wait")
        .await
        .unwrap();
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn group_sends_refused_with_600039_are_rejected_not_retried() {
    let mut r = Running::start(config()).await;
    r.fake.push_group_text("wrkGrp01", OWNER, "@Bot hi");
    r.next().await;
    let group = ChatTarget::Group {
        chatid: "wrkGrp01".into(),
    };
    r.conn.send_markdown(&group, "to the group").await.unwrap();
    r.fake.refuse_group_sends(true);
    let err = r.conn.send_markdown(&group, "again").await.unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected {
            code: DEVICE_NOT_SUPPORTED
        }
    );
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_card_is_sent_the_owners_click_updates_it_within_5_s() {
    let mut r = Running::start(config()).await;
    r.conn.send_card(&owner(), &yes_no("q42")).await.unwrap();
    // task_id is unique per bot: the same one again is refused (client-valid, platform-refused).
    let err = r
        .conn
        .send_card(&owner(), &yes_no("q42"))
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected {
            code: BAD_PARAMETER
        }
    );
    // A card the platform would refuse never leaves the client.
    let mut bad = yes_no("q43");
    bad.buttons[1].key = "yes".into();
    assert!(matches!(
        r.conn.send_card(&owner(), &bad).await,
        Err(Error::Invalid(_))
    ));

    r.fake.click(OWNER, "q42", "yes");
    let (cb, handle) = r.next_handle().await;
    let CallbackKind::Event(Event::CardClick {
        event_key, task_id, ..
    }) = cb.kind
    else {
        panic!()
    };
    assert_eq!((event_key.as_str(), task_id.as_str()), ("yes", "q42"));
    // The wrong task_id is refused; the right one replaces the card for the clicker.
    let err = r
        .conn
        .update_card(
            &handle,
            &[OWNER.into()],
            answered_card("✅ Approved", "q41"),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        ErrorClass::Rejected {
            code: BAD_PARAMETER
        }
    );
    r.conn
        .update_card(
            &handle,
            &[OWNER.into()],
            answered_card("✅ Approved", "q42"),
        )
        .await
        .unwrap();
    let update = r
        .fake
        .sent()
        .into_iter()
        .find(|s| s.cmd == cmd::RESPOND_UPDATE)
        .unwrap();
    assert_eq!(update.body["userids"], json!([OWNER]));
    assert_eq!(
        update.body["template_card"]["main_title"]["title"],
        "✅ Approved"
    );

    // A second click is its own event (its own msgid) and its own handle; after 5 s, too late.
    let again = r.fake.click(OWNER, "q42", "yes");
    let (cb2, late) = r.next_handle().await;
    assert_eq!(cb2.msgid, again.msgid);
    assert_ne!(cb2.msgid, cb.msgid);
    tokio::time::advance(Duration::from_secs(5)).await;
    let err = r
        .conn
        .update_card(&late, &[], answered_card("x", "q42"))
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::HandleGone { code: 0 });
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_card_as_a_reply_on_the_message_handle() {
    let mut r = Running::start(config()).await;
    r.fake.push_text(OWNER, "delete it?");
    let (_, handle) = r.next_handle().await;
    r.conn.reply_card(&handle, &yes_no("q7")).await.unwrap();
    let sent = r.fake.sent();
    assert_eq!(sent[0].cmd, cmd::RESPOND_MSG);
    assert_eq!(sent[0].body["template_card"]["task_id"], "q7");
    r.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn injected_busy_and_not_subscribed_on_a_send_are_transient() {
    let r = Running::start(config()).await;
    for code in [-1, scv_wecom::classify::NOT_SUBSCRIBED, 846601, 846602] {
        r.fake
            .fail_next(cmd::SEND_MSG, scv_wecom::fake::Fault::Code(code), 1);
        let err = r.conn.send_markdown(&owner(), "x").await.unwrap_err();
        assert_eq!(err.class(), ErrorClass::Transient, "{code}");
    }
    r.conn
        .send_markdown(&owner(), "then it goes")
        .await
        .unwrap();
    r.stop().await.unwrap();
}
