//! `kill -9` at random points of the QQ path: the real binary with the real QQ adapter (the
//! gateway WebSocket, passive replies) and the OpenAI backend, against the QQ and model fakes
//! over real sockets, under a stream of owner messages (one-to-one and @ in groups), SIGKILLed
//! at a random point of each round's work, then restarted.
//!
//! A random point is a random count of things the fakes saw (gateway connections, heartbeats,
//! sends accepted or refused, model requests) after the spawn, so no clock decides it; the seed
//! is printed and `SCV_KILL9_SEED` replays it.
//!
//! QQ's gateway has no ack: the adapter journals each message with its Resume cursor in one
//! commit, so a kill before the commit Resumes before the message (QQ replays it) and a kill
//! after it is deduped by the journal, as is the second push QQ makes of one message in each
//! round. A send has an idempotency handle on QQ: the platform
//! refuses a repeated `msg_id` + `msg_seq` (`40054005`, spec §4.1), and the adapter retries a
//! piece with the pair of its first attempt, so a kill after QQ took a send and before the
//! outbox recorded it leaves that send in doubt only until the restart, whose resend QQ
//! refuses as a duplicate. The test counts those sends in doubt at each kill and the
//! platform's refusals, and holds the answers to exactly once each.

use crate::process_support;
use crate::random_point::{Rng, seed};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use process_support::bed::{ProcessBed, openai_agent, states};
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::secrets::Credentials;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_qq::fake::{FakeConfig, FakeQq};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);
/// Rounds, each ended by a SIGKILL.
const ROUNDS: usize = 8;
/// The most things the fakes see before a round's kill.
const MAX_POINT: u64 = 14;
/// The owner's `user_openid` (also their member id in the groups, so the policy knows them).
const OWNER: &str = "OWNER0000000000000000000000000009";
/// QQ refuses a repeated `msg_id` + `msg_seq` with this code (spec §4.1).
const DEDUPED: i64 = 40054005;

/// The paragraphs of the model's answer to `question`: every third question gets two long
/// paragraphs, more than one QQ message holds, so the answer goes out in two pieces.
fn paragraphs(question: &str) -> Vec<String> {
    let long = question.ends_with('0');
    let fill = |part: &str| {
        if long {
            format!(
                "{question} {part}:{}",
                " words to fill the part.".repeat(50)
            )
        } else {
            format!("{question} {part}: the answer.")
        }
    };
    if long {
        vec![fill("first"), fill("second")]
    } else {
        vec![fill("only")]
    }
}

/// One question the owner sent and where its answer belongs (`user:` or `group:` + openid).
#[derive(Debug, Clone)]
struct Question {
    text: String,
    to: String,
}

struct Bed {
    p: ProcessBed,
    fake: FakeQq,
    model: FakeOpenAi,
}

impl Bed {
    async fn new() -> Bed {
        let config = FakeConfig::default();
        let fake = FakeQq::start(config.clone()).await.expect("fake qq");
        let model = FakeOpenAi::start().await.expect("fake model");
        model.respond_with(|r| {
            let q = r.messages.last().map(|m| m.content.clone())?;
            // A burst's prompt: each of its questions answered in turn.
            let parts = crate::bursts::questions(&q).flat_map(paragraphs);
            Some(Reply::text(&parts.collect::<Vec<_>>().join("\n\n")))
        });
        let p = ProcessBed::new(
            |_| {
                format!(
                    "{}[qq.bot]\napi_base = \"{u}\"\ntoken_base = \"{u}\"\nsenders = \"owner\"\n",
                    openai_agent(&model.base_url(), "m", "SCV_KILL9_QQ_KEY"),
                    u = fake.base_url(),
                )
            },
            &[("SCV_KILL9_QQ_KEY", "k")],
        );
        let login = Credentials::default()
            .with("app_id", &config.app_id)
            .with("app_secret", &config.app_secret)
            .with("bot_id", &config.bot_id)
            .with("bot_name", &config.bot_name)
            .with("owner_id", OWNER);
        p.save_login("qq:bot", &login);
        Bed { p, fake, model }
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    /// The owner writes `text` one-to-one; `twice`: QQ pushes it twice (spec §2.3).
    fn ask_privately(&self, text: String, twice: bool) -> Question {
        let pushed = self.fake.push_c2c(OWNER, &text);
        if twice {
            self.fake.push_again(&pushed);
        }
        Question {
            text,
            to: format!("user:{OWNER}"),
        }
    }

    /// The owner @s the bot in a group of its own (each group's 5-minute window apart).
    fn ask_in_group(&self, group: String, text: String) -> Question {
        self.fake.push_group_at(&group, OWNER, &text);
        Question {
            text,
            to: format!("group:{group}"),
        }
    }

    /// Everything the fakes saw that a kill can land after.
    fn activity(&self) -> u64 {
        let f = &self.fake;
        (f.connections() as usize + f.heartbeats().len() + f.sent().len() + f.rejected().len())
            as u64
            + self.model.requests().len() as u64
    }

    /// How many accepted sends to `q`'s chat carry each paragraph of its answer.
    fn shown(&self, q: &Question) -> Vec<usize> {
        let sent = self.fake.sent();
        paragraphs(&q.text)
            .iter()
            .map(|p| {
                sent.iter()
                    .filter(|s| s.to == q.to && s.content.contains(p.as_str()))
                    .count()
            })
            .collect()
    }

    fn report(&self, asked: &[Question]) -> String {
        let missing: Vec<(&str, Vec<usize>)> = asked
            .iter()
            .map(|q| (q.text.as_str(), self.shown(q)))
            .filter(|(_, n)| n.iter().any(|n| *n != 1))
            .collect();
        let db = self.p.db();
        let sent: Vec<(String, String, usize, u64)> = self
            .fake
            .sent()
            .iter()
            .map(|s| {
                let head = s.content.chars().take(24).collect();
                (s.to.clone(), head, s.content.len(), s.msg_seq)
            })
            .collect();
        format!(
            "not shown once: {missing:?}\noutbox: {:?}\njournal: {:?}\nsent (to, start, bytes, msg_seq): {sent:?}\nrefused: {:?}\nmodel asked {} times\nlog:\n{}",
            states(&db, "outbox"),
            states(&db, "inbound_journal"),
            self.fake.rejected(),
            self.model.requests().len(),
            self.p.log()
        )
    }

    /// Waits until `cond` holds, re-checked as either fake changes.
    async fn until(&self, what: &str, asked: &[Question], cond: impl Fn() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let model_changed = self.model.changed();
            if cond() {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}\n{}",
                self.report(asked)
            );
            tokio::select! {
                _ = self.fake.wait_until(left, |_| cond()) => {}
                _ = model_changed => {}
            }
        }
    }
}

