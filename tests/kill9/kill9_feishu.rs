//! `kill -9` at any moment of the Feishu path loses nothing and sends nothing twice, literally:
//! the real binary with the real Feishu adapter (WebSocket long connection) and the OpenAI
//! backend, against the Feishu and model fakes over real sockets, SIGKILLed at a different point
//! of the work in each round, then restarted.
//!
//! Unlike iLink, Feishu keeps an event until it is ACKed and re-pushes it (new `event_id`, same IM
//! message id) after the ACK deadline, so no window belongs to the platform: a kill before the
//! journal commit is re-pushed, a kill after it is deduped by the journal, and a send the
//! platform carried out but the daemon never heard of is deduped by its `uuid`.

use crate::process_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use process_support::bed::{ProcessBed, feishu_login, openai_agent, states};
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_feishu::fake::{FakeConfig, FakeFeishu, SentRecord};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(15);
/// The owner named in the configuration; every question is theirs.
const OWNER: &str = "ou_owner";
/// Questions per round: one in the owner's private chat, the others in groups of their own
/// (Feishu allows 5 messages a second per chat, so distinct chats keep pacing out of the way).
const PER_ROUND: usize = 3;

/// One message the owner sent, and where its answer belongs.
#[derive(Debug, Clone)]
struct Question {
    text: String,
    chat: String,
    /// The IM `om_…` id (group answers are replies to it, in its thread).
    message_id: String,
    group: bool,
}

impl Question {
    /// True when `s` answers this question where it was asked.
    fn answered_by(&self, s: &SentRecord) -> bool {
        crate::bursts::echo_answers(&text_of(&s.content), &self.text)
            && s.chat_id == self.chat
            && (!self.group || s.reply_to == Some((self.message_id.clone(), true)))
    }
}

struct Bed {
    p: ProcessBed,
    fake: FakeFeishu,
    model: FakeOpenAi,
}

impl Bed {
    async fn new() -> Bed {
        // 500 ms ACK deadline instead of the platform's 3 s: re-pushes come quickly.
        let fake = FakeFeishu::start(FakeConfig::fast())
            .await
            .expect("fake feishu");
        let model = FakeOpenAi::start().await.expect("fake model");
        let p = ProcessBed::new(
            |_| {
                format!(
                    "{}[feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\nowner = \"{OWNER}\"\n",
                    openai_agent(&model.base_url(), "m", "SCV_KILL9_FEISHU_KEY"),
                    fake.base_url(),
                )
            },
            &[("SCV_KILL9_FEISHU_KEY", "k")],
        );
        p.save_login("feishu:work", &feishu_login(&fake));
        Bed { p, fake, model }
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    fn log(&self) -> String {
        self.p.log()
    }

    fn db(&self) -> PathBuf {
        self.p.db()
    }

    /// The owner asks the round's questions: one privately, the others @-mentioning the bot in
    /// groups of their own.
    fn ask(&self, round: usize) -> Vec<Question> {
        (0..PER_ROUND)
            .map(|i| {
                let text = format!("r{round}m{i}");
                if i == 0 {
                    let p = self.fake.push_p2p_text(OWNER, &text);
                    Question {
                        text,
                        chat: format!("oc_p2p_{OWNER}"),
                        message_id: p.message_id,
                        group: false,
                    }
                } else {
                    let chat = format!("oc_r{round}g{i}");
                    let p = self.fake.push_group_text(&chat, OWNER, &text, true);
                    Question {
                        text,
                        chat,
                        message_id: p.message_id,
                        group: true,
                    }
                }
            })
            .collect()
    }

    /// Counters to measure a run's progress from.
    fn counts(&self) -> Counts {
        Counts {
            pushes: self.fake.pushes().len(),
            acks: self.acked(),
            asks: self.model.requests().len(),
            sends: self.fake.sent().len(),
            conns: self.fake.connections().len(),
            pings: self.fake.pings(),
        }
    }

    /// ACKs with code 200 (the event is the daemon's now).
    fn acked(&self) -> usize {
        self.fake
            .acks()
            .iter()
            .filter(|a| a.code == Some(200))
            .count()
    }

    /// The fake's view, for failure messages.
    fn report(&self) -> String {
        format!(
            "pushes: {:?}\nacks: {:?}\nmodel asked: {:?}\nsent: {:?}\nstate in {}\nlog:\n{}",
            self.fake
                .pushes()
                .iter()
                .map(|p| (p.im_message_id.clone(), p.attempt))
                .collect::<Vec<_>>(),
            self.fake
                .acks()
                .iter()
                .map(|a| (a.event_id.clone(), a.code))
                .collect::<Vec<_>>(),
            self.model
                .requests()
                .iter()
                .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
                .collect::<Vec<_>>(),
            self.fake
                .sent()
                .iter()
                .map(|s| (s.chat_id.clone(), text_of(&s.content)))
                .collect::<Vec<_>>(),
            self.p.dir.path().display(),
            self.log()
        )
    }

    async fn wait_until(&self, what: &str, f: impl FnMut() -> bool) {
        self.p
            .wait_until(
                PATIENCE,
                what,
                &[&self.fake, &self.model],
                || self.report(),
                f,
            )
            .await;
    }

    /// Waits until the daemon just spawned holds a live connection and has pinged on it.
    async fn wait_connected(&self, before: &Counts, what: &str) {
        self.wait_until(what, || {
            self.fake.connections().len() > before.conns
                && self.fake.live_connections() == 1
                && self.fake.pings() > before.pings
        })
        .await;
    }
}

#[derive(Debug, Clone, Copy)]
struct Counts {
    pushes: usize,
    acks: usize,
    asks: usize,
    sends: usize,
    conns: usize,
    pings: usize,
}

/// Where in the work a round's SIGKILL lands.
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// The journal is held (a stalled disk) while the round's events arrive on a running daemon:
    /// delivered but not journaled, so not ACKed. Killed once the fake gives up on the ACK and
    /// re-pushes (or as soon as an ACK comes, which a daemon that ACKs first would send).
    Unjournaled,
    /// As soon as the fake wrote the first frames of the new connection (the round's events and
    /// any re-push, queued while no daemon ran): maybe read, maybe journaled, maybe ACKed.
    Delivered,
    /// As soon as the fake wrote the frames of the round's events pushed to a running daemon.
    DeliveredLive,
    /// Right after the run's `n`th ACK: journaled, the model maybe not asked yet.
    Acked(usize),
    /// Journaled, but the ACKs never reach the platform (as if killed between the commit and
    /// the ACK write): killed once the model was asked every question of the round.
    AckLost,
    /// While the model streams the run's first answer (stalled half way).
    Thinking,
    /// Right after the run's `n`th model request (answers stream at once: anywhere after it).
    AgentAsked(usize),
    /// The platform carried out `n` sends whose responses were lost: the daemon never learns.
    SentUnconfirmed(usize),
    /// Right after the platform accepted the run's `n`th send (before it is marked sent).
    Sent(usize),
}

