//! The mail account end to end: real Dovecot and SMTP, the daemon, a fake model, an in-memory
//! mail chat and a manual clock. Every wait is for an event (with a generous bound).

use crate::support_mail;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use scv_bridge::protocol::ComponentState;
use support_mail::{Harness, OWNER};

fn assert_private(markers: &[&str]) {
    let logs = support_mail::logs();
    assert!(!logs.is_empty(), "logs were captured");
    for m in markers {
        let hit: Vec<&str> = logs.lines().filter(|l| l.contains(m)).take(3).collect();
        assert!(hit.is_empty(), "{m} appeared in the logs: {hit:?}");
    }
}

/// Counts Dovecot's writes below `home` (inotify), with the watcher that sees them. Locks are
/// left out: every look (`doveadm fetch`) takes the uidlist lock, and counting it would wake the
/// wait with each look it makes.
fn mailbox_writes(
    home: &std::path::Path,
) -> (
    tokio::sync::watch::Receiver<u64>,
    notify::RecommendedWatcher,
) {
    let (bumps, writes) = tokio::sync::watch::channel(0u64);
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        let write = e.is_ok_and(|e| {
            !matches!(e.kind, notify::EventKind::Access(_))
                && !e
                    .paths
                    .iter()
                    .all(|p| p.extension().is_some_and(|x| x == "lock"))
        });
        if write {
            bumps.send_modify(|n| *n = n.wrapping_add(1));
        }
    })
    .expect("an inotify watcher");
    notify::Watcher::watch(&mut watcher, home, notify::RecursiveMode::Recursive)
        .expect("watch the mailboxes");
    (writes, watcher)
}

