//! `sendMessage`: what the fake refuses, how each refusal classifies, and flood control.

use std::time::Duration;

use scv_telegram::fake::FakeConfig;
use scv_telegram::limits::MAX_TEXT_UTF16;
use scv_telegram::text::escape_html;
use scv_telegram::{ChatAction, ErrorClass, Keyboard, OutgoingText, ParseMode, Rejection};

use crate::{rejected, start, start_with};

#[tokio::test(start_paused = true)]
async fn text_goes_out_plain_and_as_html_and_is_recorded() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    let sent = client
        .send_text(&OutgoingText::plain(chat, "1 < 2 & so on"))
        .await
        .expect("plain");
    assert_eq!(sent.chat.id, chat);
    let html = format!("<b>bold</b> {}", escape_html("a<b> & \"c\""));
    let sent2 = client
        .send_text(&OutgoingText::html(chat, html.clone()))
        .await
        .expect("html");
    assert_eq!(
        sent2.message_id,
        sent.message_id + 1,
        "ids increase per chat"
    );
    assert_eq!(
        sent2.text.as_deref(),
        Some("bold a<b> & \"c\""),
        "the visible text"
    );
    let rec = handle.sent();
    assert_eq!(rec[1].text, html);
    assert_eq!(rec[1].parse_mode.as_deref(), Some("HTML"));
    client
        .send_chat_action(chat, ChatAction::Typing)
        .await
        .expect("typing");
    assert_eq!(handle.chat_actions()[0].action, "typing");
}

#[tokio::test(start_paused = true)]
async fn the_4096_limit_counts_visible_utf16_units() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    // Markup does not count: 4096 visible units inside tags pass.
    let full = format!("<b>{}</b>", "a".repeat(MAX_TEXT_UTF16));
    client
        .send_text(&OutgoingText::html(chat, full))
        .await
        .expect("exactly at the limit");
    tokio::time::advance(Duration::from_secs(1)).await;
    // An emoji is two units: 2049 of them are 4098.
    let over = "😀".repeat(2049);
    rejected(
        client.send_text(&OutgoingText::plain(chat, over)).await,
        Rejection::TooLong,
    );
}