/// Outbox items QQ already took but the store had not recorded at the kill: the restart sends
/// each again, with the same `msg_id` + `msg_seq`.
fn in_doubt(db: &Path, fake: &FakeQq) -> BTreeSet<String> {
    let db = rusqlite::Connection::open(db).expect("open the daemon's store");
    let pending: Vec<String> = db
        .prepare("SELECT text FROM outbox WHERE state = 'pending'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect::<Result<_, _>>())
        .unwrap_or_default();
    let sent = fake.sent();
    pending
        .into_iter()
        .filter(|text| {
            let head: String = text.chars().take(40).collect();
            sent.iter().any(|s| s.content.starts_with(&head))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_loses_nothing_and_answers_nothing_twice() {
    let started = Instant::now();
    let seed = seed();
    let mut rng = Rng(seed);
    eprintln!("qq kill -9 seed {seed}");
    let bed = Bed::new().await;
    let mut asked: Vec<Question> = Vec::new();
    let mut doubt = BTreeSet::new();
    for round in 0..ROUNDS {
        // One question waits before the start (QQ buffers it for the Resume), two arrive while
        // the daemon runs.
        asked.push(bed.ask_privately(format!("r{round}p0"), false));
        let before = bed.activity();
        let point = 1 + rng.below(MAX_POINT);
        let connections = bed.fake.connections();
        let mut child = bed.spawn();
        bed.until(&format!("round {round}: connected"), &asked, || {
            bed.fake.connections() > connections || bed.activity() >= before + point
        })
        .await;
        asked.push(bed.ask_privately(format!("r{round}p1"), true));
        asked.push(bed.ask_in_group(format!("GROUP{round:027}"), format!("r{round}g0")));
        let round_done = |asked: &[Question]| asked.iter().all(|q| !bed.shown(q).contains(&0));
        bed.until(&format!("round {round}: point {point}"), &asked, || {
            bed.activity() >= before + point || round_done(&asked)
        })
        .await;
        sigkill(&mut child);
        let sends = in_doubt(&bed.p.db(), &bed.fake);
        eprintln!(
            "qq round {round}: killed at point {point} (+{} seen); in doubt: {} sends",
            bed.activity() - before,
            sends.len(),
        );
        doubt.extend(sends);
    }

    // A last run drains everything: every question answered, the outbox sent. It is up (its
    // gateway connected, so it handles SIGTERM) before the checks, which may hold at once.
    let connections = bed.fake.connections();
    let mut child = bed.spawn();
    bed.until("every answer", &asked, || {
        bed.fake.connections() > connections && asked.iter().all(|q| !bed.shown(q).contains(&0))
    })
    .await;
    bed.until("the outbox sent", &asked, || {
        states(&bed.p.db(), "outbox").keys().all(|s| s == "sent")
    })
    .await;
    terminate(&mut child);

    let lost = asked.iter().filter(|q| bed.shown(q).contains(&0)).count();
    let twice: usize = asked
        .iter()
        .flat_map(|q| bed.shown(q))
        .map(|n| n.saturating_sub(1))
        .sum();
    let deduped = bed
        .fake
        .rejected()
        .iter()
        .filter(|r| r.code == DEDUPED)
        .count();
    eprintln!(
        "qq kill -9 (seed {seed}): {} questions over {} runs: {lost} lost, {twice} answered twice; in doubt at the kills: {} sends, resends QQ refused as duplicates: {deduped}; {} sends accepted, {} refused, {} model requests, {} gateway connections, in {:?}",
        asked.len(),
        ROUNDS + 1,
        doubt.len(),
        bed.fake.sent().len(),
        bed.fake.rejected().len(),
        bed.model.requests().len(),
        bed.fake.connections(),
        started.elapsed()
    );
    assert_eq!(lost, 0, "lost answers\n{}", bed.report(&asked));
    assert_eq!(twice, 0, "answered twice\n{}", bed.report(&asked));
    assert!(
        deduped >= doubt.len(),
        "every send in doubt at a kill was resent with its pair and refused by QQ\n{}",
        bed.report(&asked)
    );
    let n = asked.len() as i64;
    assert_eq!(
        states(&bed.p.db(), "inbound_journal"),
        BTreeMap::from([("done".to_string(), n)]),
        "every question journaled once and finished"
    );
}
