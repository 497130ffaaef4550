//! The multi-charset fixtures decode to the right text, both parsed directly and fetched
//! from a real Dovecot after APPEND (so the IMAP partial fetch path is covered too).

use crate::support;

use scv_mail::{MailItem, ParseLimits, parse_message};
use support::{MailServer, fixture};

struct Expect {
    file: &'static str,
    subject: &'static str,
    from_name: Option<&'static str>,
    from_address: &'static str,
    excerpt: &'static str,
}

const CASES: &[Expect] = &[
    Expect {
        file: "gbk-base64.eml",
        subject: "会议通知",
        from_name: Some("张三"),
        from_address: "zhangsan@example.cn",
        excerpt: "明天下午三点开会，请准时参加。",
    },
    Expect {
        file: "gb2312-qp.eml",
        subject: "发票已开具",
        from_name: Some("李四"),
        from_address: "lisi@example.cn",
        excerpt: "您好，发票已经开具，请查收。",
    },
    Expect {
        file: "big5-8bit.eml",
        subject: "繁體中文測試",
        from_name: Some("王小明"),
        from_address: "wang@example.tw",
        excerpt: "請於週五前回覆，謝謝。",
    },
    Expect {
        file: "utf8-qp.eml",
        subject: "Crème brûlée",
        from_name: Some("Zoë"),
        from_address: "zoe@example.fr",
        excerpt: "Café déjà vu, naïve résumé — Café déjà vu, naïve résumé — Café déjà vu, \
                  naïve résumé — Café déjà vu, naïve résumé — Café déjà vu, naïve résumé — \
                  Café déjà vu, naïve résumé —",
    },
    Expect {
        file: "utf8-base64.eml",
        subject: "日本語の件名 ✓",
        from_name: Some("Taro"),
        from_address: "taro@example.jp",
        excerpt: "こんにちは、世界。\n二行目です。",
    },
    Expect {
        file: "alternative-with-attachment.eml",
        subject: "Plan for Monday",
        from_name: Some("Alice"),
        from_address: "alice@example.com",
        excerpt: "Plain text wins over HTML.",
    },
    Expect {
        file: "bulk-newsletter.eml",
        subject: "Weekly digest",
        from_name: Some("News"),
        from_address: "news@lists.example.com",
        excerpt: "This week in news.",
    },
];

fn check(item: &MailItem, want: &Expect) {
    assert_eq!(item.subject, want.subject, "{}", want.file);
    let from = item
        .from
        .as_ref()
        .unwrap_or_else(|| panic!("{}: no From", want.file));
    assert_eq!(from.name.as_deref(), want.from_name, "{}", want.file);
    assert_eq!(from.address, want.from_address, "{}", want.file);
    assert_eq!(item.excerpt, want.excerpt, "{}", want.file);
    assert!(item.date_unix.is_some(), "{}", want.file);
}

fn check_html(item: &MailItem) {
    assert_eq!(item.subject, "Quarterly report");
    let text = &item.excerpt;
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    assert_eq!(
        lines.first(),
        Some(&"Quarterly report"),
        "heading on its own line: {text:?}"
    );
    for want in [
        "Quarterly report",
        "Revenue is up & costs are down.",
        "the report",
        "Thanks",
    ] {
        assert!(text.contains(want), "{want:?} missing from {text:?}");
    }
    for unwanted in ["<", ">", "color: red", "&amp;", "&nbsp;"] {
        assert!(!text.contains(unwanted), "{unwanted:?} left in {text:?}");
    }
}

fn check_headers(items: &[MailItem]) {
    let alt = items
        .iter()
        .find(|i| i.subject == "Plan for Monday")
        .expect("alt");
    assert_eq!(
        alt.reply_to.as_ref().map(|a| a.address.as_str()),
        Some("alice.work@example.com")
    );
    assert_eq!(alt.to.len(), 2);
    assert_eq!(alt.to[1].name.as_deref(), Some("Bob"));
    assert_eq!(alt.cc.len(), 1);
    assert_eq!(alt.message_id.as_deref(), Some("alt@fixtures.test"));
    assert_eq!(alt.in_reply_to.as_deref(), Some("parent@example.com"));
    assert_eq!(
        alt.references,
        vec!["root@example.com", "parent@example.com"]
    );
    assert!(!alt.is_automated());

    let bulk = items
        .iter()
        .find(|i| i.subject == "Weekly digest")
        .expect("bulk");
    assert!(bulk.list_unsubscribe && bulk.list_id);
    assert_eq!(bulk.precedence.as_deref(), Some("bulk"));
    assert_eq!(bulk.auto_submitted.as_deref(), Some("auto-generated"));
    assert!(bulk.is_automated());
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn fixtures_decode_from_raw_bytes() {
    let limits = ParseLimits::default();
    let mut items = Vec::new();
    for want in CASES {
        let item = parse_message(&read(want.file), &limits);
        check(&item, want);
        items.push(item);
    }
    check_html(&parse_message(&read("html-only.eml"), &limits));
    check_headers(&items);
}

#[tokio::test]
async fn fixtures_decode_after_append_and_fetch() {
    let server = MailServer::start(&["--smtp-port", "off"]);
    let mut session = server.login().await;
    let mut files: Vec<&str> = CASES.iter().map(|c| c.file).collect();
    files.push("html-only.eml");
    for file in &files {
        session
            .append("INBOX", &[], &read(file))
            .await
            .expect("append");
    }
    session.examine("INBOX").await.expect("examine");
    let uids = session.uids_from(1).await.expect("search");
    assert_eq!(uids.len(), files.len());
    let items = session.fetch_items(&uids).await.expect("fetch");
    assert_eq!(session.stats().fetches, 1);
    for (item, want) in items.iter().zip(CASES) {
        check(item, want);
        assert!(!item.seen, "appended without flags, fetched with PEEK");
    }
    check_html(items.last().expect("html item"));
    check_headers(&items);
}
