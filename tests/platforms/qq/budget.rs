//! The sender's reply windows and budget on a hand-moved clock, against the fake over real
//! sockets: 60 minutes one-to-one, 5 minutes in groups, 5 replies per message with `msg_seq`
//! 1..5, a closed window refused here (as waiting for the owner) before QQ is asked, and a piece
//! sent again repeating its `msg_id` + `msg_seq`, so QQ shows it once.

use std::time::Duration;

use scv_bridge::adapters::qq::QqSender;
use scv_bridge::clock::Clock;
use scv_bridge::conversation::body::Body;
use scv_bridge::conversation::{ChatId, ChatSender, Outbound, OutboundKind, ReplyContext};
use scv_bridge::failure::Class;
use scv_bridge::ids::{AccountKey, Channel};
use scv_bridge::store::{AccountState, Store};
use scv_bridge::words::Language;
use scv_qq::fake::FakeQq;

use super::support::*;

const START_MS: u64 = 1_800_000_000_000;

/// The reply context the intake journals with a message (`m`, `at`, `g`: the adapter's format).
fn reply(msg_id: &str, at: u64, group: bool) -> ReplyContext {
    ReplyContext(serde_json::json!({"m": msg_id, "at": at, "g": group}).to_string())
}

fn answer(chat: &str, text: &str, reply: &ReplyContext) -> Outbound {
    Outbound {
        id: 1,
        account: AccountKey::new(Channel::Qq, "bot"),
        chat: ChatId::new(chat),
        text: text.into(),
        idempotency_key: format!("k/{text}"),
        reply: reply.clone(),
        latest_reply: reply.clone(),
        kind: OutboundKind::Reply,
        body: Body::Text,
        target: None,
        finishes: None,
    }
}

async fn sender(fake: &FakeQq, clock: &Clock) -> (QqSender, scv_bridge::store::StoreGuard) {
    let (store, guard) = Store::open_in_memory().expect("store");
    let client = scv_qq::Client::new(fake.options()).expect("client");
    let s = QqSender::new(
        client,
        AccountKey::new(Channel::Qq, "bot"),
        AccountState::new(store, "qq:bot"),
        clock.clone(),
        Language::En,
    );
    (s, guard)
}

#[tokio::test]
async fn one_to_one_windows_last_an_hour_and_five_replies() {
    let fake = FakeQq::start(fake_config()).await.expect("fake");
    let clock = Clock::manual(START_MS);
    let (s, _g) = sender(&fake, &clock).await;
    let chat = OWNER.to_string();
    let m = fake.push_c2c(OWNER, "hi");
    let ctx = reply(&m.id, START_MS, false);
    for i in 1..=5 {
        s.send(&answer(&chat, &format!("piece {i}"), &ctx))
            .await
            .expect("inside the budget");
    }
    let sixth = s
        .send(&answer(&chat, "piece 6", &ctx))
        .await
        .expect_err("over");
    assert_eq!(sixth.class, Class::WindowClosed);
    let seqs: Vec<u64> = fake.sent().iter().map(|r| r.msg_seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);

    let late = fake.push_c2c(OWNER, "later");
    let ctx = reply(&late.id, START_MS, false);
    clock.advance(Duration::from_secs(59 * 60));
    s.send(&answer(&chat, "at 59 min", &ctx))
        .await
        .expect("open");
    clock.advance(Duration::from_secs(60 - 10));
    let closed = s
        .send(&answer(&chat, "at 60 min", &ctx))
        .await
        .expect_err("closed");
    assert_eq!(closed.class, Class::WindowClosed);
    assert_eq!(
        closed.message,
        "QQ lets the bot write only in reply; send the bot any message"
    );
    assert_eq!(fake.sent().len(), 6);
    assert!(fake.rejected().is_empty(), "QQ was never asked in vain");
}

#[tokio::test]
async fn group_windows_last_five_minutes() {
    let fake = FakeQq::start(fake_config()).await.expect("fake");
    let clock = Clock::manual(START_MS);
    let (s, _g) = sender(&fake, &clock).await;
    let group = "GROUP00000000000000000000000008";
    let m = fake.push_group_at(group, "MEMBER0000000000000000000000008", "q");
    let ctx = reply(&m.id, START_MS, true);
    let chat = format!("g:{group}");
    clock.advance(Duration::from_secs(4 * 60));
    s.send(&answer(&chat, "at 4 min", &ctx))
        .await
        .expect("open");
    clock.advance(Duration::from_secs(55));
    let closed = s
        .send(&answer(&chat, "at 4 min 55", &ctx))
        .await
        .expect_err("closed");
    assert_eq!(closed.class, Class::WindowClosed);
    let texts: Vec<String> = fake.sent().into_iter().map(|r| r.content).collect();
    assert_eq!(texts, ["at 4 min"]);
}

#[tokio::test]
async fn a_piece_sent_again_repeats_its_pair_and_qq_shows_it_once() {
    // What a restart does after a crash between QQ taking a reply and the outbox recording it:
    // the same outbox item goes to the sender again.
    let fake = FakeQq::start(fake_config()).await.expect("fake");
    let clock = Clock::manual(START_MS);
    let (s, _g) = sender(&fake, &clock).await;
    let chat = OWNER.to_string();
    let m = fake.push_c2c(OWNER, "hi");
    let ctx = reply(&m.id, START_MS, false);
    let item = answer(&chat, "the answer", &ctx);
    s.send(&item).await.expect("sent");
    s.send(&item).await.expect("counted as sent: QQ has it");
    let sent: Vec<(String, u64)> = fake
        .sent()
        .into_iter()
        .map(|r| (r.content, r.msg_seq))
        .collect();
    assert_eq!(sent, [("the answer".to_string(), 1)], "shown once");
    let refused: Vec<i64> = fake.rejected().iter().map(|r| r.code).collect();
    assert_eq!(refused, [40054005], "the repeat refused as a duplicate");
    // Another item still gets a fresh pair.
    s.send(&answer(&chat, "the next", &ctx))
        .await
        .expect("sent");
    assert_eq!(fake.sent().last().map(|r| r.msg_seq), Some(2));
}
