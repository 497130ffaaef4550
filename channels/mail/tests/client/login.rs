//! Logging in against a real Dovecot over every transport, and how failures classify.

use crate::support;

use scv_mail::{ErrorClass, ImapAuth, ImapSession, MailError, Password, Security};
use support::MailServer;

#[tokio::test]
async fn plain_to_loopback_logs_in_and_sees_capabilities() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    let session = ImapSession::connect(&server.imap(Security::Plain))
        .await
        .expect("login");
    assert!(!session.is_tls());
    // Asked again after login: the greeting's list lacks these.
    for cap in ["IDLE", "UIDPLUS", "SPECIAL-USE", "ID"] {
        assert!(
            session.has_capability(cap),
            "{cap} missing: {:?}",
            session.capabilities()
        );
    }
    session.logout().await;
}

#[tokio::test]
async fn starttls_and_implicit_tls_verify_against_the_test_ca() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    for security in [Security::StartTls, Security::Tls] {
        let mut session = ImapSession::connect(&server.imap(security))
            .await
            .expect("login");
        assert!(session.is_tls(), "{security:?}");
        session.noop().await.expect("noop");
        session.logout().await;
    }
}

#[tokio::test]
async fn login_and_authenticate_plain_both_work() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    for auth in [ImapAuth::Login, ImapAuth::Plain, ImapAuth::Auto] {
        let mut settings = server.imap(Security::StartTls);
        settings.auth = auth;
        let mut session = ImapSession::connect(&settings).await.expect("login");
        session.noop().await.expect("noop");
        session.logout().await;
    }
}

#[tokio::test]
async fn id_is_sent_when_advertised() {
    let server = MailServer::start(&["--smtp-port", "off", "--rawlog"]);
    let session = server.login().await;
    assert!(session.has_capability("ID"));
    session.logout().await;
    let lines = wait_for_rawlog(&server, |l| l.contains("ID (")).await;
    let id = lines
        .iter()
        .find(|l| l.contains("ID ("))
        .expect("ID command in rawlog");
    assert!(id.contains("\"name\" \"scv-bridge\""), "{id}");
}

#[tokio::test]
async fn wrong_password_is_fatal_auth() {
    for auth in [ImapAuth::Plain, ImapAuth::Login] {
        // An instance each: Dovecot adds a penalty of seconds to a second failure from one IP.
        let server = MailServer::start(&["--smtp-port", "off"]);
        let mut settings = server.imap(Security::StartTls);
        settings.password = Password::new("wrong");
        settings.auth = auth;
        let err = ImapSession::connect(&settings)
            .await
            .expect_err("must be refused");
        assert!(matches!(err, MailError::AuthRejected(_)), "{auth:?}: {err}");
        assert_eq!(err.classify(), ErrorClass::Fatal { auth: true });
        assert!(!err.to_string().contains("wrong"), "password leaked: {err}");
    }
}

#[tokio::test]
async fn untrusted_certificate_is_fatal_but_not_auth() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    for security in [Security::Tls, Security::StartTls] {
        let mut settings = server.imap(security);
        settings.tls_ca = None; // only the system roots: the test CA is unknown
        let err = ImapSession::connect(&settings)
            .await
            .expect_err("must be refused");
        assert!(
            matches!(err, MailError::Certificate(_)),
            "{security:?}: {err}"
        );
        assert_eq!(err.classify(), ErrorClass::Fatal { auth: false });
    }
}

#[tokio::test]
async fn starttls_refused_by_the_server_is_fatal_not_auth() {
    // With TLS off, Dovecot does not offer STARTTLS and refuses the command.
    let server = MailServer::start(&["--smtp-port", "off", "--imaps-port", "off"]);
    let mut settings = server.imap(Security::StartTls);
    settings.tls_ca = None; // no test CA without TLS
    let err = ImapSession::connect(&settings).await.expect_err("no TLS");
    assert!(matches!(err, MailError::Unsupported(_)), "{err}");
    assert_eq!(err.classify(), ErrorClass::Fatal { auth: false });
}

#[tokio::test]
async fn server_gone_is_transient() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    let settings = server.imap(Security::Plain);
    drop(server); // stops Dovecot at once
    let err = ImapSession::connect(&settings)
        .await
        .expect_err("nothing listens");
    assert_eq!(err.classify(), ErrorClass::Transient, "{err}");
}

/// Dovecot writes the rawlog as the session runs; wait until the wanted line is there, looking
/// again whenever a file in the rawlog folder is made or written (inotify), at most 5 s.
async fn wait_for_rawlog(server: &MailServer, want: impl Fn(&str) -> bool) -> Vec<String> {
    let (bumps, mut changed) = tokio::sync::watch::channel(0u64);
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        // Our own reads of the files are no change: counting them would wake every look.
        if e.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
            bumps.send_modify(|n| *n = n.wrapping_add(1));
        }
    })
    .expect("an inotify watcher");
    notify::Watcher::watch(
        &mut watcher,
        &server.rawlog_dir(),
        notify::RecursiveMode::NonRecursive,
    )
    .expect("watch the rawlog folder (start with --rawlog)");
    let found = async {
        loop {
            // Marked seen before the look, so a write during it still wakes the wait.
            changed.borrow_and_update();
            let lines = server.rawlog_client_lines();
            if lines.iter().any(|l| want(l)) {
                return lines;
            }
            changed.changed().await.expect("the watcher lives");
        }
    };
    match tokio::time::timeout(std::time::Duration::from_secs(5), found).await {
        Ok(lines) => lines,
        // The caller's assertion reports what was there.
        Err(_) => server.rawlog_client_lines(),
    }
}
