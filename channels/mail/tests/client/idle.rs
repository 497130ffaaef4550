//! Waiting for new mail: IDLE woken by real SMTP delivery, refresh, cancellation and the
//! NOOP fallback. Every wait is for an event; no test sleeps for a fixed time.

use crate::support;

use std::time::{Duration, Instant};

use scv_mail::{ImapSession, Security, Wake};
use support::MailServer;
use tokio_util::sync::CancellationToken;

/// Waits until the session is listening, then delivers one mail over SMTP; returns when the
/// SMTP server has answered 250 (the mail is then in the mailbox).
fn deliver_when_listening(
    server: &MailServer,
    session: &ImapSession,
    subject: &'static str,
) -> tokio::task::JoinHandle<Instant> {
    let mut listening = session.listening();
    let smtp = server.smtp(Security::Plain);
    tokio::spawn(async move {
        listening.wait_for(|on| *on).await.expect("session dropped");
        let sender = scv_mail::SmtpSender::new(&smtp).await.expect("smtp");
        let mail = scv_mail::OutgoingMail {
            from: scv_mail::MailAddress::new(None, "sender@example.com"),
            to: vec![scv_mail::MailAddress::new(None, "test@mail.test")],
            subject: subject.to_owned(),
            body: "hello".to_owned(),
            ..Default::default()
        };
        sender
            .send(&scv_mail::build_message(&mail).expect("build"))
            .await
            .expect("send");
        Instant::now()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_wakes_within_a_second_of_delivery() {
    let server = MailServer::start(&[]);
    let mut session = server.login().await;
    let inbox = session.select("INBOX").await.expect("select");
    let next = inbox.uid_next.expect("uidnext");
    let delivered = deliver_when_listening(&server, &session, "wake up");
    let cancel = CancellationToken::new();

    let wake = session
        .wait_for_change(Duration::from_secs(10), &cancel)
        .await
        .expect("wait");
    let woke = Instant::now();
    let sent = delivered.await.expect("delivery task");
    assert_eq!(wake, Wake::Changed);
    assert!(session.stats().idles >= 1, "IDLE was used");
    let latency = woke.saturating_duration_since(sent);
    eprintln!("IDLE wake latency after SMTP 250: {latency:?}");
    assert!(
        latency < Duration::from_secs(1),
        "woke {latency:?} after delivery"
    );

    let uids = session.uids_from(next).await.expect("search");
    let items = session.fetch_items(&uids).await.expect("fetch");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].subject, "wake up");
    assert!(
        !*session.listening().borrow(),
        "not listening after the wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn news_announced_between_commands_is_not_lost() {
    let server = MailServer::start(&[]);
    let mut session = server.login().await;
    session.select("INBOX").await.expect("select");
    // Delivered while no IDLE runs: the next command's answer announces it.
    server.deliver("test@mail.test", "early", "x").await;
    session.noop().await.expect("noop");
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let wake = session
        .wait_for_change(Duration::from_secs(10), &cancel)
        .await
        .expect("wait");
    assert_eq!(wake, Wake::Changed);
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "returned at once"
    );
}

#[tokio::test]
async fn idle_is_reissued_each_refresh_and_times_out() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    let mut settings = server.imap(Security::Plain);
    settings.idle_refresh = Duration::from_millis(40);
    let mut session = ImapSession::connect(&settings).await.expect("login");
    session.select("INBOX").await.expect("select");
    let cancel = CancellationToken::new();
    let wake = session
        .wait_for_change(Duration::from_millis(300), &cancel)
        .await
        .expect("wait");
    assert_eq!(wake, Wake::Timeout);
    assert!(
        session.stats().idles >= 3,
        "IDLE re-issued: {:?}",
        session.stats()
    );
    session
        .noop()
        .await
        .expect("session still usable after DONE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_idle_and_keeps_the_session() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    let mut session = server.login().await;
    session.select("INBOX").await.expect("select");
    let cancel = CancellationToken::new();
    let mut listening = session.listening();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        let _ = listening.wait_for(|on| *on).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let wake = session
        .wait_for_change(Duration::from_secs(30), &cancel)
        .await
        .expect("wait");
    assert_eq!(wake, Wake::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(session.is_open());
    session.noop().await.expect("usable after cancel");
    assert_eq!(
        session.uids_from(1).await.expect("search"),
        Vec::<u32>::new()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noop_polling_is_used_without_idle_and_sees_new_mail() {
    let server = MailServer::start(&[]);
    let mut settings = server.imap(Security::Plain);
    settings.use_idle = false; // as on a server that does not advertise IDLE
    settings.poll_interval = Duration::from_millis(50);
    let mut session = ImapSession::connect(&settings).await.expect("login");
    session.select("INBOX").await.expect("select");
    let delivered = deliver_when_listening(&server, &session, "polled");
    let cancel = CancellationToken::new();
    let wake = session
        .wait_for_change(Duration::from_secs(10), &cancel)
        .await
        .expect("wait");
    delivered.await.expect("delivery task");
    assert_eq!(wake, Wake::Changed);
    assert_eq!(session.stats().idles, 0);
    assert!(session.stats().noops >= 1);
}

#[tokio::test]
async fn waiting_needs_a_selected_mailbox() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    let mut session = server.login().await;
    let cancel = CancellationToken::new();
    let err = session
        .wait_for_change(Duration::from_millis(10), &cancel)
        .await
        .expect_err("no mailbox");
    assert_eq!(err.code(), "config");
}

#[tokio::test]
async fn server_shutdown_during_idle_is_transient() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    let mut session = server.login().await;
    session.select("INBOX").await.expect("select");
    let mut listening = session.listening();
    let cancel = CancellationToken::new();
    let wait = session.wait_for_change(Duration::from_secs(30), &cancel);
    let stop = async {
        listening.wait_for(|on| *on).await.expect("listening");
        drop(server); // SIGKILL to Dovecot: the connection drops under IDLE
        std::future::pending::<()>().await
    };
    let result = tokio::select! { r = wait => r, _ = stop => unreachable!() };
    let err = result.expect_err("connection lost");
    assert_eq!(err.classify(), scv_mail::ErrorClass::Transient, "{err}");
    assert!(!session.is_open());
    assert_eq!(
        session.noop().await.expect_err("closed").code(),
        "session_closed"
    );
}
