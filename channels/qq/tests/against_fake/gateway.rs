//! The gateway's normal life (§1.3, §1.4, §2.3): Identify, READY, dispatches with increasing
//! `s`, heartbeats with the last `s`, commit-after-journal cursors, Resume with replay, dedupe.

use scv_qq::gateway::{Cursor, GatewayOptions, Inbound};
use scv_qq::{Event, Scene};
use serde_json::json;

use crate::{Running, fast, quick_options};

const USER: &str = "E4F1A0B2C3D4E5F60718293A4B5C6D7E";

#[tokio::test]
async fn identify_then_ready_then_events_in_order_with_heartbeats_carrying_the_last_seq() {
    let mut run = Running::start(fast(), quick_options()).await;
    let Inbound::Ready {
        bot,
        cursor,
        resumed,
    } = run.next().await
    else {
        panic!("READY first")
    };
    assert!(!resumed);
    assert_eq!(
        bot.map(|b| b.id),
        Some(scv_qq::fake::FakeConfig::default().bot_id)
    );
    assert_eq!(
        run.gateway.committed(),
        Some(cursor.clone()),
        "a new session commits its start"
    );
    assert!(
        run.gateway.status().borrow().last_evidence.is_some(),
        "READY is evidence"
    );
    let a = run.fake.push_c2c(USER, "one");
    let g = run.fake.push_group_at("G1", "M1", "two");
    let first = run.next_event().await;
    let second = run.next_event().await;
    assert_eq!(first.dedupe_key(), a.id);
    assert!(second.cursor.seq > first.cursor.seq);
    let Ok(Event::Message(m)) = second.event else {
        panic!("group message")
    };
    assert_eq!((m.id.as_str(), m.content.as_str()), (g.id.as_str(), "two"));
    assert!(matches!(m.scene, Scene::Group { .. }) && m.wanted());
    let last = second.cursor.seq;
    assert!(
        run.fake
            .wait_until(crate::WAIT, |f| f.heartbeats().contains(&Some(last)))
            .await
    );
    run.stop().await;
}

#[tokio::test]
async fn after_a_dropped_link_resume_replays_what_was_not_committed() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    run.fake.push_c2c(USER, "journaled");
    let journaled = run.next_event().await;
    run.gateway.commit(journaled.cursor.clone());
    let lost = run.fake.push_c2c(USER, "received but not journaled");
    let unjournaled = run.next_event().await;
    assert_eq!(unjournaled.dedupe_key(), lost.id);

    assert!(run.fake.drop_socket());
    let replayed = run.next_event().await;
    assert_eq!(
        replayed.dedupe_key(),
        lost.id,
        "the uncommitted event comes again: dedupe catches it"
    );
    assert!(run.ready().await, "RESUMED after the replay");
    let (sid, seq) = run.fake.resumes()[0].clone();
    assert_eq!(
        Cursor {
            session_id: sid,
            seq
        },
        journaled.cursor
    );
    assert_eq!(run.fake.identifies(), 1);
    run.stop().await;
}

#[tokio::test]
async fn a_restart_resumes_from_the_persisted_cursor() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    run.fake.push_c2c(USER, "a");
    let a = run.next_event().await;
    run.gateway.commit(a.cursor.clone());
    let fake = {
        let Running {
            fake, cancel, task, ..
        } = run;
        cancel.cancel();
        task.await.unwrap().unwrap();
        fake
    };
    // While the daemon is down the owner writes; the new process resumes and gets it.
    let b = fake.push_c2c(USER, "b");
    let client = scv_qq::Client::new(fake.options()).unwrap();
    let options = GatewayOptions {
        resume_from: Some(a.cursor.clone()),
        ..quick_options()
    };
    let mut run = Running::on(fake, client, options);
    assert_eq!(run.next_event().await.dedupe_key(), b.id);
    assert!(run.ready().await);
    assert_eq!(run.fake.identifies(), 1, "no new session");
    run.stop().await;
}

#[tokio::test]
async fn a_double_push_arrives_twice_with_one_dedupe_key() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    let m = run.fake.push_c2c(USER, "once");
    run.fake.push_again(&m);
    let (x, y) = (run.next_event().await, run.next_event().await);
    assert_eq!(x.dedupe_key(), y.dedupe_key());
    assert_ne!(x.cursor.seq, y.cursor.seq);
    run.stop().await;
}

#[tokio::test]
async fn hostile_and_unknown_dispatches_are_delivered_as_errors_and_the_link_goes_on() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    run.fake
        .push_raw("C2C_MESSAGE_CREATE", json!({"id": 5, "content": ["x"]}));
    run.fake.push_raw("SOMETHING_NEW", json!("x"));
    let bad = run.next_event().await;
    assert!(bad.event.is_err());
    assert!(!bad.dedupe_key().is_empty());
    let other = run.next_event().await;
    assert!(matches!(other.event, Ok(Event::Other { .. })));
    let full = run
        .fake
        .push_group_all("G1", "M1", "chat among members", false);
    let d = run.next_event().await;
    let Ok(Event::Message(m)) = d.event else {
        panic!()
    };
    assert_eq!(m.id, full.id);
    assert!(
        !m.wanted(),
        "a group message that does not mention the bot is not wanted"
    );
    run.stop().await;
}

