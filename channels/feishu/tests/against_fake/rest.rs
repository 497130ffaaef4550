//! Token cache, REST calls and error classes against the fake.
#![cfg(feature = "fake")]

use crate::common;

use std::time::Duration;

use common::{client_for, client_with};
use scv_feishu::card::YesNoCard;
use scv_feishu::fake::{FakeConfig, FakeFeishu, RateLimitStyle};
use scv_feishu::{
    Client, ClientOptions, Credentials, Error, ErrorClass, FatalReason, MessageContent, ReceiveId,
    classify,
};
use serde_json::json;

fn owner() -> ReceiveId {
    ReceiveId::OpenId("ou_owner".into())
}

// On a paused clock (the token cache and the fake's expiry follow it), so the 200 ms that make
// the token stale pass at once.
#[tokio::test(start_paused = true)]
async fn token_is_cached_then_refreshed_ahead_of_expiry() {
    let fake = FakeFeishu::start(FakeConfig {
        token_expire: Duration::from_secs(10),
        ..FakeConfig::default()
    })
    .await
    .unwrap();
    let mut opts = ClientOptions::new(fake.domain(), fake.credentials());
    // Stale 150 ms after the fetch, long before the server's 10 s expiry.
    opts.token_margin = Duration::from_millis(9850);
    let client = Client::new(opts).unwrap();
    let t1 = client.tenant_token().await.unwrap();
    client.bot_info().await.unwrap();
    client.bot_info().await.unwrap();
    assert_eq!(fake.token_requests(), 1, "cached while fresh");
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.bot_info().await.unwrap();
    assert_eq!(fake.token_requests(), 2, "refreshed ahead of expiry");
    let t2 = client.tenant_token().await.unwrap();
    assert_ne!(t1, t2, "under 30 min left, the server mints a new token");
}

#[tokio::test]
async fn revoked_token_is_dropped_refetched_and_retried_once() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_for(&fake);
    client.bot_info().await.unwrap();
    fake.revoke_token();
    let info = client.bot_info().await.expect("retried with a new token");
    assert_eq!(info.open_id, "ou_bot");
    assert_eq!(fake.token_requests(), 2);
}

#[tokio::test]
async fn a_token_rejected_twice_is_not_retried_in_a_loop() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    fake.reject_all_tokens(true);
    let client = client_for(&fake);
    let err = client.bot_info().await.unwrap_err();
    assert!(matches!(err, Error::Api { code: 99991663, .. }), "{err:?}");
    assert_eq!(
        fake.token_requests(),
        2,
        "first fetch plus exactly one refetch"
    );
    assert_eq!(classify(&err), ErrorClass::Transient);
}

#[tokio::test]
async fn bad_app_secret_is_fatal() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_with(
        &fake,
        Credentials::new(fake.config().app_id.clone(), "wrong"),
    );
    let err = client.bot_info().await.unwrap_err();
    assert!(matches!(err, Error::Token { code: 10014, .. }), "{err:?}");
    assert_eq!(
        classify(&err),
        ErrorClass::Fatal {
            reason: FatalReason::BadCredentials
        }
    );
    assert!(
        !format!("{err} {err:?} {client:?}").contains("wrong"),
        "secret never printed"
    );
    let other_app = client_with(&fake, Credentials::new("cli_0000000000000000", "x"));
    let err = other_app.tenant_token().await.unwrap_err();
    assert_eq!(
        classify(&err),
        ErrorClass::Fatal {
            reason: FatalReason::BadCredentials
        }
    );
}