/// Holds the store's write lock, as a stalled disk would: every journal commit waits.
fn hold_journal(bed: &Bed) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(bed.db()).expect("open the daemon's store");
    conn.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    conn.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_any_moment_loses_nothing_and_sends_nothing_twice() {
    let started = Instant::now();
    let bed = Bed::new().await;
    let fake = &bed.fake;
    let points = [
        KillPoint::Unjournaled,
        KillPoint::Delivered,
        KillPoint::Acked(1),
        KillPoint::AckLost,
        KillPoint::Thinking,
        KillPoint::AgentAsked(2),
        KillPoint::SentUnconfirmed(2),
        KillPoint::Sent(1),
        KillPoint::DeliveredLive,
    ];
    let mut asked: Vec<Question> = Vec::new();
    for (round, point) in points.iter().enumerate() {
        let live = matches!(point, KillPoint::Unjournaled | KillPoint::DeliveredLive);
        if !live {
            asked.extend(bed.ask(round));
        }
        if let KillPoint::Thinking = point {
            bed.model
                .push(Reply::slow("echo: ", Duration::from_secs(600), "(stalled)"));
        }
        if let KillPoint::SentUnconfirmed(_) = point {
            fake.withhold_send_responses(true);
        }
        if let KillPoint::AckLost = point {
            fake.drop_next_acks(PER_ROUND);
        }
        let before = bed.counts();
        let mut child = bed.spawn();
        let mut journal = None;
        match *point {
            KillPoint::Unjournaled => {
                bed.wait_connected(&before, &format!("round {round}: connected"))
                    .await;
                journal = Some(hold_journal(&bed));
                let questions = bed.ask(round);
                let ids: BTreeSet<String> =
                    questions.iter().map(|q| q.message_id.clone()).collect();
                asked.extend(questions);
                bed.wait_until(&format!("round {round}: a re-push or an ACK"), || {
                    bed.acked() > before.acks
                        || fake.pushes().iter().any(|p| {
                            p.attempt > 0
                                && p.im_message_id.as_ref().is_some_and(|m| ids.contains(m))
                        })
                })
                .await;
            }
            KillPoint::Delivered => {
                bed.wait_until(&format!("round {round}: frames written"), || {
                    fake.pushes().len() > before.pushes
                })
                .await;
            }
            KillPoint::DeliveredLive => {
                bed.wait_connected(&before, &format!("round {round}: connected"))
                    .await;
                let questions = bed.ask(round);
                let ids: BTreeSet<String> =
                    questions.iter().map(|q| q.message_id.clone()).collect();
                asked.extend(questions);
                bed.wait_until(&format!("round {round}: frames written"), || {
                    let pushed: BTreeSet<String> = fake
                        .pushes()
                        .into_iter()
                        .filter_map(|p| p.im_message_id)
                        .collect();
                    ids.is_subset(&pushed)
                })
                .await;
            }
            KillPoint::Acked(n) => {
                bed.wait_until(&format!("round {round}: ACK {n}"), || {
                    bed.acked() >= before.acks + n
                })
                .await;
            }
            KillPoint::AckLost => {
                let texts: BTreeSet<String> = asked[asked.len() - PER_ROUND..]
                    .iter()
                    .map(|q| q.text.clone())
                    .collect();
                bed.wait_until(&format!("round {round}: every question journaled"), || {
                    let seen: BTreeSet<String> = bed
                        .model
                        .requests()
                        .iter()
                        .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
                        .flat_map(|c| {
                            crate::bursts::questions(&c)
                                .map(String::from)
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    texts.is_subset(&seen)
                })
                .await;
            }
            KillPoint::Thinking | KillPoint::AgentAsked(_) => {
                let n = match *point {
                    KillPoint::AgentAsked(n) => n,
                    _ => 1,
                };
                bed.wait_until(&format!("round {round}: model request {n}"), || {
                    bed.model.requests().len() >= before.asks + n
                })
                .await;
            }
            KillPoint::SentUnconfirmed(n) | KillPoint::Sent(n) => {
                bed.wait_until(&format!("round {round}: send {n}"), || {
                    fake.sent().len() >= before.sends + n
                })
                .await;
            }
        }
        sigkill(&mut child);
        // Released only now (rolled back), so the daemon never got to commit before the kill.
        drop(journal);
        fake.withhold_send_responses(false);
        let at = bed.counts();
        eprintln!(
            "round {round} {point:?}: killed after +{} pushes, +{} ACKs, +{} model requests, +{} sends",
            at.pushes - before.pushes,
            at.acks - before.acks,
            at.asks - before.asks,
            at.sends - before.sends,
        );
        // The next round's events are pushed once the fake has seen the hang-up (a push to the
        // dead socket would only wait out the ACK deadline; this keeps rounds quick).
        bed.wait_until(&format!("round {round}: the dead socket noticed"), || {
            fake.live_connections() == 0
        })
        .await;
    }

    // A last run drains everything: every question answered, every event ACKed.
    let mut child = bed.spawn();
    let unanswered = || {
        let sent = fake.sent();
        asked
            .iter()
            .filter(|q| !sent.iter().any(|s| q.answered_by(s)))
            .map(|q| q.text.clone())
            .collect::<Vec<_>>()
    };
    let report = || {
        format!(
            "never answered: {:?}; events not ACKed: {}\n{}",
            unanswered(),
            fake.in_flight(),
            bed.report()
        )
    };
    bed.p
        .wait_until(
            PATIENCE,
            "every answer and every ACK",
            &[&bed.fake, &bed.model],
            report,
            || unanswered().is_empty() && fake.in_flight() == 0,
        )
        .await;
    terminate(&mut child);

    // What the owner saw: each answer once, where it was asked, and nothing else.
    let sent = fake.sent();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in &sent {
        *counts.entry(text_of(&s.content)).or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    let stray: Vec<_> = sent
        .iter()
        .filter(|s| !asked.iter().any(|q| q.answered_by(s)))
        .collect();
    assert!(stray.is_empty(), "unexpected sends: {stray:?}");
    // Each question answered by exactly one send (a burst's answer covers several).
    let covered: Vec<_> = asked
        .iter()
        .map(|q| {
            (
                q.text.as_str(),
                sent.iter().filter(|s| q.answered_by(s)).count(),
            )
        })
        .filter(|(_, n)| *n != 1)
        .collect();
    assert!(covered.is_empty(), "answered other than once: {covered:?}");
    assert_eq!(fake.in_flight(), 0, "events never ACKed");

    // And nothing is left that a later run would still send: all journaled once, all finished.
    let n = asked.len() as i64;
    assert_eq!(
        states(&bed.db(), "inbound_journal"),
        BTreeMap::from([("done".to_string(), n)]),
        "the journal"
    );
    assert_eq!(
        states(&bed.db(), "outbox"),
        BTreeMap::from([("sent".to_string(), sent.len() as i64)]),
        "the outbox"
    );
    let repushed = fake.pushes().iter().filter(|p| p.attempt > 0).count();
    eprintln!(
        "{} questions over {} runs: {} pushes ({repushed} re-pushes), {} ACKs, {} model requests, {} sends, in {:?}",
        asked.len(),
        points.len() + 1,
        fake.pushes().len(),
        fake.acks().len(),
        bed.model.requests().len(),
        sent.len(),
        started.elapsed()
    );
}

/// The readable text of a sent message (text, or the markdown of a post).
fn text_of(content: &serde_json::Value) -> String {
    if let Some(t) = content.get("text").and_then(|t| t.as_str()) {
        return t.to_string();
    }
    content
        .pointer("/zh_cn/content/0/0/text")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .to_string()
}
