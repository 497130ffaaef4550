//! Text both ways: the round trip on the message's handle, who is answered (owner only, ids
//! case-sensitive, groups only by mention), duplicates, and the fallback when a handle is gone.

use scv_wecom::fake::Fault;
use scv_wecom::frame::cmd;

use crate::wecom::support::*;

#[tokio::test]
async fn the_owner_is_answered_on_the_handle_and_strangers_get_nothing() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let health = h.health();
    assert_eq!(
        health.bot_id.as_deref(),
        Some(h.fake.config().bot_id.as_str())
    );
    assert_eq!(health.user_id.as_deref(), Some(OWNER));

    let hello = h.fake.push_text(OWNER, "hello");
    assert!(hello.delivered);
    h.until("the answer", |f| f.bubbles().iter().any(|b| b.finished))
        .await;
    assert_eq!(h.reply_to(&hello.req_id).as_deref(), Some("echo: hello"));
    assert!(
        h.fake.bubbles().iter().all(|b| !b.spinning),
        "never a blank finish"
    );

    // A stranger, and the owner's id in another case (ids are case-sensitive), get nothing.
    let stranger = h.fake.push_text("LiSi", "hi?");
    let lower = h.fake.push_text("zhangsan", "me too?");
    let after = h.fake.push_text(OWNER, "after");
    h.until("the answer after", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == after.req_id && b.finished)
    })
    .await;
    h.settle().await;
    assert_eq!(h.agent.prompts(), ["hello", "after"]);
    assert_eq!(h.reply_to(&stranger.req_id), None);
    assert_eq!(h.reply_to(&lower.req_id), None);
    assert!(h.sent_to("LiSi").is_empty() && h.sent_to("zhangsan").is_empty());
    assert_eq!(h.fake.pipelined(), 0, "one frame in flight per handle");
    h.stop().await;
}

#[tokio::test]
async fn a_duplicate_callback_is_answered_once() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let once = h.fake.push_text(OWNER, "once");
    h.until("the answer", |f| f.bubbles().iter().any(|b| b.finished))
        .await;
    // The same msgid again, with its own and with a new req_id (§2.1, §7.8).
    h.fake.repush(&once, true);
    h.fake.repush(&once, false);
    let after = h.fake.push_text(OWNER, "after");
    h.until("the answer after", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == after.req_id && b.finished)
    })
    .await;
    h.settle().await;
    assert_eq!(h.agent.prompts(), ["once", "after"]);
    assert_eq!(h.replies().len(), 2, "{:?}", h.replies());
    assert!(h.sent_to(OWNER).is_empty());
    h.stop().await;
}

#[tokio::test]
async fn in_groups_the_mention_is_stripped_and_only_the_owner_is_answered() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let group = "wrGroupA1";
    let asked = h
        .fake
        .push_group_text(group, OWNER, "@Helper  what time is it");
    let other = h.fake.push_group_text(group, "LiSi", "@Helper tell me too");
    let after = h.fake.push_text(OWNER, "after");
    h.until("both owner answers", |f| {
        f.bubbles()
            .iter()
            .filter(|b| b.finished && (b.req_id == asked.req_id || b.req_id == after.req_id))
            .count()
            == 2
    })
    .await;
    h.settle().await;
    assert_eq!(
        h.reply_to(&asked.req_id).as_deref(),
        Some("echo: what time is it")
    );
    assert_eq!(h.reply_to(&other.req_id), None);
    assert_eq!(h.agent.prompts(), ["what time is it", "after"]);
    h.stop().await;
}

#[tokio::test]
async fn a_reply_whose_handle_is_gone_arrives_proactively() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    // The stream window ran out on WeCom's side (§4.2): 846608 on the reply.
    h.fake.fail_next(cmd::RESPOND_MSG, Fault::Code(846608), 1);
    let late = h.fake.push_text(OWNER, "late");
    h.until("the proactive answer", |f| {
        f.sent().iter().any(|s| s.cmd == cmd::SEND_MSG)
    })
    .await;
    assert_eq!(h.sent_to(OWNER), ["echo: late"]);
    assert_eq!(h.reply_to(&late.req_id), None);
    h.settle().await;
    assert_eq!(h.sent_to(OWNER).len(), 1, "sent once");
    h.stop().await;
}

#[tokio::test]
async fn proactive_sends_keep_wecoms_pace_and_a_send_that_waits_says_so() {
    let h = Harness::start(Setup::owned()).await;
    h.connected().await;
    let key = scv_bridge::ids::AccountKey::parse(ACCOUNT).expect("key");
    let chats = ["UserA", "UserB", "UserC"];
    for c in chats {
        h.fake.know_chat(c, false);
    }
    // Three chats at once: the bot sends proactively at most every 2 s (§4.3), so the third
    // waits 4 s, longer than a moment, and status says it waits.
    for c in chats {
        h.conversation
            .send_proactive(
                &key,
                &scv_bridge::ids::ChatId::new(c),
                &format!("notice for {c}"),
                None,
                &format!("test/{c}"),
            )
            .await
            .expect("queued");
    }
    h.until_health("a sends note", |c| {
        c.notes.iter().any(|n| {
            n.text.contains("30 proactive messages a minute") && n.text.contains("waiting")
        })
    })
    .await;
    h.until("all three sent", |f| {
        f.sent().iter().filter(|s| s.cmd == cmd::SEND_MSG).count() == 3
    })
    .await;
    let times: Vec<_> = h
        .fake
        .frames_of(cmd::SEND_MSG)
        .into_iter()
        .map(|f| f.at)
        .collect();
    for pair in times.windows(2) {
        assert!(
            pair[1].duration_since(pair[0]) >= std::time::Duration::from_millis(1900),
            "2 s apart: {times:?}"
        );
    }
    h.until_health("the note cleared", |c| {
        c.notes.iter().all(|n| !n.text.contains("waiting"))
    })
    .await;
    h.stop().await;
}

