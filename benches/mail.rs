//! Mail triage figures against a real Dovecot: first scan of a 10,000-message mailbox, triage
//! throughput with an instant fake model, triage at model speed (a fake model that thinks 1 s a
//! call and reports tokens by the text it was sent), IMAP commands per new message, RSS on 20
//! mailboxes. Prints its figures; `cargo bench -p scv-bridge --bench mail` (all), or
//! `-- model-speed` for the model-speed figures alone.

#[path = "../tests/support_mail/mod.rs"]
#[allow(unused_imports)]
mod support_mail;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use scv_bridge::protocol::ComponentState;
use support_mail::Harness;

/// Writes `n` messages straight into the user's Maildir INBOX (what an import would do).
fn seed(server: &support_mail::MailServer, n: usize, bulk: bool) {
    seed_with(server, n, bulk, "Body of message {i}.")
}

/// [`seed`] with a body of the caller's (`{i}` becomes the message's number).
fn seed_with(server: &support_mail::MailServer, n: usize, bulk: bool, body: &str) {
    let home = Path::new(server.var("MAILSERVER_DIR")).join("mail/test");
    let (uid, gid) = std::fs::metadata(&home)
        .map(|m| (m.uid(), m.gid()))
        .expect("home");
    for d in ["new", "cur", "tmp"] {
        let p = home.join("Maildir").join(d);
        std::fs::create_dir_all(&p).expect("maildir");
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).expect("chown");
        std::os::unix::fs::chown(p.parent().expect("parent"), Some(uid), Some(gid)).expect("chown");
    }
    for i in 0..n {
        let extra = if bulk {
            "List-Unsubscribe: <mailto:u@example.com>\r\nPrecedence: bulk\r\n"
        } else {
            ""
        };
        let raw = format!(
            "From: Person {i} <p{i}@example.com>\r\nTo: test@mail.test\r\nSubject: Message {i}\r\n\
             Message-ID: <seed-{i}@example.com>\r\n{extra}Content-Type: text/plain\r\n\r\n{body}\r\n",
            body = body.replace("{i}", &i.to_string())
        );
        let p = home.join("Maildir/new").join(format!("{i}.seed.host"));
        std::fs::write(&p, raw).expect("write");
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).expect("chown");
    }
}

async fn scan(n: usize, bulk: bool) -> (Duration, usize) {
    let mut h = Harness::with_server("backfill_days = 2", &[]).await;
    seed(&h.server, n, bulk);
    let t = Instant::now();
    h.start().await;
    let want = n as u64;
    h.wait_health(600, "all decided", |x| {
        x.mail.as_ref().is_some_and(|m| m.seen_today >= want)
    })
    .await;
    let took = t.elapsed();
    let calls = h.model.calls();
    h.stop().await;
    (took, calls)
}