#[tokio::test]
async fn send_reply_patch_and_uuid_dedupe() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_for(&fake);
    let a = client
        .send(&owner(), &MessageContent::Text("hi".into()), "u-1")
        .await
        .unwrap();
    let b = client
        .send(&owner(), &MessageContent::Text("hi".into()), "u-1")
        .await
        .unwrap();
    assert_eq!(a.message_id, b.message_id, "same uuid, sent once");
    assert_eq!(fake.sent().len(), 1);
    let rec = &fake.sent()[0];
    assert_eq!(
        (rec.receive_id_type.as_str(), rec.receive_id.as_str()),
        ("open_id", "ou_owner")
    );
    assert_eq!(rec.content, json!({"text": "hi"}));
    assert_eq!(rec.uuid.as_deref(), Some("u-1"));

    let group = ReceiveId::ChatId("oc_team".into());
    let post = MessageContent::post_markdown("Report", "**all good**");
    let p = client.send(&group, &post, "u-2").await.unwrap();
    assert_eq!(p.chat_id.as_deref(), Some("oc_team"));
    let r = client
        .reply(
            &p.message_id,
            &MessageContent::Text("in thread".into()),
            true,
            "u-3",
        )
        .await
        .unwrap();
    assert!(r.thread_id.is_some());
    assert_eq!(fake.sent()[2].reply_to, Some((p.message_id.clone(), true)));

    let q = YesNoCard::new("q-5", "Confirm", "Go?");
    let c = client
        .send(&owner(), &MessageContent::Card(q.build()), "u-4")
        .await
        .unwrap();
    let done = q.resolved(&scv_feishu::card::Resolution::Withdrawn);
    client.patch_card(&c.message_id, &done).await.unwrap();
    assert_eq!(fake.patches()[0].card, done);
    let err = client.patch_card(&a.message_id, &done).await.unwrap_err();
    assert!(
        matches!(classify(&err), ErrorClass::Rejected { .. }),
        "a text message is not a card"
    );
    assert!(matches!(
        client.patch_card("../x", &done).await,
        Err(Error::Invalid(_))
    ));
}

#[tokio::test]
async fn a_withheld_response_still_delivers_and_the_resend_dedupes() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_for(&fake);
    fake.withhold_send_responses(true);
    let text = MessageContent::Text("once".into());
    let lost = tokio::time::timeout(
        Duration::from_millis(300),
        client.send(&owner(), &text, "u-lost"),
    )
    .await;
    assert!(lost.is_err(), "no response while withheld");
    assert_eq!(fake.sent().len(), 1, "but the message went out");
    fake.withhold_send_responses(false);
    let again = client.send(&owner(), &text, "u-lost").await.unwrap();
    assert_eq!(again.message_id, fake.sent()[0].message_id);
    assert_eq!(
        fake.sent().len(),
        1,
        "the resend with the same uuid dedupes"
    );
}

#[tokio::test]
async fn oversize_messages_are_rejected() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_for(&fake);
    let text = MessageContent::Text("a".repeat(151 * 1024));
    let err = client.send(&owner(), &text, "big-1").await.unwrap_err();
    assert_eq!(classify(&err), ErrorClass::Rejected { code: 230025 });
    let card = MessageContent::Card(YesNoCard::new("q", "T", "b".repeat(31 * 1024)).build());
    let err = client.send(&owner(), &card, "big-2").await.unwrap_err();
    assert_eq!(classify(&err), ErrorClass::Rejected { code: 230025 });
    // The same text size is fine as text under 150 KB.
    client
        .send(
            &owner(),
            &MessageContent::Text("a".repeat(100 * 1024)),
            "ok-1",
        )
        .await
        .unwrap();
}

// On a paused clock (the fake's rate window follows it), so waiting out the reset delay takes
// no real time.
#[tokio::test(start_paused = true)]
async fn five_per_receiver_then_slow_down_honoured() {
    let fake = FakeFeishu::start(FakeConfig {
        qps_window: Duration::from_millis(300),
        ..FakeConfig::default()
    })
    .await
    .unwrap();
    let client = client_for(&fake);
    for i in 0..5 {
        client
            .send(
                &owner(),
                &MessageContent::Text(format!("{i}")),
                &format!("q-{i}"),
            )
            .await
            .unwrap();
    }
    let err = client
        .send(&owner(), &MessageContent::Text("6".into()), "q-6")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Api {
                code: 99991400,
                http_status: 429,
                ..
            }
        ),
        "{err:?}"
    );
    let ErrorClass::SlowDown(wait) = classify(&err) else {
        panic!("not slow-down: {err:?}")
    };
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(300),
        "{wait:?}"
    );
    // Another receiver has its own budget.
    client
        .send(
            &ReceiveId::ChatId("oc_other".into()),
            &MessageContent::Text("x".into()),
            "q-o",
        )
        .await
        .unwrap();
    tokio::time::sleep(wait).await;
    client
        .send(&owner(), &MessageContent::Text("6".into()), "q-6")
        .await
        .expect("after the reset delay");
    assert_eq!(fake.sent().len(), 7);
}

