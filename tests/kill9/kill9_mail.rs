//! `kill -9` during mail triage loses nothing and reports nothing twice, literally: the real
//! binary with a `[mail.box]` account against a real Dovecot on loopback, the triage model on the
//! fake OpenAI server and the mail chat on the fake iLink server (both in this process, over real
//! sockets). Each round APPENDs new mail, starts the daemon and SIGKILLs it at a different point:
//! while the model holds a triage request, right after iLink took a digest, after a short delay.
//! A last clean run drains everything; then every mail that matters must be in exactly one digest
//! item, the model asked about each mail once (plus the one decision in flight at a kill), the
//! flags untouched, and no mail text in the trace-level logs.

use crate::process_support;

use crate::server;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use process_support::bed::{ProcessBed, wechat_login};
use process_support::log_count::LogCount;
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::protocol::{DaemonCommand, MailCounts};
use scv_bridge::secrets::Credentials;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_mail::{ImapSession, Security};
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeHandle, FakeServer, Fault};
use server::MailServer;

mod kill9_mail_support;
use kill9_mail_support::Bed;

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(20);
/// The owner of the mail chat (the WeChat user who logged in).
const OWNER: &str = "owner@im.wechat";
/// The mail account's id.
const MAIL: &str = "mail:box";

/// What a mail is, and so what the model (or the pre-filter) decides about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A person wrote; the model reports it in the next digest.
    Report,
    /// A person wrote; the model reports it at once.
    Urgent,
    /// A person wrote; the model says it need not be reported.
    Skip,
    /// A newsletter: the pre-filter decides, the model never sees it.
    Bulk,
}

impl Kind {
    fn matters(self) -> bool {
        matches!(self, Kind::Report | Kind::Urgent)
    }

    fn to_model(self) -> bool {
        self != Kind::Bulk
    }

    /// The subject marker the fake model decides by.
    fn tag(self) -> &'static str {
        match self {
            Kind::Report => "report",
            Kind::Urgent => "URGENT",
            Kind::Skip => "SKIPME",
            Kind::Bulk => "news",
        }
    }
}

/// One appended mail.
#[derive(Debug, Clone)]
struct Mail {
    kind: Kind,
    /// Unique in the test and never a substring of another's: `[k9 r1 m0] report`.
    subject: String,
    /// Unique text only in the body, looked for in the logs.
    body_marker: String,
}

/// Where in the work a round's SIGKILL lands.
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// The round's `n`th triage request reached the model, which holds it unanswered: that
    /// mail's decision is in flight when the process dies.
    ModelAsked(usize),
    /// iLink took the round's first send (a digest) and its answer is lost: the platform has
    /// it, the daemon cannot know.
    SentAnswerLost,
    /// Right after iLink accepted the round's first send (the daemon may not have noted it yet).
    Sent,
    /// This long after the spawn, wherever the work is.
    After(Duration),
}

struct Round {
    /// Kinds of the mail APPENDed before the spawn, in UID order.
    mail: &'static [Kind],
    /// Whether the owner writes `/digest` in the mail chat before the spawn.
    digest_command: bool,
    kill: KillPoint,
}

fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_mail_triage_loses_nothing_and_reports_nothing_twice() {
    use Kind::*;
    let started = Instant::now();
    let mut bed = Bed::new().await;
    let ilink = bed.ilink();
    let rounds = [
        Round {
            mail: &[Report, Skip, Bulk, Report],
            digest_command: false,
            kill: KillPoint::ModelAsked(2),
        },
        Round {
            mail: &[Urgent, Skip],
            digest_command: false,
            kill: KillPoint::SentAnswerLost,
        },
        Round {
            mail: &[Report, Bulk, Skip],
            digest_command: false,
            kill: KillPoint::After(Duration::from_millis(250)),
        },
        Round {
            mail: &[Report, Skip, Report],
            digest_command: true,
            kill: KillPoint::ModelAsked(1),
        },
        Round {
            mail: &[Urgent, Report],
            digest_command: false,
            kill: KillPoint::Sent,
        },
    ];
    // First start: the owner writes (opening WeChat's send window for the mail chat, answered
    // with "Nothing new.") and the account baselines at UIDNEXT. Then the first SIGKILL.
    ilink.push_text(OWNER, "/digest");
    let mut owner_messages = 1;
    let mut child = bed.spawn();
    bed.wait_until("the answer to the first /digest", || {
        !ilink.sent().is_empty()
    })
    .await;
    bed.wait_counts("the first check of the mailbox (the baseline)", |c| {
        c.last_check_unix_seconds.is_some()
    })
    .await;
    sigkill(&mut child);
    assert!(
        ilink.connections_closed(PATIENCE).await,
        "the fake never closed the dead daemon's connections"
    );
    eprintln!("baseline run: {:?}", started.elapsed());

    // Per kill: the mail whose decision may be in flight (the last one asked, still claimed).
    let mut in_flight: Vec<String> = Vec::new();
    for (round, r) in rounds.iter().enumerate() {
        bed.append(round, r.mail).await;
        if r.digest_command {
            owner_messages += 1;
            ilink.push_text(OWNER, "/digest");
        }
        let (polls, asks, sends) = (
            ilink.requests_to(Endpoint::GetUpdates).len(),
            bed.model.requests().len(),
            ilink.sent().len(),
        );
        match r.kill {
            KillPoint::ModelAsked(n) => bed.model.answer_only(Some(asks + n - 1)),
            KillPoint::SentAnswerLost => ilink.inject(Endpoint::SendMessage, Fault::LoseAnswer),
            _ => {}
        }
        let spawned = Instant::now();
        let mut child = bed.spawn();
        if r.digest_command {
            // The poll after the one that returned the owner's message: it is journaled.
            bed.wait_until(&format!("round {round}: /digest journaled"), || {
                ilink.requests_to(Endpoint::GetUpdates).len() >= polls + 2
            })
            .await;
        }
        match r.kill {
            KillPoint::ModelAsked(n) => {
                bed.wait_until(&format!("round {round}: triage request {n}"), || {
                    bed.model.requests().len() >= asks + n
                })
                .await
            }
            KillPoint::SentAnswerLost | KillPoint::Sent => {
                bed.wait_until(&format!("round {round}: a send"), || {
                    ilink.sent().len() > sends
                })
                .await
            }
            KillPoint::After(d) => tokio::time::sleep(d.saturating_sub(spawned.elapsed())).await,
        }
        sigkill(&mut child);
        let killed_after = spawned.elapsed();
        bed.model.answer_only(None);
        ilink.clear_faults();
        // A request the process wrote just before it died (on a connection the fake may not
        // even have taken yet) is recorded only once the fake has read it.
        let recorded_at_kill = bed.model.requests().len();
        tokio::time::timeout(PATIENCE, bed.model.settled())
            .await
            .expect("the fake model settles")
            .expect("the fake model answers");
        let asked = bed.asked();
        let open = bed.open_claims();
        // In flight: asked this round and still open (a held call, or one whose answer the
        // kill beat to the store); those mails may be asked once more.
        let flight: Vec<String> = asked[asks.min(asked.len())..]
            .iter()
            .flatten()
            .filter(|s| open.contains(*s))
            .cloned()
            .collect();
        eprintln!(
            "round {round}: {:?} after {killed_after:?}; asked {:?} ({} recorded after the kill); \
             sent {}; open claims {open:?}; in flight {flight:?}",
            r.kill,
            &asked[asks..],
            asked.len() - recorded_at_kill,
            ilink.sent().len() - sends,
        );
        in_flight.extend(flight);
        // A poll the dead daemon left open, or wrote just before it died, could still take the
        // owner's next message (and lose it with the connection) until iLink has read and closed
        // every socket of the dead daemon: that window is iLink's.
        assert!(
            ilink.connections_closed(PATIENCE).await,
            "round {round}: the fake never closed the dead daemon's connections"
        );
    }

    // A last clean run with fresh mail drains everything.
    bed.append(rounds.len(), &[Report, Bulk]).await;
    let total = bed.mail.len() as u64;
    let spawned = Instant::now();
    let mut child = bed.spawn();
    // (Counters are per local day: a run across midnight UTC would wait in vain here.)
    bed.wait_counts("every mail decided", |c| {
        c.claimed == 0 && c.seen_today == total
    })
    .await;
    owner_messages += 1;
    ilink.push_text(OWNER, "/digest");
    let matter: Vec<Mail> = bed
        .mail
        .iter()
        .filter(|m| m.kind.matters())
        .cloned()
        .collect();
    bed.wait_until("every mail that matters in a digest", || {
        let sent = bed.sent();
        matter
            .iter()
            .all(|m| sent.iter().any(|t| t.contains(&m.subject)))
    })
    .await;
    // The daemon agrees: no item waits for a digest or for its digest's delivery.
    bed.wait_counts("every digest marked delivered", |c| {
        c.claimed == 0 && c.queued == 0
    })
    .await;
    terminate(&mut child);
    eprintln!("final run: drained in {:?}", spawned.elapsed());

    // Nothing lost, nothing twice: each mail that matters is in exactly one digest item.
    let sent = bed.sent();
    for m in &bed.mail {
        let items: usize = sent.iter().map(|t| t.matches(&m.subject).count()).sum();
        let want = usize::from(m.kind.matters());
        assert_eq!(
            items,
            want,
            "{} ({:?}) is in {items} digest items\n{}",
            m.subject,
            m.kind,
            bed.report()
        );
    }
    // The platform refused nothing but a repeat of a send it had taken (the lost answer).
    let rejected = ilink.rejected();
    assert!(
        rejected.iter().all(|r| r.reason == "client_id reused"),
        "refused sends: {rejected:?}"
    );

    // The model was asked once per mail a person wrote, plus once more for a mail whose
    // decision was in flight at a kill; never about bulk mail.
    let asked: Vec<String> = bed.asked().into_iter().flatten().collect();
    assert!(
        bed.asked().iter().all(|r| r.len() <= 2),
        "a request asked about more than triage_batch mails"
    );
    assert!(
        bed.asked().iter().any(|r| r.len() == 2),
        "no request carried a batch of two"
    );
    let mut retriaged = Vec::new();
    for m in &bed.mail {
        let n = asked.iter().filter(|s| **s == m.subject).count();
        let allowed = in_flight.iter().filter(|s| **s == m.subject).count();
        if m.kind.to_model() {
            assert!(
                n >= 1 && n <= 1 + allowed,
                "{} asked {n} times ({allowed} in flight at a kill)\n{}",
                m.subject,
                bed.report()
            );
            if n > 1 {
                retriaged.push(m.subject.clone());
            }
        } else {
            assert_eq!(n, 0, "{} reached the model", m.subject);
        }
    }
    assert!(
        asked
            .iter()
            .all(|s| bed.mail.iter().any(|m| m.subject == *s)),
        "requests that are not about an appended mail: {asked:?}"
    );

    // EXAMINE and BODY.PEEK only: \Seen and every other flag as they were appended.
    bed.check_flags();
    assert!(
        bed.flags.values().any(|f| f.contains("\\Seen"))
            && bed.flags.values().any(|f| f.contains("\\Flagged"))
            && bed.flags.values().any(|f| f.is_empty()),
        "the appended flags: {:?}",
        bed.flags
    );

    // No mail text in the logs, at trace level.
    let log = bed.log();
    // KILL9_MAIL_LOG=FILE keeps the daemons' logs for a look.
    if let Ok(keep) = std::env::var("KILL9_MAIL_LOG") {
        let _ = std::fs::write(keep, &log);
    }
    assert!(
        log.contains("TRACE") && log.contains("digest queued for the mail chat"),
        "trace-level logs were captured:\n{}",
        tail(&log, 20)
    );
    for m in &bed.mail {
        for text in [&m.body_marker, &m.subject] {
            let hits: Vec<&str> = log
                .lines()
                .filter(|l| l.contains(text.as_str()))
                .take(3)
                .collect();
            assert!(hits.is_empty(), "mail text in the logs: {hits:?}");
        }
    }

    eprintln!(
        "{} mails ({} that matter), {} rounds killed, {} owner messages, {} sends accepted, \
         {} refused as repeats, {} triage requests, re-triaged (in flight at a kill): {retriaged:?}; \
         log {} KiB; {:?} in all",
        bed.mail.len(),
        matter.len(),
        rounds.len(),
        owner_messages,
        sent.len(),
        rejected.len(),
        asked.len(),
        log.len() / 1024,
        started.elapsed(),
    );
}
