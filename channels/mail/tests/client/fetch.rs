//! SELECT values, finding new mail, batched fetching without touching `\Seen`, keyword
//! marking and UIDVALIDITY changes, against a real Dovecot.

use crate::support;

use scv_mail::{Security, TRIAGED_KEYWORD};
use support::MailServer;

#[tokio::test]
async fn select_reports_uidvalidity_uidnext_and_permanent_flags() {
    let server = MailServer::start(&[]);
    server.deliver("test@mail.test", "one", "first").await;
    let mut session = server.login().await;
    let inbox = session.select("INBOX").await.expect("select");
    assert!(inbox.uid_validity.is_some_and(|v| v > 0));
    assert_eq!(inbox.uid_next, Some(2));
    assert_eq!(inbox.exists, 1);
    assert!(
        inbox.permanent_flags.iter().any(|f| f == "\\*"),
        "{:?}",
        inbox.permanent_flags
    );
    assert!(inbox.allows_keyword(TRIAGED_KEYWORD));
    assert!(!inbox.read_only);

    let examined = session.examine("INBOX").await.expect("examine");
    assert!(examined.read_only);
    assert_eq!(examined.uid_validity, inbox.uid_validity);
    assert!(!examined.allows_keyword(TRIAGED_KEYWORD));

    let err = session
        .select("No/Such/Box")
        .await
        .expect_err("missing mailbox");
    assert_eq!(err.code(), "no_mailbox");
    assert!(session.is_open(), "a NO keeps the session usable");
}

#[tokio::test]
async fn new_mail_is_fetched_in_one_batched_fetch_without_touching_seen() {
    let server = MailServer::start(&["--rawlog"]);
    for i in 1..=5 {
        server
            .deliver(
                "test@mail.test",
                &format!("Message {i}"),
                &format!("Body number {i}"),
            )
            .await;
    }
    // The owner has read message 2 already; that must stay exactly so.
    let user = server.var("IMAP_USER").to_owned();
    server.doveadm(&[
        "flags", "add", "-u", &user, "\\Seen", "mailbox", "INBOX", "uid", "2",
    ]);
    let before = server.flags("INBOX");

    let mut session = server.login().await;
    let inbox = session.select("INBOX").await.expect("select");
    let uids = session.uids_from(1).await.expect("search");
    assert_eq!(uids, vec![1, 2, 3, 4, 5]);
    let fetches_before = session.stats().fetches;
    let items = session.fetch_items(&uids).await.expect("fetch");
    assert_eq!(
        session.stats().fetches - fetches_before,
        1,
        "one FETCH for the batch"
    );
    assert_eq!(items.len(), 5);
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        assert_eq!(item.uid as usize, n);
        assert_eq!(item.subject, format!("Message {n}"));
        assert_eq!(item.excerpt, format!("Body number {n}"));
        assert_eq!(
            item.from.as_ref().map(|a| a.address.as_str()),
            Some("sender@example.com")
        );
        assert!(
            item.message_id
                .as_deref()
                .is_some_and(|m| m.ends_with("@example.com"))
        );
        assert_eq!(item.seen, n == 2, "uid {n}");
        assert!(!item.excerpt_truncated);
    }
    // Nothing past UIDNEXT: `N:*` would otherwise match the last message.
    let next = inbox.uid_next.expect("uidnext");
    assert_eq!(
        session.uids_from(next).await.expect("search"),
        Vec::<u32>::new()
    );
    session.logout().await;

    assert_eq!(server.flags("INBOX"), before, "fetching changed flags");
    let fetch_lines: Vec<String> = server
        .rawlog_client_lines()
        .into_iter()
        .filter(|l| l.to_ascii_uppercase().contains("UID FETCH"))
        .collect();
    assert_eq!(fetch_lines.len(), 1, "{fetch_lines:?}");
    assert!(
        fetch_lines[0].contains("BODY.PEEK[HEADER.FIELDS"),
        "{}",
        fetch_lines[0]
    );
    assert!(
        !fetch_lines[0].contains("BODY["),
        "a non-PEEK section would set \\Seen"
    );
}