#[tokio::test]
async fn per_chat_limit_230020_is_slow_down() {
    let fake = FakeFeishu::start(FakeConfig {
        qps_per_receiver: 1,
        rate_limit: RateLimitStyle::Code230020,
        ..FakeConfig::default()
    })
    .await
    .unwrap();
    let client = client_for(&fake);
    client
        .send(&owner(), &MessageContent::Text("1".into()), "a")
        .await
        .unwrap();
    let err = client
        .send(&owner(), &MessageContent::Text("2".into()), "b")
        .await
        .unwrap_err();
    assert!(matches!(classify(&err), ErrorClass::SlowDown(_)), "{err:?}");
}

#[tokio::test]
async fn bot_info_and_app_owner() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_for(&fake);
    let bot = client.bot_info().await.unwrap();
    assert_eq!((bot.open_id.as_str(), bot.activate_status), ("ou_bot", 2));
    let owner = client.app_owner().await.unwrap();
    assert_eq!(owner.open_id(), Some("ou_owner"));
}

#[tokio::test]
async fn only_the_apps_own_recent_unrecalled_cards_can_be_patched() {
    let fake = FakeFeishu::start(FakeConfig::default()).await.unwrap();
    let client = client_for(&fake);
    let q = YesNoCard::new("q-1", "Confirm", "Go?");
    let done = q.resolved(&scv_feishu::card::Resolution::Withdrawn);
    let send_card = |uuid: &'static str| {
        let (client, card) = (client.clone(), q.build());
        async move {
            client
                .send(&owner(), &MessageContent::Card(card), uuid)
                .await
                .unwrap()
        }
    };
    let rejected = |r: Result<(), Error>| {
        matches!(
            r.map_err(|e| classify(&e)),
            Err(ErrorClass::Rejected { .. })
        )
    };

    // A user's message is not the app's to patch.
    let pushed = fake.push_p2p_text("ou_owner", "hi");
    assert!(rejected(client.patch_card(&pushed.message_id, &done).await));

    // Fourteen days is the limit.
    let old = send_card("c-old").await;
    fake.age_message(&old.message_id, Duration::from_secs(14 * 24 * 3600 - 60));
    client.patch_card(&old.message_id, &done).await.unwrap();
    fake.age_message(&old.message_id, Duration::from_secs(120));
    assert!(rejected(client.patch_card(&old.message_id, &done).await));

    // A recalled card stays as it was.
    let gone = send_card("c-gone").await;
    fake.recall_message(&gone.message_id);
    let err = client
        .patch_card(&gone.message_id, &done)
        .await
        .unwrap_err();
    assert_eq!(classify(&err), ErrorClass::Rejected { code: 230011 });
    assert_ne!(fake.message_content(&gone.message_id), Some(done.clone()));

    // A card without update_multi cannot be patched either.
    let mut fixed = q.build();
    fixed["config"]["update_multi"] = json!(false);
    let f = client
        .send(&owner(), &MessageContent::Card(fixed), "c-fixed")
        .await
        .unwrap();
    assert!(rejected(client.patch_card(&f.message_id, &done).await));

    // Five patches per message per second, then slow down; a 500 is transient.
    let busy = send_card("c-busy").await;
    for _ in 0..5 {
        client.patch_card(&busy.message_id, &done).await.unwrap();
    }
    let err = client
        .patch_card(&busy.message_id, &done)
        .await
        .unwrap_err();
    assert!(matches!(classify(&err), ErrorClass::SlowDown(_)), "{err:?}");
    fake.fail_next_patches(1);
    let err = client.patch_card(&old.message_id, &done).await.unwrap_err();
    assert_eq!(classify(&err), ErrorClass::Transient);
    assert_eq!(fake.patch_requests(), 12);
    assert_eq!(
        fake.patches().len(),
        6,
        "only the accepted ones are recorded"
    );
}
