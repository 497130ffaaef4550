//! A quiet mailbox against a real Dovecot: every answer the server gives while the daemon waits
//! in IDLE (here: another client flagging a message) moves `last_success`, so it says when the
//! server last spoke, not when mail last came.

use crate::support_mail;

use scv_bridge::protocol::ComponentState;
use scv_mail::{ImapSession, Security};
use support_mail::{Harness, MAIL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_success_follows_idle_responses_in_a_quiet_mailbox() {
    let mut h = Harness::new("").await;
    // Two old messages: the daemon starts past them (nothing to triage), another client flags them.
    h.mail("old one", "x").await;
    h.mail("old two", "y").await;
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    let mut other = ImapSession::connect(&h.server.imap(Security::Plain))
        .await
        .expect("second client");
    other.select("INBOX").await.expect("select");
    // Twice: the first round may race the daemon's own update just before it enters IDLE; by
    // the second it is certainly waiting, and only an IDLE response can move `last_success`.
    for uid in [1, 2] {
        let cell = h
            .daemon
            .as_ref()
            .expect("running")
            .core
            .registry()
            .cell(MAIL)
            .expect("cell");
        cell.update(|c| c.last_success_unix_seconds = Some(1));
        assert!(
            other.mark_triaged(&[uid]).await.expect("flag"),
            "keywords allowed"
        );
        let now = scv_bridge::supervisor::unix_now();
        h.wait_health(10, "last_success moved by the server's answer", |x| {
            x.state == ComponentState::Connected && x.last_success_unix_seconds >= Some(now)
        })
        .await;
    }
    let counts = h.counts();
    assert_eq!(
        (counts.claimed, counts.seen_today),
        (0, 0),
        "no mail came: the mailbox stayed quiet"
    );
    other.logout().await;
    h.stop().await;
}
