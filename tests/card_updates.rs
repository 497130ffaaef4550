//! Messages updated in place: the pipeline's update items, with a MemoryChannel account (it edits
//! like Feishu) and a manual clock.

#[path = "confirm_support/mod.rs"]
mod support;

use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::confirm::ConfirmSettings;
use scv_bridge::conversation::ChatId;
use support::*;

fn feishu() -> BedOptions {
    let key = AccountKey::new(Channel::Feishu, "work");
    BedOptions {
        account: key.clone(),
        settings: ConfirmSettings {
            notify: Some(key),
            timezone: Some(chrono_tz::Asia::Shanghai),
        },
        ..BedOptions::default()
    }
}

#[tokio::test]
async fn an_update_replaces_the_sent_message_and_the_outbox_keeps_its_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    let chat = ChatId::new(OWNER);
    bed.conv
        .send_proactive(&bed.account, &chat, "first", Some("{\"v\":1}"), "k/a")
        .await
        .expect("queue");
    bed.nth_sent(1).await;
    let d = bed.conv.delivery("k/a").await.expect("store").expect("row");
    assert_eq!(d.state, "sent");
    assert_eq!(d.sent.msg_id.as_ref().map(|m| m.as_str()), Some("mem-1"));
    for _ in 0..2 {
        // Queued twice under one key: updated once.
        bed.conv
            .update_proactive(&bed.account, &chat, "k/a", "second", "{\"v\":2}", "k/b")
            .await
            .expect("queue");
    }
    within(bed.channel.wait_updates(1)).await;
    let u = &bed.channel.updates()[0];
    assert_eq!(
        (u.target.as_str(), u.rich.as_deref()),
        ("mem-1", Some("{\"v\":2}"))
    );
    bed.conv
        .send_proactive(&bed.account, &chat, "third", None, "k/c")
        .await
        .expect("queue");
    assert_eq!(bed.nth_sent(2).await, "third");
    assert_eq!(bed.channel.updates().len(), 1);
    assert_eq!(
        bed.conv
            .delivery_state("k/b")
            .await
            .expect("store")
            .as_deref(),
        Some("sent")
    );
    bed.shut().await;
}

#[tokio::test]
async fn an_update_of_a_message_never_sent_goes_out_as_a_new_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, feishu()).await;
    let chat = ChatId::new(OWNER);
    bed.conv
        .update_proactive(&bed.account, &chat, "k/none", "instead", "{\"v\":2}", "k/b")
        .await
        .expect("queue");
    assert_eq!(bed.nth_sent(1).await, "instead");
    assert_eq!(bed.channel.sent()[0].rich.as_deref(), Some("{\"v\":2}"));
    assert!(bed.channel.updates().is_empty());
    bed.shut().await;
}
