//! Confirm questions through the conversation pipeline with a MemoryChannel account and a manual clock.

use crate::confirm_support as support;

use std::time::Duration;

use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::confirm::{AnswerOutcome, ConfirmSettings, WINDOW_NOTE};
use scv_bridge::conversation::{Body, SendError};
use scv_bridge::failure::Code;
use scv_bridge::protocol::{ConfirmState, Senders};
use support::*;

const SEC: Duration = Duration::from_secs(1);

/// Waits until the account's health note satisfies `f` (health changes are watched, not timed).
async fn wait_for_note(bed: &Bed, f: impl Fn(&str) -> bool) {
    within(async {
        loop {
            if bed.health.get().error.as_deref().is_some_and(&f) {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
}

async fn state(bed: &Bed, id: &str) -> ConfirmState {
    bed.svc.status(id).await.expect("status").state
}

#[tokio::test]
async fn the_owner_answers_a_bare_yes_and_the_agent_never_sees_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let info = bed
        .svc
        .ask("Deploy 1.4?", None, Some(600))
        .await
        .expect("ask");
    assert_eq!(info.state, ConfirmState::Pending);
    assert_eq!(info.chat, "wechat:phone");
    assert_eq!(info.deadline_unix_seconds, T0_MS / 1000 + 600);
    let code = bed.svc.view(&info.id).expect("view").code;
    let asked = bed.nth_sent(1).await;
    assert_eq!(
        asked,
        format!("Deploy 1.4?\nReply Y {code} or N {code} before 08:10")
    );
    // WeChat shows no buttons: the question goes as its text with the code.
    assert!(
        matches!(&bed.channel.bodies()[0], Body::Question(q) if !q.buttons && q.code == code),
        "{:?}",
        bed.channel.bodies()
    );

    bed.say("a1", OWNER, "yes").await;
    assert_eq!(bed.nth_sent(2).await, format!("Got it: yes ({code})."));
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Yes);

    // A second answer changes nothing and says so.
    bed.say("a2", OWNER, "no").await;
    assert_eq!(
        bed.nth_sent(3).await,
        format!("Already answered: yes ({code}).")
    );
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Yes);

    // Ordinary messages still reach the agent; answers never did.
    bed.say("m1", OWNER, "hello").await;
    assert_eq!(bed.nth_sent(4).await, "echo: hello");
    assert_eq!(bed.agent.prompts(), ["hello"]);
    bed.shut().await;
}

#[tokio::test]
async fn an_answer_with_the_code_in_any_spelling_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let info = bed
        .svc
        .ask("Drop the table?", None, None)
        .await
        .expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.nth_sent(1).await;
    bed.say("a1", OWNER, &format!("拒绝 {}", code.to_lowercase()))
        .await;
    assert_eq!(bed.nth_sent(2).await, format!("Got it: no ({code})."));
    assert_eq!(state(&bed, &info.id).await, ConfirmState::No);
    assert!(bed.agent.prompts().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn a_strangers_answer_is_ignored_and_goes_where_any_message_goes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = BedOptions {
        senders: Senders::Anyone,
        ..BedOptions::default()
    };
    let bed = Bed::open(dir.path(), T0_MS, opts).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.nth_sent(1).await;
    bed.say("s1", STRANGER, "yes").await;
    bed.say("s2", STRANGER, &format!("y {code}")).await;
    within(bed.channel.wait_sent(3)).await;
    assert_eq!(
        bed.channel.texts(STRANGER),
        ["echo: yes".to_string(), format!("echo: y {code}")]
    );
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Pending);
    // The owner answering in someone else's chat does not count either: only in the asked chat.
    assert_eq!(bed.owner_texts().len(), 1);
    bed.shut().await;
}

