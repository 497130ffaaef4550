//! A Feishu burst larger than the adapter's delivery queue (1,024), end to end: the daemon
//! against the fake over the long connection. Nothing is lost, nothing repeated, and every
//! event is answered once. Not timed: the fake's ACK deadline is set far out, so an event the
//! bridge dropped would show as a missing ACK, never as a quiet re-push. A chat's messages that
//! arrive while its turn runs are answered together by its next turn (one echo naming them
//! all), so each message counts as answered when exactly one answer names it.

use crate::feishu_support;

use std::collections::HashMap;
use std::time::Duration;

use feishu_support::*;
use scv_bridge::protocol::ComponentState;
use scv_feishu::fake::{FakeConfig, PushOptions};

/// Events in the burst: well over the delivery queue.
const BURST: usize = 1500;
/// Chats the burst is spread over (the fake allows 5 sends a second per chat).
const CHATS: usize = 500;
/// Upper bound for the burst's ACKs and answers; a passing run finishes far sooner.
const PATIENCE: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_larger_than_the_queue_loses_nothing_repeats_nothing_and_is_answered_once() {
    // Pings as the platform's defaults have them (90 s), so a slow test machine is not taken
    // for a stalled link while the burst is worked through.
    let fake = FakeConfig {
        ack_timeout: Duration::from_secs(600),
        client_config: FakeConfig::default().client_config,
        ..FakeConfig::fast()
    };
    let mut setup = Setup::owned();
    setup.fake = fake;
    setup.table = "senders = \"anyone\"\n".into();
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;

    let mut event_ids = Vec::new();
    for i in 0..BURST {
        let who = format!("ou_u{}", i % CHATS);
        let p = h.fake.push_message(
            &who,
            &p2p_chat(&who),
            "p2p",
            &format!("m{i}"),
            false,
            PushOptions::default(),
        );
        event_ids.push(p.event_id);
    }
    assert!(
        h.fake
            .wait_until(PATIENCE, |f| f.ack_count() >= BURST)
            .await,
        "only {} of {BURST} events were ACKed",
        h.fake.ack_count()
    );
    let acks = h.fake.acks();
    assert_eq!(acks.len(), BURST, "one ACK per event");
    assert!(acks.iter().all(|a| a.code == Some(200) && a.echo_ok));
    let mut acked: Vec<String> = acks.iter().filter_map(|a| a.event_id.clone()).collect();
    acked.sort();
    let mut pushed = event_ids.clone();
    pushed.sort();
    assert_eq!(acked, pushed, "every pushed event ACKed, once");
    assert!(
        h.fake.pushes().iter().all(|p| p.attempt == 0),
        "no event was re-pushed"
    );
    assert_eq!(h.fake.in_flight(), 0);

    let answers = |sent: &[scv_feishu::fake::SentRecord]| {
        let mut by_message: HashMap<String, usize> = HashMap::new();
        for s in sent {
            let text = text_of(&s.content);
            for m in text.strip_prefix("echo: ").unwrap_or(&text).split("\n\n") {
                *by_message.entry(m.to_string()).or_default() += 1;
            }
        }
        by_message
    };
    assert!(
        h.fake
            .wait_until(PATIENCE, |f| answers(&f.sent()).len() >= BURST)
            .await,
        "only {} of {BURST} events were answered",
        answers(&h.fake.sent()).len()
    );
    // Every answer is queued before its message's turn ends, so once the pipeline is quiet
    // no further answer can follow.
    h.settle().await;
    let answers = answers(&h.fake.sent());
    assert_eq!(answers.len(), BURST, "every event answered, nothing else");
    for i in 0..BURST {
        assert_eq!(
            answers.get(&format!("m{i}")),
            Some(&1),
            "message m{i} answered once"
        );
    }
    h.stop().await;
}