#[tokio::test]
async fn a_reply_whose_ack_never_comes_is_held_with_a_note_and_again_brings_it_once() {
    // The daemon's clock moves only when the test moves it, so the 5 s ack wait (§5) ends at
    // the step below and nowhere else.
    let clock = scv_bridge::clock::Clock::manual(scv_bridge::clock::wall_ms());
    let mut setup = Setup::owned();
    setup.clock = Some(clock.clone());
    let h = Harness::start(setup).await;
    h.connected().await;
    // WeCom takes the reply frame and never answers it: whether it showed is unknown.
    h.fake.fail_next(cmd::RESPOND_MSG, Fault::NoAck, 1);
    let asked = h.fake.push_text(OWNER, "hello");
    h.until("the reply frame, unanswered", |f| {
        f.frames_of(cmd::RESPOND_MSG)
            .iter()
            .any(|r| r.req_id == asked.req_id && r.errcode.is_none())
    })
    .await;
    assert!(
        h.sent_to(OWNER).is_empty(),
        "nothing more before the wait ends"
    );
    clock.advance(std::time::Duration::from_secs(4));
    clock.advance(std::time::Duration::from_secs(1));
    let note = |h: &Harness| h.sent_to(OWNER).iter().any(|t| t.contains("/again"));
    h.until("the note in its place", |_| note(&h)).await;
    h.settle().await;
    // Held, not counted as sent and not sent again: one frame, no answer anywhere.
    let answers = |h: &Harness| {
        let bubbles = h.replies().into_iter().filter(|(_, t)| t == "echo: hello");
        let sends = h.sent_to(OWNER).into_iter().filter(|t| t == "echo: hello");
        bubbles.count() + sends.count()
    };
    assert_eq!(answers(&h), 0, "the answer waits for /again");
    assert_eq!(
        h.fake
            .frames_of(cmd::RESPOND_MSG)
            .iter()
            .filter(|r| r.req_id == asked.req_id)
            .count(),
        1,
        "the frame in doubt is not sent again on its own"
    );
    h.fake.push_text(OWNER, "/again");
    h.until("the held answer", |_| answers(&h) > 0).await;
    h.settle().await;
    assert_eq!(answers(&h), 1, "brought once");
    assert_eq!(
        h.agent.prompts(),
        ["hello"],
        "/again never reaches the agent"
    );
    h.stop().await;
}

/// An answer of `n` paragraphs, one of them a fenced code block.
fn long_answer(n: usize) -> String {
    (0..n)
        .map(|i| {
            if i == n / 2 {
                return format!("```rust\nfn p{i}() {{\n    // kept whole\n}}\n```");
            }
            let words: Vec<String> = (0..40).map(|w| format!("w{i}x{w}")).collect();
            format!("P{i} {}", words.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[tokio::test]
async fn a_long_answer_is_split_at_paragraphs_within_wecoms_limit_and_shown_once() {
    let whole = long_answer(40);
    assert!(
        whole.chars().count() > 3 * 3_500 / 2,
        "longer than two pieces"
    );
    let mut setup = Setup::owned();
    let answer = whole.clone();
    setup.agent = TestAgent::answering(move |_| answer.clone());
    let h = Harness::start(setup).await;
    h.connected().await;
    let asked = h.fake.push_text(OWNER, "write a lot");
    h.until("the first piece on the handle", |f| {
        f.bubbles()
            .iter()
            .any(|b| b.req_id == asked.req_id && b.finished)
    })
    .await;
    h.settle().await;
    // Each piece on the message's handle (a bubble of its own) or, past it, as a message.
    let mut pieces: Vec<String> = h
        .replies()
        .into_iter()
        .filter(|(r, _)| *r == asked.req_id)
        .map(|(_, t)| t)
        .collect();
    pieces.extend(h.sent_to(OWNER));
    assert!(pieces.len() >= 2, "{} pieces", pieces.len());
    let paragraphs: Vec<&str> = whole.split("\n\n").collect();
    let mut seen = Vec::new();
    for p in &pieces {
        assert!(p.chars().count() <= 3_500, "{} chars", p.chars().count());
        for part in p.trim().split("\n\n") {
            assert!(
                paragraphs.contains(&part),
                "cut inside a paragraph: {part:.60}"
            );
            seen.push(part);
        }
    }
    assert_eq!(seen, paragraphs, "every paragraph once, in order");
    h.stop().await;
}