/// A first scan of `n` person mails with a model that takes 1 s a call: wall time, calls, and
/// tokens per mail as the model counted them.
async fn model_speed(n: usize, batch: u32, parallel: u32) -> (Duration, usize, f64) {
    let settings = format!(
        "backfill_days = 2\ntoken_budget = 100000000\ntriage_batch = {batch}\ntriage_parallel = {parallel}"
    );
    let mut h = Harness::with_server(&settings, &[]).await;
    // A short everyday mail: a greeting, a question, a signature (about 300 characters).
    seed_with(
        &h.server,
        n,
        false,
        "Hi,\r\n\r\nCould you send me the slides from Tuesday's review before Friday? We want to \
         go through the numbers on page {i} with the team and check the Q3 forecast against what \
         finance sent last week.\r\n\r\nThanks,\r\nMing\r\n--\r\nMing Li, Product, Example Ltd.",
    );
    h.model
        .tokens
        .store(0, std::sync::atomic::Ordering::Relaxed);
    h.model
        .delay_ms
        .store(1000, std::sync::atomic::Ordering::Relaxed);
    let t = Instant::now();
    h.start().await;
    let want = n as u64;
    h.wait_health(3600, "all decided", |x| {
        x.mail.as_ref().is_some_and(|m| m.seen_today >= want)
    })
    .await;
    let took = t.elapsed();
    let tokens = h.counts().tokens_today;
    let calls = h.model.calls();
    h.stop().await;
    (took, calls, tokens as f64 / n as f64)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

async fn round_trips(n: usize) -> (usize, usize) {
    let mut h = Harness::with_server("", &["--rawlog"]).await;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    let before = h.server.rawlog_client_lines().len();
    for i in 0..n {
        h.mail(&format!("rt {i}"), "x").await;
        let want = (i + 1) as u64;
        h.wait_health(10, "decided", |x| {
            x.mail.as_ref().is_some_and(|m| m.seen_today >= want)
        })
        .await;
    }
    let lines = h.server.rawlog_client_lines();
    let new = &lines[before.min(lines.len())..];
    let commands = new
        .iter()
        .filter(|l| !l.trim().eq_ignore_ascii_case("DONE"))
        .count();
    let fetches = new
        .iter()
        .filter(|l| l.to_ascii_uppercase().contains("UID FETCH"))
        .count();
    h.stop().await;
    (commands, fetches)
}

async fn idle_rss(accounts: usize) -> (u64, u64) {
    let mut extra = String::new();
    let h = Harness::with_server("", &[]).await;
    for i in 0..accounts {
        h.server
            .doveadm(&["mailbox", "create", "-u", "test", &format!("F{i}")]);
        extra.push_str(&format!(
            "[mail.f{i}]\nimap_host = \"127.0.0.1\"\nimap_port = {}\ntls = \"none\"\nusername = \"test\"\nmailbox = \"F{i}\"\nreport_to = \"wechat:chat\"\n",
            h.server.var("IMAP_PORT")
        ));
    }
    let before = rss_kib();
    let mut h = h;
    // The extra accounts follow [mail.box] in the file.
    h.extra = extra;
    h.start().await;
    let creds = scv_bridge::secrets::CredentialStore::open(
        scv_bridge::config::CredentialsMode::File,
        &h.state_dir().join("state"),
    )
    .expect("creds");
    for i in 0..accounts {
        creds
            .save(
                &format!("mail:f{i}"),
                &scv_bridge::secrets::Credentials::default().with("password", "secret"),
            )
            .expect("save");
    }
    if let Some(d) = &h.daemon {
        let _ = d.core.reload().await;
        for i in 0..accounts {
            let id = format!("mail:f{i}");
            let registry = d.core.registry();
            let _ = tokio::time::timeout(
                Duration::from_secs(30),
                scv_bridge::testing::wait_for_state(&registry, &id, ComponentState::Connected),
            )
            .await;
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    h.stop().await;
    (before, after)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let only_model_speed = std::env::args().any(|a| a == "model-speed");
    rt.block_on(async {
        for (n, batch, parallel) in [(60, 1, 1), (2_000, 10, 4)] {
            let (took, calls, per_mail) = model_speed(n, batch, parallel).await;
            println!(
                "triage at model speed (1 s a call), first scan of {n} person mails, \
                 triage_batch = {batch}, triage_parallel = {parallel}: {:.1} s, {:.1} mails/s, \
                 {calls} calls, {per_mail:.1} tokens per mail",
                took.as_secs_f64(),
                n as f64 / took.as_secs_f64()
            );
        }
        if only_model_speed {
            return;
        }
        let n = 10_000;
        let (took, calls) = scan(n, true).await;
        println!(
            "first scan, {n} bulk messages (backfill): {:.2} s, {:.0} claimed+pre-filtered/s, model calls {calls}",
            took.as_secs_f64(),
            n as f64 / took.as_secs_f64()
        );
        let m = 500;
        let (took, calls) = scan(m, false).await;
        println!(
            "triage, {m} person messages, instant fake model over HTTP: {:.2} s, {:.0} triaged/s, model calls {calls}",
            took.as_secs_f64(),
            m as f64 / took.as_secs_f64()
        );
        let k = 20;
        let (commands, fetches) = round_trips(k).await;
        println!(
            "IMAP per new message ({k} delivered one by one while idle): {:.2} commands, {:.2} UID FETCH",
            commands as f64 / k as f64,
            fetches as f64 / k as f64
        );
        let (before, after) = idle_rss(20).await;
        println!("RSS idling on 20 mailboxes: {after} KiB ({} KiB more than before the daemon)", after.saturating_sub(before));
    });
}