#[tokio::test]
async fn two_pending_in_one_chat_a_bare_yes_asks_which() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let first = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    let second = bed.svc.ask("Migrate?", None, None).await.expect("ask");
    let (c1, c2) = (
        bed.svc.view(&first.id).expect("view").code,
        bed.svc.view(&second.id).expect("view").code,
    );
    assert_ne!(c1, c2);
    bed.nth_sent(2).await;
    bed.say("a1", OWNER, "yes").await;
    let which = bed.nth_sent(3).await;
    assert!(
        which.starts_with("Which question? 2 are waiting"),
        "{which}"
    );
    assert!(which.contains(&format!("{c1} “Deploy?”")), "{which}");
    assert!(which.contains(&format!("{c2} “Migrate?”")), "{which}");
    assert_eq!(state(&bed, &first.id).await, ConfirmState::Pending);
    assert_eq!(state(&bed, &second.id).await, ConfirmState::Pending);

    bed.say("a2", OWNER, &format!("N {c2}")).await;
    assert_eq!(bed.nth_sent(4).await, format!("Got it: no ({c2})."));
    // Now one is left: a bare answer goes to it.
    bed.say("a3", OWNER, "好").await;
    assert_eq!(bed.nth_sent(5).await, format!("Got it: yes ({c1})."));
    assert_eq!(state(&bed, &first.id).await, ConfirmState::Yes);
    assert_eq!(state(&bed, &second.id).await, ConfirmState::No);
    assert!(bed.agent.prompts().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn no_answer_expires_at_the_deadline_exactly_and_the_chat_is_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let info = bed.svc.ask("Deploy?", None, Some(120)).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.nth_sent(1).await;
    // Poll every 30 s, as a client would, up to 1 ms before the deadline.
    for _ in 0..3 {
        bed.clock.advance(30 * SEC);
        assert_eq!(state(&bed, &info.id).await, ConfirmState::Pending);
    }
    bed.clock.advance(30 * SEC - Duration::from_millis(1));
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Pending);
    bed.clock.advance(Duration::from_millis(1));
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Expired);
    assert_eq!(
        bed.nth_sent(2).await,
        format!("No answer before the deadline, so it counts as no: “Deploy?” ({code}).")
    );
    // A late answer is told, and changes nothing.
    bed.say("late", OWNER, &format!("y {code}")).await;
    assert_eq!(
        bed.nth_sent(3).await,
        format!("That question ({code}) has expired; no answer is needed.")
    );
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Expired);
    bed.shut().await;
}

#[tokio::test]
async fn without_polling_it_is_withdrawn_after_sixty_seconds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.nth_sent(1).await;
    bed.clock.advance(60 * SEC - Duration::from_millis(1));
    let view = bed.svc.view(&info.id).expect("view");
    assert_eq!(view.info.state, ConfirmState::Pending);
    bed.clock.advance(Duration::from_millis(1));
    // The loop withdraws it on its own and tells the chat.
    assert_eq!(
        bed.nth_sent(2).await,
        format!("This no longer needs an answer (withdrawn): “Deploy?” ({code}).")
    );
    assert_eq!(
        bed.svc.view(&info.id).expect("view").info.state,
        ConfirmState::Withdrawn
    );
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Withdrawn);
    bed.say("late", OWNER, "yes").await;
    assert_eq!(
        bed.nth_sent(3).await,
        format!("That question ({code}) was withdrawn; no answer is needed.")
    );
    assert!(bed.agent.prompts().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn a_closed_send_window_for_the_whole_wait_fails_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    bed.channel.fail_next([SendError::window_closed(
        Code::new("test.window_closed"),
        "the owner has not written for 24 hours",
    )]);
    let info = bed.svc.ask("Deploy?", None, Some(90)).await.expect("ask");
    for _ in 0..2 {
        bed.clock.advance(30 * SEC);
        assert_eq!(state(&bed, &info.id).await, ConfirmState::Pending);
    }
    bed.clock.advance(30 * SEC);
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Failed);
    let view = bed.svc.view(&info.id).expect("view");
    let reason = view.reason.expect("a reason");
    assert!(reason.contains("send window"), "{reason}");
    let error = bed.health.get().error.clone().unwrap_or_default();
    assert!(
        !error.contains(WINDOW_NOTE),
        "the question's note is gone: {error}"
    );
    assert!(bed.channel.sent().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn while_the_window_is_closed_the_health_says_a_question_waits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    bed.channel.fail_next([SendError::window_closed(
        Code::new("test.window_closed"),
        "window closed",
    )]);
    let info = bed.svc.ask("Deploy?", None, Some(600)).await.expect("ask");
    // The sender notes its own wait first; the question's note joins it (each source keeps its
    // own note) at the first delivery check, 5 s after asking.
    wait_for_note(&bed, |e| e.starts_with("1 message waits")).await;
    bed.clock.advance(5 * SEC);
    wait_for_note(&bed, |e| {
        e.starts_with("1 message waits") && e.ends_with(&format!("; {WINDOW_NOTE}"))
    })
    .await;
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Pending);
    // The owner writes: the window opens, the question goes out, and the answer counts.
    bed.say("hi", OWNER, "yes").await;
    within(bed.channel.wait_sent(2)).await;
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Yes);
    bed.clock.advance(5 * SEC);
    bed.svc.status(&info.id).await.expect("status");
    assert!(bed.agent.prompts().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn an_account_down_for_the_whole_wait_fails_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = BedOptions {
        attach: false,
        ..BedOptions::default()
    };
    let bed = Bed::open(dir.path(), T0_MS, opts).await;
    let info = bed.svc.ask("Deploy?", None, Some(50)).await.expect("ask");
    assert_eq!(info.state, ConfirmState::Pending);
    bed.clock.advance(50 * SEC);
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Failed);
    let reason = bed
        .svc
        .view(&info.id)
        .expect("view")
        .reason
        .expect("reason");
    assert!(
        reason.contains("wechat:phone was disconnected (network unreachable)"),
        "{reason}"
    );
    bed.shut().await;
}