#[tokio::test(start_paused = true)]
async fn malformed_html_empty_text_and_long_button_data_are_refused() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    let e = rejected(
        client.send_text(&OutgoingText::html(chat, "x < y")).await,
        Rejection::BadMarkup,
    );
    assert!(
        e.description()
            .is_some_and(|d| d.contains("can't parse entities"))
    );
    rejected(
        client.send_text(&OutgoingText::html(chat, "<b>open")).await,
        Rejection::BadMarkup,
    );
    rejected(
        client
            .send_text(&OutgoingText::html(chat, "<x>y</x>"))
            .await,
        Rejection::BadMarkup,
    );
    rejected(
        client.send_text(&OutgoingText::plain(chat, "  ")).await,
        Rejection::EmptyText,
    );
    let long = "q".repeat(65);
    let msg = OutgoingText::plain(chat, "ask").with_keyboard(Keyboard::row(&[("Yes", &long)]));
    rejected(client.send_text(&msg).await, Rejection::ButtonDataInvalid);
    assert!(
        handle.sent().is_empty(),
        "nothing refused is recorded as sent"
    );
    // The fix-up the class asks for (plain text) goes through.
    let plain = OutgoingText {
        parse_mode: None,
        ..OutgoingText::html(chat, "x < y")
    };
    client.send_text(&plain).await.expect("plain resend");
    assert_eq!(
        ParseMode::Html,
        OutgoingText::html(chat, "").parse_mode.expect("set")
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_blocked_and_migrated_chats_and_missing_reply_targets() {
    let (_fake, handle, client) = start().await;
    rejected(
        client.send_text(&OutgoingText::plain(42, "hi")).await,
        Rejection::ChatUnreachable,
    );
    let stranger = handle.stranger_chat(8_000_000_001).id;
    handle.block(stranger);
    let e = rejected(
        client.send_text(&OutgoingText::plain(stranger, "hi")).await,
        Rejection::ChatUnreachable,
    );
    assert!(matches!(e, scv_telegram::Error::Api { code: 403, .. }));
    let group = handle.group(-4_000_000_002, "old").id;
    handle.migrate(group, -1_000_000_000_002);
    rejected(
        client.send_text(&OutgoingText::plain(group, "hi")).await,
        Rejection::ChatMigrated {
            to: -1_000_000_000_002,
        },
    );
    client
        .send_text(&OutgoingText::plain(-1_000_000_000_002, "hi"))
        .await
        .expect("new id");
    let owner = handle.owner_chat().id;
    rejected(
        client
            .send_text(&OutgoingText::plain(owner, "re").replying_to(999, true))
            .await,
        Rejection::ReplyNotFound,
    );
    let sent = client
        .send_text(&OutgoingText::plain(owner, "re").replying_to(999, false))
        .await
        .expect("allow_sending_without_reply");
    assert!(sent.message_id > 0);
}

/// 429 carries `retry_after`; waiting exactly that long lets the send through.
#[tokio::test(start_paused = true)]
async fn a_chat_over_one_message_a_second_gets_429_and_waits_exactly_retry_after() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    for i in 0..3 {
        client
            .send_text(&OutgoingText::plain(chat, format!("{i}")))
            .await
            .expect("burst");
    }
    let e = client
        .send_text(&OutgoingText::plain(chat, "4"))
        .await
        .expect_err("flood");
    assert_eq!(
        e.class(),
        ErrorClass::SlowDown(Duration::from_secs(1)),
        "{e}"
    );
    let ErrorClass::SlowDown(wait) = e.class() else {
        unreachable!()
    };
    tokio::time::advance(wait - Duration::from_millis(1)).await;
    assert!(
        client
            .send_text(&OutgoingText::plain(chat, "4"))
            .await
            .is_err(),
        "not yet"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    client
        .send_text(&OutgoingText::plain(chat, "4"))
        .await
        .expect("exactly then");
    // Another chat has its own bucket.
    let other = handle.stranger_chat(8_000_000_002).id;
    client
        .send_text(&OutgoingText::plain(other, "x"))
        .await
        .expect("own bucket");
}

#[tokio::test(start_paused = true)]
async fn a_group_takes_twenty_a_minute() {
    let config = FakeConfig {
        chat_burst: 100,
        ..FakeConfig::default()
    };
    let (_fake, handle, client) = start_with(config, 1).await;
    let group = handle.group(-4_000_000_003, "busy").id;
    for i in 0..20 {
        client
            .send_text(&OutgoingText::plain(group, format!("{i}")))
            .await
            .expect("within 20");
    }
    let e = client
        .send_text(&OutgoingText::plain(group, "21"))
        .await
        .expect_err("flood");
    assert_eq!(
        e.class(),
        ErrorClass::SlowDown(Duration::from_secs(3)),
        "{e}"
    );
}

#[tokio::test(start_paused = true)]
async fn markdown_v2_with_an_unescaped_reserved_character_is_refused() {
    let (_fake, handle, client) = start().await;
    let chat = handle.owner_chat().id;
    let md = |text: &str| OutgoingText {
        parse_mode: Some(ParseMode::MarkdownV2),
        ..OutgoingText::plain(chat, text)
    };
    let e = rejected(
        client.send_text(&md("version 1.5")).await,
        Rejection::BadMarkup,
    );
    assert!(
        e.description().is_some_and(|d| d.contains("reserved")),
        "{e}"
    );
    let sent = client
        .send_text(&md("version 1\\.5 is *out*"))
        .await
        .expect("escaped");
    assert_eq!(sent.text.as_deref(), Some("version 1.5 is out"));
}

#[tokio::test(start_paused = true)]
async fn the_bot_takes_thirty_a_second_over_all_chats() {
    let (_fake, handle, client) = start().await;
    for i in 0..30 {
        let chat = handle.stranger_chat(8_100_000_000 + i).id;
        client
            .send_text(&OutgoingText::plain(chat, "news"))
            .await
            .expect("within 30/s");
    }
    let chat = handle.stranger_chat(8_100_000_999).id;
    let e = client
        .send_text(&OutgoingText::plain(chat, "news"))
        .await
        .expect_err("flood");
    assert_eq!(
        e.class(),
        ErrorClass::SlowDown(Duration::from_secs(1)),
        "{e}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_command_menu_is_set_per_language_and_pairing_codes_arrive_as_start() {
    let (_fake, handle, client) = start().await;
    let cmd = |c: &str, d: &str| scv_telegram::types::BotCommand {
        command: c.into(),
        description: d.into(),
    };
    let en = [
        cmd("new", "Start a new conversation"),
        cmd("stop", "Stop the answer"),
    ];
    let zh = [cmd("new", "开始新对话"), cmd("stop", "停止回答")];
    client.set_commands(&en, None).await.expect("default menu");
    client.set_commands(&zh, Some("zh")).await.expect("zh menu");
    assert_eq!(handle.commands("").expect("set")[0]["command"], "new");
    assert_eq!(
        handle.commands("zh").expect("set")[1]["description"],
        "停止回答"
    );
    // The owner opens the start link: the app sends `/start <code>` in the private chat.
    let bot = client.get_me().await.expect("me");
    let link = scv_telegram::login::start_link(&bot.username, "pair-7Q2").expect("valid");
    assert!(link.ends_with("?start=pair-7Q2"));
    let m = handle.push_message(serde_json::json!({"chat": handle.owner_chat(),
        "from": handle.owner(), "text": "/start pair-7Q2",
        "entities": [{"type": "bot_command", "offset": 0, "length": 6}]}));
    assert_eq!(
        m.command(&bot.username),
        Some(("start".into(), "pair-7Q2".into()))
    );
}