#[tokio::test]
async fn an_oversized_frame_ends_the_session_without_a_panic_and_the_link_goes_on() {
    let options = GatewayOptions {
        max_frame_bytes: 4096,
        ..quick_options()
    };
    let mut run = Running::start(fast(), options).await;
    run.ready().await;
    run.fake.push_c2c(USER, &"x".repeat(8192));
    // Resuming would replay the same frame for ever: a new session, with the gap reported.
    let Inbound::SessionLost { .. } = run.next().await else {
        panic!("gap reported")
    };
    assert!(!run.ready().await);
    let small = run.fake.push_c2c(USER, "small");
    assert_eq!(run.next_event().await.dedupe_key(), small.id);
    let status = run.gateway.status().borrow().clone();
    assert!(status.last_error.is_some_and(|e| e.contains("limit")));
    run.stop().await;
}

#[tokio::test]
async fn a_slow_reader_loses_nothing_and_keeps_the_link() {
    let (fake, client) = crate::start(fast()).await;
    let mut run = Running::with_queue(fake, client, quick_options(), 1);
    run.ready().await;
    let pushed: Vec<String> = (0..20)
        .map(|i| run.fake.push_c2c(USER, &format!("m{i}")).id)
        .collect();
    // The reader is busy while three more heartbeats go out: the queue stays full meanwhile.
    let beats = run.fake.heartbeats().len();
    assert!(
        run.fake
            .wait_until(crate::WAIT, |f| f.heartbeats().len() >= beats + 3)
            .await
    );
    let mut got = Vec::new();
    for _ in 0..20 {
        got.push(run.next_event().await.dedupe_key());
    }
    assert_eq!(got, pushed);
    assert_eq!(run.fake.connections(), 1, "the same socket throughout");
    run.stop().await;
}

#[tokio::test]
async fn clicks_arrive_from_c2c_and_groups_with_the_clickers_ids() {
    let mut run = Running::start(fast(), quick_options()).await;
    run.ready().await;
    let c = run.fake.push_click_c2c(USER, "yes 42");
    let g = run.fake.push_click_group("G1", "M1", "no 42");
    let Ok(Event::Interaction(i)) = run.next_event().await.event else {
        panic!("c2c click")
    };
    assert_eq!(
        (i.id.as_str(), i.button_data.as_str()),
        (c.id.as_str(), "yes 42")
    );
    assert_eq!(
        i.scene,
        Scene::C2c {
            user_openid: USER.into()
        }
    );
    let d = run.next_event().await;
    assert_eq!(d.dedupe_key(), g.id);
    let Ok(Event::Interaction(i)) = d.event else {
        panic!("group click")
    };
    assert_eq!(
        i.scene,
        Scene::Group {
            group_openid: "G1".into(),
            member_openid: "M1".into()
        }
    );
    run.stop().await;
}

/// A crash between journaling and committing, at several points in a stream of messages: the
/// restarted gateway resumes from the persisted cursor, the replay brings back everything not
/// committed, and dedupe keeps each message once: none lost, none journaled twice.
#[tokio::test]
async fn crashes_between_journal_and_commit_lose_nothing_and_journal_nothing_twice() {
    let (fake, client) = crate::start(fast()).await;
    let mut persisted: Option<Cursor> = None;
    let mut journal: Vec<String> = Vec::new();
    let mut pushed: Vec<String> = Vec::new();
    let mut fake = Some(fake);
    // Round r journals r + 2 events, commits all but the last, then "crashes" (abort, no close).
    for round in 0..4usize {
        let f = fake.take().expect("fake between rounds");
        for i in 0..3 {
            pushed.push(f.push_c2c(USER, &format!("r{round} m{i}")).id);
        }
        let options = GatewayOptions {
            resume_from: persisted.clone(),
            ..quick_options()
        };
        let mut run = Running::on(f, client.clone(), options);
        for k in 0..round + 2 {
            let d = run.next_event().await;
            let key = d.dedupe_key();
            if !journal.contains(&key) {
                journal.push(key);
            }
            if k < round + 1 {
                run.gateway.commit(d.cursor.clone());
                persisted = Some(d.cursor);
            }
        }
        if persisted.is_none() {
            persisted = run.gateway.committed();
        }
        run.task.abort();
        fake = Some(run.fake);
    }
    // A last clean run drains the rest.
    let f = fake.take().expect("fake");
    let options = GatewayOptions {
        resume_from: persisted,
        ..quick_options()
    };
    let mut run = Running::on(f, client, options);
    while journal.len() < pushed.len() {
        let key = run.next_event().await.dedupe_key();
        if !journal.contains(&key) {
            journal.push(key);
        }
    }
    assert_eq!(journal, pushed, "every message once, in order");
    assert_eq!(
        run.fake.identifies(),
        1,
        "every restart resumed the one session"
    );
    run.stop().await;
}
