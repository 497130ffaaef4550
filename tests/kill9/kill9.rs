//! `kill -9` at any moment loses nothing and sends nothing twice, literally: the real binary with
//! the real WeChat adapter and OpenAI backend, against the fake iLink and model servers over real
//! sockets, SIGKILLed at a different point of the work in each round, then restarted.

use crate::process_support;
use crate::wechat_bed;

use std::collections::BTreeMap;
use std::time::Duration;

use process_support::bed::{ProcessBed, states};
use process_support::log_count::LogCount;
use process_support::{Daemon, exits_cleanly, sigkill, sigterm, terminate};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, FakeHandle, FakeServer};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);
/// WeChat allows one send a second per account, so every answer costs the test a real second:
/// the rounds are many, the messages per round few.
const PER_ROUND: usize = 2;

struct Bed {
    p: ProcessBed,
    fake: FakeServer,
    model: FakeOpenAi,
}

impl Bed {
    async fn new() -> Bed {
        Bed::with(FakeConfig::default()).await
    }

    async fn with(config: FakeConfig) -> Bed {
        let (p, fake, model) = wechat_bed::start(config).await;
        Bed { p, fake, model }
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    /// The last user text of every model request, in order.
    fn asked(&self) -> Vec<String> {
        self.model
            .requests()
            .iter()
            .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
            .collect()
    }

    fn handle(&self) -> FakeHandle {
        self.fake.handle()
    }
}

/// Where in the work a round's SIGKILL lands, once the round's batch is journaled: iLink marks
/// messages consumed when it returns them (an older cursor does not replay them, spec §3.1), so
/// a kill between receiving a batch and committing it is the one window no client can close.
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// While the model answers the round's `n`th message (others may be queued or answered).
    AgentAsked(usize),
    /// Right after the platform accepted the round's `n`th answer (before it is marked sent).
    Sent(usize),
}

