//! SMTP sending against the real receiver (delivering into Dovecot): threaded replies,
//! TLS variants, AUTH failures, and saving the sent bytes to the Sent folder.

use crate::support;

use scv_mail::{
    ErrorClass, MailAddress, MailError, MailItem, Password, Security, SmtpSender, SmtpSettings,
    build_message, parse_message, reply_to,
};
use support::{MailServer, fixture};

fn original(name: &str) -> MailItem {
    let raw = std::fs::read(fixture(name)).expect("fixture");
    parse_message(&raw, &Default::default())
}

fn me() -> MailAddress {
    MailAddress::new(Some("Test Owner"), "test@mail.test")
}

/// The envelope files the receiver wrote, as JSON values.
fn spool(server: &MailServer) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(server.var("MAILSERVER_SPOOL"))
        .expect("spool")
        .flatten()
    {
        if entry.path().extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(entry.path()).expect("json");
            out.push(serde_json::from_str(&text).expect("valid json"));
        }
    }
    out
}

#[tokio::test]
async fn threaded_reply_over_starttls_with_auth_arrives_threaded() {
    let server = MailServer::start(&["--deliver", "all", "--smtp-auth-required"]);
    let parent = original("alternative-with-attachment.eml");
    let reply = reply_to(&parent, me(), "Monday works for me.\nSee you.").expect("reply");
    let built = build_message(&reply).expect("build");

    let sender = SmtpSender::new(&server.smtp(Security::StartTls))
        .await
        .expect("settings");
    sender.verify().await.expect("verify");
    sender.send(&built).await.expect("send");

    let envelopes = spool(&server);
    assert_eq!(envelopes.len(), 1);
    assert_eq!(envelopes[0]["auth_user"], "test");
    assert_eq!(envelopes[0]["tls"], true);
    assert_eq!(
        envelopes[0]["rcpt_tos"],
        serde_json::json!(["alice.work@example.com"])
    );

    let mut session = server.login().await;
    session.examine("INBOX").await.expect("examine");
    let items = session.fetch_items(&[1]).await.expect("fetch");
    let got = &items[0];
    assert_eq!(got.subject, "Re: Plan for Monday");
    assert_eq!(got.message_id.as_deref(), Some(built.message_id.as_str()));
    assert_eq!(got.in_reply_to.as_deref(), Some("alt@fixtures.test"));
    assert_eq!(
        got.references,
        vec![
            "root@example.com",
            "parent@example.com",
            "alt@fixtures.test"
        ]
    );
    assert_eq!(got.to[0].address, "alice.work@example.com");
    assert_eq!(
        got.from.as_ref().map(|a| a.address.as_str()),
        Some("test@mail.test")
    );
    assert_eq!(got.excerpt, "Monday works for me.\nSee you.");

    // A reply to the reply keeps one "Re: " and extends the thread.
    let again = reply_to(got, me(), "ok").expect("reply again");
    assert_eq!(again.subject, "Re: Plan for Monday");
    assert_eq!(
        again.references.last().map(String::as_str),
        Some(built.message_id.as_str())
    );
}

#[tokio::test]
async fn non_ascii_reply_over_implicit_tls_round_trips() {
    let server = MailServer::start(&["--deliver", "all"]);
    let parent = original("gbk-base64.eml");
    let reply = reply_to(&parent, me(), "收到，准时参加。").expect("reply");
    let built = build_message(&reply).expect("build");
    let sender = SmtpSender::new(&server.smtp(Security::Tls))
        .await
        .expect("settings");
    sender.send(&built).await.expect("send");

    let mut session = server.login().await;
    session.examine("INBOX").await.expect("examine");
    let got = &session.fetch_items(&[1]).await.expect("fetch")[0];
    assert_eq!(got.subject, "Re: 会议通知");
    assert_eq!(got.excerpt, "收到，准时参加。");
    assert_eq!(got.to[0].address, "zhangsan@example.cn");
}

#[tokio::test]
async fn sent_copy_is_appended_to_the_sent_folder() {
    let server = MailServer::start(&["--deliver", "all"]);
    let reply =
        reply_to(&original("alternative-with-attachment.eml"), me(), "Filed.").expect("reply");
    let built = build_message(&reply).expect("build");
    SmtpSender::new(&server.smtp(Security::StartTls))
        .await
        .expect("settings")
        .send(&built)
        .await
        .expect("send");

    let mut session = server.login().await;
    assert_eq!(
        session.find_sent_folder().await.expect("list").as_deref(),
        Some("Sent")
    );
    let folder = session.append_to_sent(&built.raw).await.expect("append");
    assert_eq!(folder.as_deref(), Some("Sent"));
    let sent = session.examine("Sent").await.expect("examine Sent");
    assert_eq!(sent.exists, 1);
    let items = session.fetch_items(&[1]).await.expect("fetch");
    assert_eq!(
        items[0].message_id.as_deref(),
        Some(built.message_id.as_str())
    );
    assert!(items[0].seen, "our own sent copy is stored as read");
    assert_eq!(items[0].in_reply_to.as_deref(), Some("alt@fixtures.test"));
}

#[tokio::test]
async fn wrong_smtp_password_is_fatal_auth() {
    let server = MailServer::start(&["--smtp-auth-required"]);
    let mut settings = server.smtp(Security::StartTls);
    settings.credentials = Some(("test".to_owned(), Password::new("wrong")));
    let sender = SmtpSender::new(&settings).await.expect("settings");
    let mail = reply_to(&original("gbk-base64.eml"), me(), "x").expect("reply");
    let err = sender
        .send(&build_message(&mail).expect("build"))
        .await
        .expect_err("refused");
    assert!(matches!(err, MailError::AuthRejected(_)), "{err}");
    assert_eq!(err.classify(), ErrorClass::Fatal { auth: true });
    assert!(spool(&server).is_empty());
}

#[tokio::test]
async fn untrusted_smtp_certificate_is_fatal_not_auth() {
    let server = MailServer::start(&[]);
    for security in [Security::StartTls, Security::Tls] {
        let mut settings = server.smtp(security);
        settings.tls_ca = None;
        let sender = SmtpSender::new(&settings).await.expect("settings");
        let err = sender.verify().await.expect_err("certificate refused");
        assert_eq!(
            err.classify(),
            ErrorClass::Fatal { auth: false },
            "{security:?}: {err}"
        );
        assert_eq!(err.code(), "tls_certificate", "{security:?}: {err}");
    }
}

#[tokio::test]
async fn plain_smtp_is_refused_to_non_loopback_and_gone_server_is_transient() {
    let settings = SmtpSettings::new("192.0.2.1", 25, Security::Plain, None);
    let err = SmtpSender::new(&settings)
        .await
        .expect_err("plain to remote");
    assert_eq!(err.code(), "config");

    let server = MailServer::start(&[]);
    let settings = server.smtp(Security::Plain);
    drop(server);
    let sender = SmtpSender::new(&settings).await.expect("settings");
    let err = sender.verify().await.expect_err("nothing listens");
    assert_eq!(err.classify(), ErrorClass::Transient, "{err}");
}
