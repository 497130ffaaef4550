//! `kill -9` around the move of a confirm question: the bed of `kill9_move` (the real binary,
//! routes `wechat:phone` then `feishu:work`, `move_after_seconds = 10`, WeChat's window closed
//! because the owner never wrote there). Each round a real `scv-bridge confirm` asks; its
//! question waits on WeChat and moves to Feishu while the daemon is SIGKILLed at a seeded point
//! (`SCV_KILL9_SEED` replays one): before the move, just after it was logged, or once Feishu
//! showed it. After the restart the question is shown exactly once, on Feishu only; the
//! owner's yes there reaches the waiting `confirm`, which exits 0. In the last round the owner
//! first answers on WeChat, where the question waited: that answer does not count, and the
//! owner is told where the question went.
//!
//! The bound is real time (see `kill9_move`); nothing sleeps: every wait is woken by the
//! fakes' changes, the daemon's log or the `confirm` process ending.

use crate::kill9_move::{Bed, FEISHU_OWNER, PATIENCE, Point, WECHAT_OWNER, schedule, shows};
use crate::process_support;
use crate::random_point::{Rng, seed};

use std::process::{Child, Output};

use process_support::changes::{Changes, Tree};
use process_support::log_count::LogCount;
use process_support::terminate;
use scv_bridge::protocol::DaemonCommand;

/// What the confirm service logs once a question is stored and queued (`confirm/service/ask.rs`).
const ASKED: &str = "question asked";
/// What it logs once it knows where the question landed (`confirm/service/delivery.rs`): an
/// answer by text counts from then on (on Feishu the p2p chat is learned from the send).
const DELIVERED: &str = "question delivered";
/// The start of the word a moved question's old chat gets (`words::Ask::Moved`, English half).
const MOVED_WORD: &str = "moved to feishu:work";

fn question(round: usize) -> String {
    format!("kill9-move-q{round}")
}

/// Starts `scv-bridge confirm QUESTION` against the bed's daemon (it polls, and reconnects
/// across the daemon's restarts).
fn ask(bed: &Bed, q: &str) -> Child {
    bed.command(&["confirm", q, "--timeout", "30m"])
        .spawn()
        .expect("run scv-bridge confirm")
}

/// Waits for `confirm` to end; fails after the patience with the daemon's story.
async fn answered(bed: &Bed, child: Child, what: &str) -> Output {
    let out = tokio::time::timeout(
        PATIENCE,
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await;
    match out {
        Ok(out) => out.expect("join").expect("confirm's output"),
        Err(_) => panic!("{what}: confirm never ended\n{}", bed.report()),
    }
}

/// Waits until the daemon's `status` counts a message waiting (WeChat's sender was refused
/// the question), re-asking at each write to the state folder (the store commits there). By
/// then `confirm` has its question's id: the daemon answered the ask before the sender's two
/// store trips and the refusal.
async fn until_waiting(bed: &Bed, state: &Tree, what: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let changed = state.change();
        let status = scv_bridge::client::request(&bed.p.socket(), DaemonCommand::Status).await;
        if status
            .ok()
            .and_then(|s| s.deliveries)
            .is_some_and(|d| d.waiting > 0)
        {
            return;
        }
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep_until(deadline) => {
                panic!("{what}: the question never waited on WeChat\n{}", bed.report())
            }
        }
    }
}

/// How many WeChat messages tell the owner the question moved.
fn told_moved(bed: &Bed) -> usize {
    bed.wechat
        .handle()
        .sent()
        .iter()
        .filter(|s| s.text.contains(MOVED_WORD))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_around_a_question_s_move_shows_it_once_and_it_is_answered_where_it_went() {
    let seed = seed();
    println!("kill9_move_question seed {seed} (SCV_KILL9_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let bed = Bed::new().await;
    let asked = LogCount::new(bed.p.path("daemon.log"), ASKED);
    let delivered = LogCount::new(bed.p.path("daemon.log"), DELIVERED);
    let state = Tree::watch(&bed.p.state());
    let points = schedule(&mut rng);
    let mut child = bed.start().await;
    for (round, point) in points.iter().enumerate() {
        let q = question(round);
        let what = format!("round {round} ({point:?})");
        let (before_ask, before_move) = (asked.count(), bed.moved.count());
        let asker = ask(&bed, &q);
        let deadline = tokio::time::Instant::now() + PATIENCE;
        assert!(
            asked.above(before_ask, deadline).await,
            "{what}: never asked\n{}",
            bed.report()
        );
        match point {
            Point::Waiting => until_waiting(&bed, &state, &what).await,
            Point::Moved => {
                let deadline = tokio::time::Instant::now() + PATIENCE;
                assert!(
                    bed.moved.above(before_move, deadline).await,
                    "{what}: never moved\n{}",
                    bed.report()
                );
            }
            Point::Shown => {
                bed.wait_until(&format!("{what}: the question on Feishu"), || {
                    bed.shown(&q).1 > 0
                })
                .await;
            }
        }
        bed.kill(&mut child, &what).await;
        let before_restart = delivered.count();
        child = bed.start().await;
        bed.wait_until(
            &format!("{what}: the question on Feishu after the restart"),
            || bed.shown(&q).1 > 0,
        )
        .await;
        // Learned again after the restart (a question not known delivered is checked in 5 s).
        let deadline = tokio::time::Instant::now() + PATIENCE;
        assert!(
            delivered.above(before_restart, deadline).await,
            "{what}: never known delivered\n{}",
            bed.report()
        );
        assert_eq!(
            bed.shown(&q),
            (0, 1),
            "{what}: once, on Feishu\n{}",
            bed.report()
        );
        if round + 1 == points.len() {
            // Where it waited, the owner's yes does not count; they are told where it went.
            let told = told_moved(&bed);
            bed.wechat.handle().push_text(WECHAT_OWNER, "yes");
            bed.wait_until(&format!("{what}: the owner told it moved"), || {
                told_moved(&bed) > told
            })
            .await;
        }
        bed.feishu.push_p2p_text(FEISHU_OWNER, "yes");
        let out = answered(&bed, asker, &what).await;
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).trim()
            ),
            (Some(0), "yes"),
            "{what}: the answer on Feishu reached confirm: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            bed.report()
        );
    }
    terminate(&mut child);
    let last = question(points.len() - 1);
    let replies: Vec<String> = bed
        .wechat
        .handle()
        .sent()
        .into_iter()
        .map(|s| s.text)
        .collect();
    assert!(
        replies.iter().all(|t| !t.contains(&last)),
        "the question itself never went out on WeChat: {replies:?}"
    );
    assert_eq!(told_moved(&bed), 1, "told once: {replies:?}");
    // Each answer also brought its reply and a closing card that quotes the question (a new
    // message: the moved question went out as text, which cannot be edited into the card), so
    // only the messages asking are counted here.
    for (round, point) in points.iter().enumerate() {
        let q = question(round);
        let asking = bed
            .feishu
            .sent()
            .iter()
            .filter(|s| shows(s, &q) && shows(s, "Reply Y"))
            .count();
        assert_eq!(
            (bed.shown(&q).0, asking),
            (0, 1),
            "round {round} ({point:?}): shown once, on Feishu only\n{}",
            bed.report()
        );
    }
    println!("kill9_move_question: kill points {points:?}");
}