#[tokio::test]
async fn batches_follow_the_configured_size() {
    let server = MailServer::start(&[]);
    for i in 1..=5 {
        server
            .deliver("test@mail.test", &format!("m{i}"), "x")
            .await;
    }
    let mut settings = server.imap(Security::Plain);
    settings.fetch_batch = 2;
    let mut session = scv_mail::ImapSession::connect(&settings)
        .await
        .expect("login");
    session.examine("INBOX").await.expect("examine");
    let items = session
        .fetch_items(&[5, 1, 2, 3, 4, 4])
        .await
        .expect("fetch");
    assert_eq!(
        items.iter().map(|i| i.uid).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(session.stats().fetches, 3);
}

#[tokio::test]
async fn long_mail_is_cut_to_the_excerpt_bound() {
    let server = MailServer::start(&[]);
    let body = "long line of text ".repeat(20_000); // about 360 KB
    server.deliver("test@mail.test", "long", &body).await;
    let mut settings = server.imap(Security::Plain);
    settings.limits.max_excerpt_bytes = 100;
    let mut session = scv_mail::ImapSession::connect(&settings)
        .await
        .expect("login");
    session.examine("INBOX").await.expect("examine");
    let items = session.fetch_items(&[1]).await.expect("fetch");
    assert!(items[0].excerpt.len() <= 100);
    assert!(items[0].excerpt.starts_with("long line of text"));
    assert!(items[0].excerpt_truncated);
    assert!(items[0].size.is_some_and(|s| s > 300_000));
}

#[tokio::test]
async fn triaged_keyword_is_set_without_seen() {
    let server = MailServer::start(&[]);
    server.deliver("test@mail.test", "a", "x").await;
    server.deliver("test@mail.test", "b", "y").await;
    let mut session = server.login().await;

    session.examine("INBOX").await.expect("examine");
    assert!(
        !session
            .mark_triaged(&[1])
            .await
            .expect("read-only: nothing sent")
    );

    session.select("INBOX").await.expect("select");
    assert!(session.mark_triaged(&[1]).await.expect("store"));
    let items = session.fetch_items(&[1, 2]).await.expect("fetch");
    assert!(items[0].triaged && !items[0].seen);
    assert!(!items[1].triaged && !items[1].seen);
    let flags = server.flags("INBOX");
    assert_eq!(flags[0], (1, TRIAGED_KEYWORD.to_owned()));
    assert_eq!(flags[1], (2, String::new()));
}

#[tokio::test]
async fn recreated_mailbox_has_a_new_uidvalidity() {
    let server = MailServer::start(&[]);
    server
        .deliver("test+Watch@mail.test", "in Watch", "x")
        .await;
    let user = server.var("IMAP_USER").to_owned();
    let mut session = server.login().await;
    let first = session.examine("Watch").await.expect("examine");
    assert_eq!(first.exists, 1);
    session.select("INBOX").await.expect("leave Watch");

    server.doveadm(&["mailbox", "delete", "-u", &user, "Watch"]);
    server.doveadm(&["mailbox", "create", "-u", &user, "Watch"]);
    let second = session.examine("Watch").await.expect("examine again");
    assert_ne!(second.uid_validity, first.uid_validity);
    assert_eq!(second.exists, 0);
    assert_eq!(second.uid_next, Some(1));
}

#[tokio::test]
async fn backfill_search_by_date() {
    let server = MailServer::start(&[]);
    server.deliver("test@mail.test", "today", "x").await;
    let mut session = server.login().await;
    session.examine("INBOX").await.expect("examine");
    let today = chrono::Local::now().date_naive();
    let week_ago = today - chrono::Days::new(7);
    let tomorrow = today + chrono::Days::new(2);
    assert_eq!(session.uids_since(week_ago).await.expect("search"), vec![1]);
    assert_eq!(
        session.uids_since(tomorrow).await.expect("search"),
        Vec::<u32>::new()
    );
}