async fn wait_until(bed: &Bed, what: &str, f: impl FnMut() -> bool) {
    let report = || {
        format!(
            "model asked: {:?}\nsent: {:?}\nlog:\n{}",
            bed.asked(),
            bed.handle()
                .sent()
                .into_iter()
                .map(|s| s.text)
                .collect::<Vec<_>>(),
            bed.p.log()
        )
    };
    bed.p
        .wait_until(PATIENCE, what, &[&bed.fake, &bed.model], report, f)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_any_moment_loses_nothing_and_sends_nothing_twice() {
    let bed = Bed::new().await;
    let fake = bed.handle();
    let points = [
        KillPoint::AgentAsked(1),
        KillPoint::Sent(1),
        KillPoint::AgentAsked(2),
        KillPoint::Sent(2),
        KillPoint::AgentAsked(1),
        KillPoint::Sent(1),
    ];
    let mut pushed = Vec::new();
    for (round, point) in points.iter().enumerate() {
        // Every message has its own peer, so WeChat's 1 s per-chat pacing never slows the test.
        for i in 0..PER_ROUND {
            let (text, peer) = (format!("r{round}m{i}"), format!("u{round}x{i}@im.wechat"));
            fake.push_text(&peer, &text);
            pushed.push((text, peer));
        }
        let (polls, asks, sends) = (
            fake.requests_to(Endpoint::GetUpdates).len(),
            bed.model.requests().len(),
            fake.sent().len(),
        );
        let mut child = bed.spawn();
        // The loop polls again only after the batch it got is journaled and the cursor saved:
        // from the second poll of this run on, the round's messages are the daemon's to keep.
        wait_until(&bed, &format!("round {round}: the batch journaled"), || {
            fake.requests_to(Endpoint::GetUpdates).len() >= polls + 2
        })
        .await;
        match *point {
            KillPoint::AgentAsked(n) => {
                wait_until(&bed, &format!("round {round}: model request {n}"), || {
                    bed.model.requests().len() >= asks + n
                })
                .await
            }
            KillPoint::Sent(n) => {
                wait_until(&bed, &format!("round {round}: send {n}"), || {
                    fake.sent().len() >= sends + n
                })
                .await
            }
        }
        sigkill(&mut child);
        // A poll the dead daemon left open could still take the next round's messages (and lose
        // them with the connection) until the platform notices the hang-up. So could a poll it
        // wrote just before dying that the fake has not read yet (no handler counts it in
        // flight), and that one also counts as the next run's poll. That is the platform's
        // window, not the daemon's, so the next messages are written once the fake has read
        // and closed every connection of the dead daemon.
        assert!(
            fake.connections_closed(PATIENCE).await,
            "round {round}: the fake never closed the dead daemon's connections\nlog:\n{}",
            bed.p.log()
        );
    }

    // A last run drains everything, then a clean stop.
    let mut child = bed.spawn();
    let all = pushed.len();
    let missing = || {
        let answered: std::collections::BTreeSet<String> =
            fake.sent().into_iter().map(|s| s.text).collect();
        pushed
            .iter()
            .filter(|(p, _)| !answered.contains(&format!("echo: {p}")))
            .cloned()
            .collect::<Vec<_>>()
    };
    // The owner's part: a reply a kill held (one WeChat had not shown yet) is announced in its
    // chat with `/again`; the owner who never got it asks for it, once.
    let mut asked_again = std::collections::BTreeSet::new();
    let mut ask_again = |missing: &[(String, String)]| {
        let noted: std::collections::BTreeSet<String> = fake
            .sent()
            .into_iter()
            .filter(|s| s.text.contains("/again"))
            .map(|s| s.to_user)
            .collect();
        for (_, peer) in missing {
            if noted.contains(peer) && asked_again.insert(peer.clone()) {
                fake.push_text(peer, "/again");
            }
        }
    };
    let report = || {
        format!(
            "never answered: {:?}; model asked {} times; state in {}\nlog:\n{}",
            missing(),
            bed.model.requests().len(),
            bed.p.dir.path().display(),
            bed.p.log()
        )
    };
    bed.p
        .wait_until(
            PATIENCE,
            "every answer",
            &[&bed.fake, &bed.model],
            report,
            || {
                let m = missing();
                ask_again(&m);
                m.is_empty()
            },
        )
        .await;
    // One more poll after the last send, so anything still queued would have gone out by now.
    let polls = fake.requests_to(Endpoint::GetUpdates).len();
    wait_until(&bed, "a poll after the last answer", || {
        fake.requests_to(Endpoint::GetUpdates).len() > polls
    })
    .await;
    terminate(&mut child);

    // A kill that beat the send's record holds that reply (WeChat may have shown it) and puts a
    // note in its place; the fake did show it, so the owner needs no `/again`.
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in fake
        .sent()
        .into_iter()
        .filter(|s| !s.text.contains("/again"))
    {
        *counts.entry(s.text).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(counts.len(), all, "answers: {counts:?}");
    assert!(
        counts
            .keys()
            .all(|t| pushed.iter().any(|(p, _)| *t == format!("echo: {p}"))),
        "unexpected sends: {counts:?}"
    );
    // The platform never saw a reused client_id accepted or a send outside the rules.
    let rejected = fake.rejected();
    assert!(
        rejected.iter().all(|r| r.reason == "client_id reused"),
        "refused sends: {rejected:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_send_waits_for_the_answer_so_nothing_goes_twice() {
    // WeChat takes the send at once and answers it only when the test says: SIGTERM lands
    // between the platform taking the answer and the daemon storing that it did.
    let bed = Bed::with(FakeConfig {
        answer_delay: Duration::from_secs(600),
        ..FakeConfig::default()
    })
    .await;
    let fake = bed.handle();
    let waiting = LogCount::new(bed.p.path("daemon.log"), "waiting for the sends in flight");
    let mut child = bed.spawn();
    fake.push_text("owner@im.wechat", "hello");
    wait_until(&bed, "the answer taken, its reply held", || {
        fake.answers_waiting(Endpoint::SendMessage) == 1
    })
    .await;
    sigterm(&child);
    assert!(
        waiting
            .above(0, tokio::time::Instant::now() + PATIENCE)
            .await,
        "the stop did not wait for the send in flight\nlog:\n{}",
        bed.p.log()
    );
    fake.stop_delaying_answers();
    exits_cleanly(&mut child);

    // The stop stored the send, so the next run has nothing to send again.
    assert_eq!(
        states(&bed.p.db(), "outbox"),
        BTreeMap::from([("sent".to_string(), 1)]),
        "the outbox"
    );
    let mut child = bed.spawn();
    fake.push_text("owner@im.wechat", "again");
    wait_until(&bed, "the second answer", || fake.sent().len() >= 2).await;
    terminate(&mut child);
    let texts: Vec<String> = fake.sent().into_iter().map(|s| s.text).collect();
    assert_eq!(texts, ["echo: hello", "echo: again"]);
}
