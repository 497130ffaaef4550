//! Groups: what privacy mode delivers, which messages address the bot (UTF-16 entities),
//! anonymous admins, migrated groups.

use scv_telegram::fake::FakeConfig;
use scv_telegram::{Offset, OutgoingText};
use serde_json::json;

use crate::{start, start_with};

#[tokio::test(start_paused = true)]
async fn group_messages_address_the_bot_by_command_mention_or_reply_in_utf16() {
    let (_fake, handle, client) = start().await;
    let bot = client.get_me().await.expect("me");
    let group = handle.group(-4_000_000_001, "team");
    let owner = handle.owner();
    // "😀 @scv_fake_bot hi": the emoji is 2 UTF-16 units, so the mention starts at 3.
    let mention = handle.push_message(
        json!({"chat": group, "from": owner, "text": "😀 @SCV_fake_bot hi",
        "entities": [{"type": "mention", "offset": 3, "length": 13}]}),
    );
    let other_bot = handle.push_message(
        json!({"chat": group, "from": owner, "text": "/new@other_bot",
        "entities": [{"type": "bot_command", "offset": 0, "length": 14}]}),
    );
    let command = handle.push_message(
        json!({"chat": group, "from": owner, "text": "/New@scv_fake_bot now",
        "entities": [{"type": "bot_command", "offset": 0, "length": 17}]}),
    );
    let chatter = handle.push_message(
        json!({"chat": group, "from": owner, "text": "@someone else",
        "entities": [{"type": "mention", "offset": 0, "length": 8}]}),
    );
    let broken = handle.push_message(json!({"chat": group, "from": owner, "text": "😀",
        "entities": [{"type": "mention", "offset": 1, "length": 99}]}));
    let batch = client.get_updates(Offset::START).await.expect("poll");
    assert_eq!(
        batch.updates.len(),
        3,
        "privacy mode held back the two that do not address it"
    );
    assert!(mention.addresses(&bot));
    assert!(!other_bot.addresses(&bot));
    assert!(command.addresses(&bot));
    assert_eq!(
        command.command(&bot.username),
        Some(("new".into(), "now".into()))
    );
    assert!(!chatter.addresses(&bot));
    assert!(
        !broken.addresses(&bot),
        "an entity off the text is ignored, not a panic"
    );
    let private = handle.push_text(handle.owner_chat(), "plain");
    assert!(private.addresses(&bot));
}

#[tokio::test(start_paused = true)]
async fn privacy_mode_delivers_only_commands_mentions_and_replies() {
    let (_fake, handle, client) = start().await;
    let bot = client.get_me().await.expect("me");
    assert!(
        !bot.can_read_all_group_messages,
        "privacy mode on by default"
    );
    let group = handle.group(-4_000_000_020, "team");
    let mine = client
        .send_text(&OutgoingText::plain(group.id, "I said"))
        .await
        .expect("sent");
    let owner = handle.owner();
    handle.push_message(json!({"chat": group, "from": owner, "text": "just chatting"}));
    handle.push_message(json!({"chat": group, "from": owner, "text": "/status"}));
    handle.push_message(json!({"chat": group, "from": owner, "text": "hey @scv_fake_bot"}));
    handle.push_message(json!({"chat": group, "from": owner, "text": "answer",
        "reply_to_message": mine}));
    let batch = client.get_updates(Offset::START).await.expect("poll");
    let texts: Vec<_> = batch
        .updates
        .iter()
        .filter_map(|u| u.message()?.text.clone())
        .collect();
    assert_eq!(texts, ["/status", "hey @scv_fake_bot", "answer"]);
    let reply = batch.updates[2].message().expect("reply");
    assert!(reply.addresses(&bot), "a reply to the bot addresses it");
}

#[tokio::test(start_paused = true)]
async fn with_privacy_off_every_group_message_arrives() {
    let config = FakeConfig {
        can_read_all_group_messages: true,
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config, 1).await;
    let bot = client.get_me().await.expect("me");
    assert!(bot.can_read_all_group_messages);
    let group = handle.group(-4_000_000_021, "team");
    let chatter = handle.push_text(group, "just chatting");
    let batch = client.get_updates(Offset::START).await.expect("poll");
    assert_eq!(batch.updates.len(), 1);
    assert!(
        !chatter.addresses(&bot),
        "delivered, but not addressed to the bot"
    );
}

#[tokio::test(start_paused = true)]
async fn an_anonymous_admin_is_not_the_owner() {
    let (_fake, handle, client) = start().await;
    let group = handle.group(-4_000_000_022, "team");
    let m = handle.push_anonymous_admin(group.clone(), "/new");
    let batch = client.get_updates(Offset::START).await.expect("poll");
    assert_eq!(batch.updates[0].message(), Some(&m));
    let from = m.from.expect("from");
    assert_eq!(from.username.as_deref(), Some("GroupAnonymousBot"));
    assert_ne!(from.id, handle.owner().id);
    assert_eq!(m.sender_chat.map(|c| c.id), Some(group.id));
}