#[tokio::test]
async fn no_parent_and_no_notify_fails_at_once_with_a_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = BedOptions {
        settings: ConfirmSettings::default(),
        ..BedOptions::default()
    };
    let bed = Bed::open(dir.path(), T0_MS, opts).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    assert_eq!(info.state, ConfirmState::Failed);
    assert_eq!(info.chat, "");
    let reason = bed
        .svc
        .view(&info.id)
        .expect("view")
        .reason
        .expect("reason");
    assert!(reason.contains("no `notify` account"), "{reason}");
    // A parent naming the account (its owner chat) works without notify.
    let ok = bed
        .svc
        .ask("Deploy?", Some("wechat:phone"), None)
        .await
        .expect("ask");
    assert_eq!(ok.state, ConfirmState::Pending);
    assert_eq!(bed.svc.view(&ok.id).expect("view").chat, OWNER);
    // An unknown account is refused with its name.
    let ghost = bed
        .svc
        .ask("Deploy?", Some("wechat:ghost:someone"), None)
        .await
        .expect("ask");
    assert_eq!(ghost.state, ConfirmState::Failed);
    let reason = bed
        .svc
        .view(&ghost.id)
        .expect("view")
        .reason
        .expect("reason");
    assert!(
        reason.contains("wechat:ghost is not configured"),
        "{reason}"
    );
    bed.shut().await;
}

#[tokio::test]
async fn a_restart_keeps_the_question_pending_and_the_answer_after_it_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let info = bed.svc.ask("Deploy?", None, Some(600)).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.nth_sent(1).await;
    bed.shut().await;

    let bed = Bed::open(dir.path(), T0_MS + 100_000, BedOptions::default()).await;
    let after = bed.svc.status(&info.id).await.expect("status");
    assert_eq!(after, info, "same id, chat, deadline; still pending");
    bed.say("a1", OWNER, &format!("Y {code}")).await;
    assert_eq!(bed.nth_sent(1).await, format!("Got it: yes ({code})."));
    assert_eq!(state(&bed, &info.id).await, ConfirmState::Yes);
    assert_eq!(
        bed.owner_texts().len(),
        1,
        "the question was sent before the restart and is not sent again"
    );
    bed.shut().await;
}

#[tokio::test]
async fn a_question_still_queued_at_a_restart_is_sent_once_after_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    bed.channel.fail_next([SendError::window_closed(
        Code::new("test.window_closed"),
        "window closed",
    )]);
    let info = bed.svc.ask("Deploy?", None, Some(600)).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    bed.shut().await;

    let bed = Bed::open(dir.path(), T0_MS + 10_000, BedOptions::default()).await;
    assert_eq!(
        bed.nth_sent(1).await,
        format!("Deploy?\nReply Y {code} or N {code} before 08:10")
    );
    bed.say("a1", OWNER, "n").await;
    assert_eq!(bed.nth_sent(2).await, format!("Got it: no ({code})."));
    let asked = bed
        .owner_texts()
        .iter()
        .filter(|t| t.starts_with("Deploy?"))
        .count();
    assert_eq!(asked, 1, "sent once, never twice");
    bed.shut().await;
}