async fn started(extra: &str) -> Harness {
    let mut h = Harness::new(extra).await;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_mail_is_claimed_within_a_second_reported_and_seen_untouched() {
    let mut h = started("").await;
    let sent = Instant::now();
    h.mail("Kiwi-Subject-4411", "Quokka-Body-5521").await;
    h.wait_health(5, "claimed", |x| {
        x.mail
            .as_ref()
            .is_some_and(|m| m.claimed + m.seen_today >= 1)
    })
    .await;
    let claimed_after = sent.elapsed();
    eprintln!("claimed {claimed_after:?} after SMTP 250");
    assert!(claimed_after < Duration::from_secs(1), "{claimed_after:?}");
    h.wait_health(5, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    let c = h.counts();
    assert_eq!(
        (c.seen_today, c.triaged_today, c.claimed, c.queued),
        (1, 1, 0, 1)
    );
    assert_eq!(c.tokens_today, 100);
    assert!(c.last_check_unix_seconds.is_some());
    // Not due yet (60 minutes by the manual clock): nothing was sent.
    assert!(h.digests().is_empty());
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    let d = &h.digests()[0];
    assert!(
        d.contains("\n1. Sender - Kiwi-Subject-4411 - A person wrote"),
        "{d}"
    );
    h.wait_health(5, "delivered", |x| {
        x.mail
            .as_ref()
            .is_some_and(|m| m.queued == 0 && m.messages_24h == 1)
    })
    .await;
    for (_, flags) in h.server.flags("INBOX") {
        assert!(!flags.contains("\\Seen"), "{flags}");
        assert!(
            !flags.contains("$ScvTriaged"),
            "marked without mark_triaged: {flags}"
        );
    }
    h.stop().await;
    assert_private(&[
        "Kiwi-Subject-4411",
        "Quokka-Body-5521",
        "sender@example.com",
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mark_triaged_sets_the_keyword_on_decided_mail_and_never_seen() {
    let mut h = started("mark_triaged = true\n").await;
    h.mail("Marked-Subject-1", "Marked-Body-1").await;
    h.bulk("Marked-Bulk-2", "Bulk-Body-2").await;
    h.wait_health(5, "both decided", |x| {
        x.mail
            .as_ref()
            .is_some_and(|m| m.seen_today == 2 && m.claimed == 0)
    })
    .await;
    // The keyword follows the stored decision; look again whenever Dovecot writes the mailbox
    // (the STORE renames the message files and appends to the index log).
    let mut writes = mailbox_writes(&h.server.mail_dir());
    let marked = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            // Marked seen before the look, so a write during it still wakes the wait.
            writes.0.borrow_and_update();
            let flags = h.server.flags("INBOX");
            if flags.len() == 2 && flags.iter().all(|(_, f)| f.contains("$ScvTriaged")) {
                return flags;
            }
            writes.0.changed().await.expect("the watcher lives");
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not marked: {:?}", h.server.flags("INBOX")));
    for (_, f) in &marked {
        assert!(!f.contains("\\Seen"), "{f}");
    }
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_mail_never_reaches_the_model() {
    let mut h = started("").await;
    h.bulk("Newsletter-Subject-7", "BULKMARK-Body").await;
    h.mail("Person-Subject-8", "hello").await;
    h.wait_health(10, "both decided", |x| {
        x.mail.as_ref().is_some_and(|m| m.seen_today == 2)
    })
    .await;
    let c = h.counts();
    assert_eq!((c.triaged_today, c.reported_today), (1, 1));
    assert_eq!(h.model.calls(), 1);
    assert!(!h.model.saw("BULKMARK"));
    h.stop().await;
    assert_private(&["Newsletter-Subject-7", "BULKMARK-Body"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_exhaustion_leaves_the_rest_to_the_prefilter_and_says_so() {
    let mut h = started("token_budget = 1000").await;
    h.model.tokens.store(450, Ordering::Relaxed);
    for i in 0..3u64 {
        h.mail(&format!("Budget-Subject-{i}"), "please read").await;
        h.wait_health(10, "decided", |x| {
            x.mail.as_ref().is_some_and(|m| m.seen_today == i + 1)
        })
        .await;
    }
    let c = h.counts();
    assert_eq!(
        (
            c.triaged_today,
            c.reported_today,
            c.tokens_today,
            c.token_budget
        ),
        (2, 2, 900, 1000)
    );
    assert_eq!(h.model.calls(), 2);
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    let d = &h.digests()[0];
    assert!(d.contains("1 mail not triaged today: budget spent"), "{d}");
    assert!(d.contains("2. "), "{d}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digests_batch_urgent_goes_at_once_and_the_daily_cap_holds() {
    let mut h = started("max_digests_per_day = 2").await;
    h.mail("Batch-A", "one").await;
    h.mail("Batch-B", "two").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 2)
    })
    .await;
    assert!(h.digests().is_empty(), "batched, not sent per mail");
    h.clock.advance(std::time::Duration::from_secs(61 * 60));
    h.wait_chat(1).await;
    let d = h.digests()[0].clone();
    assert!(
        d.contains("1. Sender - Batch-A") && d.contains("2. Sender - Batch-B"),
        "{d}"
    );

    h.mail("Alarm-1", "URGENT the server is down").await;
    h.wait_chat(2).await;
    assert!(h.digests()[1].contains("1. [urgent] Sender - Alarm-1 - Needs action today"));

    h.mail("Alarm-2", "URGENT again").await;
    h.wait_health(10, "queued", |x| {
        x.mail
            .as_ref()
            .is_some_and(|m| m.reported_today == 4 && m.queued == 1)
    })
    .await;
    h.owner_says("m1", "/digest").await;
    h.wait_chat(3).await;
    assert!(
        h.digests()[2].contains("limit is reached"),
        "{:?}",
        h.digests()
    );
    // The next local day (Asia/Shanghai) opens the cap again.
    h.clock.advance(std::time::Duration::from_secs(24 * 3600));
    h.wait_chat(4).await;
    assert!(h.digests()[3].contains("Alarm-2"));
    assert_eq!(h.digests().len(), 4);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abrupt_stop_between_claim_and_decision_loses_nothing() {
    let mut h = Harness::new("").await;
    h.env.hooks.stop_after_claim.store(true, Ordering::SeqCst);
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h.mail("Crash-Claim", "x").await;
    let hooks = h.env.hooks.clone();
    tokio::time::timeout(Duration::from_secs(10), hooks.reached.notified())
        .await
        .expect("stop point reached");
    assert_eq!(h.model.calls(), 0);
    h.stop().await;
    hooks.stop_after_claim.store(false, Ordering::SeqCst);
    h.start().await;
    h.wait_health(10, "decided after restart", |x| {
        x.mail
            .as_ref()
            .is_some_and(|m| m.reported_today == 1 && m.claimed == 0)
    })
    .await;
    assert_eq!(h.model.calls(), 1);
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    assert_eq!(h.digests()[0].matches("Crash-Claim").count(), 1);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abrupt_stop_between_digest_build_and_send_sends_once() {
    let mut h = Harness::new("").await;
    h.env
        .hooks
        .stop_after_digest_build
        .store(true, Ordering::SeqCst);
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h.mail("Crash-Digest", "URGENT now").await;
    let hooks = h.env.hooks.clone();
    tokio::time::timeout(Duration::from_secs(10), hooks.reached.notified())
        .await
        .expect("stop point reached");
    h.stop().await;
    assert!(h.digests().is_empty());
    hooks.stop_after_digest_build.store(false, Ordering::SeqCst);
    h.start().await;
    h.wait_chat(1).await;
    h.owner_says("m1", "/digest").await;
    h.wait_chat(2).await;
    let all = h.digests();
    assert_eq!(all[1], "Nothing new.");
    assert_eq!(all.iter().filter(|d| d.contains("Crash-Digest")).count(), 1);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uidvalidity_change_does_not_re_report() {
    let mut h = Harness::new("mailbox = \"Work\"").await;
    h.server
        .doveadm(&["mailbox", "create", "-u", "test", "Work"]);
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h.server.deliver("test+Work@mail.test", "Old-1", "x").await;
    h.server.deliver("test+Work@mail.test", "Old-2", "x").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 2)
    })
    .await;
    let asked_before = h.model.calls();
    h.stop().await;
    // Recreate the mailbox: a new UIDVALIDITY, and the old mail back under new UIDs.
    h.server
        .doveadm(&["mailbox", "delete", "-u", "test", "Work"]);
    h.server
        .doveadm(&["mailbox", "create", "-u", "test", "Work"]);
    h.server.deliver("test+Work@mail.test", "Old-1", "x").await;
    h.server.deliver("test+Work@mail.test", "Old-2", "x").await;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    h.server.deliver("test+Work@mail.test", "New-3", "x").await;
    h.wait_health(10, "new one reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 3)
    })
    .await;
    assert_eq!(h.counts().seen_today, 3);
    // Only the new mail was asked about after the restart.
    assert_eq!(h.model.calls(), asked_before + 1);
    assert_eq!(h.model.asked_about("Old-1"), 1);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dovecot_restart_backs_off_then_reconnects() {
    let mut h = started("").await;
    let port = h.server.var("IMAP_PORT").to_string();
    h.server.pause();
    h.wait_health(10, "backoff", |x| {
        matches!(
            x.state,
            ComponentState::Backoff | ComponentState::Starting | ComponentState::Disconnected
        )
    })
    .await;
    h.server.resume();
    assert_eq!(h.server.var("IMAP_PORT"), port);
    h.wait_health(15, "reconnected", |x| {
        x.state == ComponentState::Connected && x.restarts >= 1
    })
    .await;
    h.mail("After-Restart", "x").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_fails_with_the_login_hint() {
    let mut h = Harness::new("").await;
    h.password = "wrong".into();
    h.start().await;
    h.wait_health(10, "failed with an action", |x| {
        x.state == ComponentState::Failed && x.action.is_some()
    })
    .await;
    let action = h.health().action.clone().unwrap_or_default();
    assert!(action.contains("scv-bridge login mail box"), "{action}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_reset_at_local_midnight() {
    let mut h = started("").await;
    h.mail("Midnight", "x").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    let day = |hms: (u32, u32, u32)| {
        use chrono::TimeZone;
        chrono::Utc
            .with_ymd_and_hms(2026, 3, 2, hms.0, hms.1, hms.2)
            .single()
            .expect("t")
    };
    // 23:59 in Asia/Shanghai: still the same day.
    h.clock.set_utc(day((15, 59, 0)));
    h.wait_health(10, "same day", |x| {
        x.mail.as_ref().is_some_and(|m| m.seen_today == 1)
    })
    .await;
    h.clock.set_utc(day((16, 0, 1)));
    h.wait_health(10, "reset", |x| {
        x.mail
            .as_ref()
            .is_some_and(|m| m.seen_today == 0 && m.tokens_today == 0 && m.reported_today == 0)
    })
    .await;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_is_sent_threaded_only_after_yes() {
    let mut h = started("").await;
    h.mail("Question-Subject", "Can you come?").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    h.owner_says("m2", "/reply 1 Yes, I will be there.").await;
    h.wait_chat(2).await;
    let q = h.digests()[1].clone();
    assert!(
        q.starts_with("Send this reply to sender@example.com?"),
        "{q}"
    );
    let spool = std::path::PathBuf::from(h.server.var("MAILSERVER_SPOOL"));
    let emls = || -> Vec<String> {
        std::fs::read_dir(&spool)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
                    .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(emls().len(), 1, "nothing sent before yes");
    h.owner_says("m3", "yes").await;
    h.wait_chat(3).await;
    assert!(h.digests()[2].starts_with("Sent"), "{:?}", h.digests());
    let all = emls();
    assert_eq!(all.len(), 2);
    let original = all
        .iter()
        .find(|e| !e.contains("In-Reply-To"))
        .expect("original");
    let reply = all
        .iter()
        .find(|e| e.contains("In-Reply-To"))
        .expect("reply");
    let id = original
        .lines()
        .find_map(|l| l.strip_prefix("Message-ID: "))
        .expect("original id")
        .trim();
    assert!(reply.contains(&format!("In-Reply-To: {id}")), "{reply}");
    assert!(reply.contains("References: ") && reply.contains("Subject: Re: Question-Subject"));
    assert_eq!(h.server.flags("Sent").len(), 1, "saved to Sent");
    // A second yes finds nothing waiting: the reply went exactly once.
    h.owner_says("m4", "yes").await;
    h.wait_chat(4).await;
    assert_eq!(emls().len(), 2);
    let _ = OWNER;
    h.stop().await;
    assert_private(&["Question-Subject", "Can you come?", "I will be there"]);
}
