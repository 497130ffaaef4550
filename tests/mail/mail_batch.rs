//! Triage at model speed: several mails per model call, a few calls at once, and a batch whose
//! answer is partly invalid asks again only for what it left undecided. Real Dovecot, the daemon,
//! the fake model.

use crate::support_mail;

use std::sync::atomic::Ordering;

use scv_bridge::protocol::ComponentState;
use support_mail::Harness;

/// Delivers `subjects` before the daemon's first start; `backfill_days` makes it triage them.
async fn waiting_mail(extra: &str, subjects: &[(&str, &str)]) -> Harness {
    let mut h = Harness::new(&format!("backfill_days = 1\n{extra}")).await;
    for (subject, body) in subjects {
        h.mail(subject, body).await;
    }
    h.start().await;
    h
}

async fn all_decided(h: &Harness, n: u64) {
    h.wait_health(30, "all decided", |x| {
        x.state == ComponentState::Connected && x.mail.as_ref().is_some_and(|m| m.seen_today == n)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_waiting_mails_are_decided_in_one_call() {
    let subjects: Vec<String> = (0..10).map(|i| format!("Batch-Ten-{i}")).collect();
    let mail: Vec<(&str, &str)> = subjects.iter().map(|s| (s.as_str(), "hello")).collect();
    let mut h = waiting_mail("triage_batch = 10", &mail).await;
    all_decided(&h, 10).await;
    assert_eq!(h.model.calls(), 1);
    let c = h.counts();
    assert_eq!((c.triaged_today, c.reported_today), (10, 10));
    // The call's 100 tokens are shared by its ten mails, so the day adds up to what was spent.
    assert_eq!(c.tokens_today, 100);
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    let d = &h.digests()[0];
    assert_eq!(d.matches("A person wrote").count(), 10, "{d}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partly_invalid_answer_asks_again_only_for_the_missing_mail() {
    let mail = [
        ("Partial-A", "hello"),
        ("Partial-B", "FORGETME please"),
        ("Partial-C", "URGENT now"),
    ];
    let mut h = waiting_mail("triage_batch = 10", &mail).await;
    all_decided(&h, 3).await;
    assert_eq!(h.model.calls(), 2);
    assert_eq!(h.model.asked_about("Partial-A"), 1);
    assert_eq!(h.model.asked_about("Partial-C"), 1);
    assert_eq!(h.model.asked_about("Partial-B"), 2);
    let c = h.counts();
    assert_eq!((c.triaged_today, c.reported_today), (3, 3));
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    let d = &h.digests()[0];
    // The re-asked mail got its own decision, not the fallback without a summary.
    assert!(d.contains("Partial-B - A person wrote"), "{d}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_decision_twice_still_reports_the_mail() {
    let mail = [("Broken-A", "hello"), ("Broken-B", "GARBAGE")];
    let mut h = waiting_mail("triage_batch = 10", &mail).await;
    all_decided(&h, 2).await;
    assert_eq!(h.model.calls(), 2);
    assert_eq!(h.model.asked_about("Broken-B"), 2);
    let c = h.counts();
    // Broken-B is reported without a summary: failing towards telling the owner.
    assert_eq!((c.seen_today, c.reported_today), (2, 2));
    h.owner_says("m1", "/digest").await;
    h.wait_chat(1).await;
    let d = &h.digests()[0];
    assert!(d.contains("Broken-A - A person wrote"), "{d}");
    assert!(
        d.contains("Broken-B") && !d.contains("Broken-B - A person wrote"),
        "{d}"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_side_by_side_up_to_triage_parallel() {
    let subjects: Vec<String> = (0..8).map(|i| format!("Side-{i}")).collect();
    let mail: Vec<(&str, &str)> = subjects.iter().map(|s| (s.as_str(), "hello")).collect();
    let mut h = Harness::new("backfill_days = 1\ntriage_batch = 2\ntriage_parallel = 3").await;
    for (subject, body) in &mail {
        h.mail(subject, body).await;
    }
    // Each answer waits until three calls are in flight: reached only if they run side by side.
    h.model.gate.store(3, Ordering::SeqCst);
    h.start().await;
    all_decided(&h, 8).await;
    assert_eq!(h.model.calls(), 4);
    assert_eq!(h.model.max_in_flight.load(Ordering::SeqCst), 3);
    assert_eq!(h.counts().reported_today, 8);
    h.stop().await;
}