#[tokio::test]
async fn a_click_answer_by_id_or_code_is_recorded_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let info = bed.svc.ask("Deploy?", None, None).await.expect("ask");
    let code = bed.svc.view(&info.id).expect("view").code;
    assert_eq!(
        bed.svc.answer(&code.to_lowercase(), true, OWNER).await,
        Ok(AnswerOutcome::Recorded(ConfirmState::Yes))
    );
    assert_eq!(
        bed.svc.answer(&info.id, false, OWNER).await,
        Ok(AnswerOutcome::AlreadyClosed(ConfirmState::Yes))
    );
    let card = feishu_card(&bed.svc.body(&info.id).expect("body")).expect("card");
    assert!(card.contains("Approved"), "{card}");
    assert!(bed.svc.answer("q-999", true, OWNER).await.is_err());
    bed.shut().await;
}

#[tokio::test]
async fn an_in_process_asker_waits_for_the_answer_without_polling_the_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bed = Bed::open(dir.path(), T0_MS, BedOptions::default()).await;
    let svc = bed.svc.clone();
    let waiting = tokio::spawn(async move {
        svc.ask_and_wait(
            "Run `rm -rf build/`?",
            Some("wechat:phone"),
            Some(300),
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
    });
    bed.nth_sent(1).await;
    bed.say("a1", OWNER, "同意").await;
    let info = within(waiting).await.expect("task").expect("answer");
    assert_eq!(info.state, ConfirmState::Yes);
    assert!(bed.agent.prompts().is_empty());
    bed.shut().await;
}

#[tokio::test]
async fn on_feishu_the_question_is_a_card_with_a_text_fallback_and_the_answer_resolves_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let feishu = AccountKey::new(Channel::Feishu, "work");
    let opts = BedOptions {
        account: feishu.clone(),
        settings: ConfirmSettings {
            notify: Some(feishu),
            timezone: Some(chrono_tz::Asia::Shanghai),
            languages: Default::default(),
            always: Default::default(),
        },
        ..BedOptions::default()
    };
    let bed = Bed::open(dir.path(), T0_MS, opts).await;
    let info = bed.svc.ask("Deploy?", None, Some(600)).await.expect("ask");
    assert_eq!(info.chat, "feishu:work");
    let code = bed.svc.view(&info.id).expect("view").code;
    within(bed.channel.wait_sent(1)).await;
    let sent = bed.channel.sent();
    assert_eq!(
        sent[0].text,
        format!("Deploy?\nReply Y {code} or N {code} before 08:10")
    );
    assert!(
        matches!(&sent[0].body, Body::Question(q) if q.buttons && q.id == info.id && q.code == code),
        "a question with buttons: {:?}",
        sent[0].body
    );
    let card: serde_json::Value =
        serde_json::from_str(&feishu_card(&sent[0].body).expect("a card")).expect("card json");
    let yes = &card["body"]["elements"][2]["columns"][0]["elements"][0]["behaviors"][0]["value"];
    assert_eq!(yes["q"], info.id.as_str());
    assert_eq!(yes["a"], "yes");
    bed.say("a1", OWNER, "yes").await;
    within(bed.channel.wait_sent(2)).await;
    let reply = &bed.channel.sent()[1];
    assert_eq!(reply.text, format!("Got it: yes ({code})."));
    assert_eq!(
        reply.body,
        Body::Text,
        "the reply is text; the card shows the answer"
    );
    within(bed.channel.wait_updates(1)).await;
    let update = &bed.channel.updates()[0];
    assert_eq!(update.target.as_str(), "mem-1", "the question card itself");
    let resolved = feishu_card(&update.body).expect("a resolved card");
    assert!(resolved.contains("Approved at 08:00"), "{resolved}");
    assert!(!resolved.contains("\"button\""), "{resolved}");
    bed.shut().await;
}
