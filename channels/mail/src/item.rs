//! The typed summary of one mail. Its Debug output shows structure only: mail text
//! (subjects, bodies, addresses, Message-IDs) must never reach a log.

use std::fmt;

/// A name and address from a From/To/Cc/Reply-To header.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct MailAddress {
    /// The display name, decoded (`Alice Li`, `张三`), if any.
    pub name: Option<String>,
    /// The address (`alice@example.com`); may be empty for malformed headers.
    pub address: String,
}

impl MailAddress {
    /// An address with an optional display name.
    pub fn new(name: Option<&str>, address: &str) -> Self {
        MailAddress {
            name: name.map(str::to_owned),
            address: address.to_owned(),
        }
    }
}

impl fmt::Debug for MailAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MailAddress([redacted])")
    }
}

/// One message as fetched: header fields, flags and a bounded plain-text excerpt.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct MailItem {
    /// The IMAP UID in the selected mailbox (0 when parsed from raw bytes).
    pub uid: u32,
    /// RFC822.SIZE, when fetched.
    pub size: Option<u32>,
    /// The owner's `\Seen` flag as found (this crate never changes it).
    pub seen: bool,
    /// Whether the message already carries [`crate::TRIAGED_KEYWORD`].
    pub triaged: bool,
    /// Message-ID without angle brackets.
    pub message_id: Option<String>,
    /// The first From address.
    pub from: Option<MailAddress>,
    /// The first Reply-To address, where replies should go if present.
    pub reply_to: Option<MailAddress>,
    /// To addresses (bounded).
    pub to: Vec<MailAddress>,
    /// Cc addresses (bounded).
    pub cc: Vec<MailAddress>,
    /// The decoded subject, empty when missing (bounded).
    pub subject: String,
    /// The Date header as Unix seconds.
    pub date_unix: Option<i64>,
    /// In-Reply-To Message-ID, without angle brackets.
    pub in_reply_to: Option<String>,
    /// References Message-IDs, oldest first, without angle brackets (bounded, newest kept).
    pub references: Vec<String>,
    /// A List-Unsubscribe header is present.
    pub list_unsubscribe: bool,
    /// A List-Id header is present.
    pub list_id: bool,
    /// The Auto-Submitted value, lower-cased (`auto-generated`, `auto-replied`, `no`).
    pub auto_submitted: Option<String>,
    /// The Precedence value, lower-cased (`bulk`, `list`, `junk`).
    pub precedence: Option<String>,
    /// Readable text of the body (HTML turned into text), at most `max_excerpt_bytes`.
    pub excerpt: String,
    /// The excerpt was cut (by the fetch window or the excerpt bound).
    pub excerpt_truncated: bool,
}

impl MailItem {
    /// Sent by a machine or a list: Auto-Submitted other than `no`, Precedence
    /// bulk/list/junk, or a List-Unsubscribe/List-Id header. Pre-filters decide these
    /// without a model.
    pub fn is_automated(&self) -> bool {
        let auto = self.auto_submitted.as_deref().is_some_and(|v| v != "no");
        let bulk = self
            .precedence
            .as_deref()
            .is_some_and(|p| matches!(p, "bulk" | "list" | "junk"));
        auto || bulk || self.list_unsubscribe || self.list_id
    }
}

impl fmt::Debug for MailItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MailItem")
            .field("uid", &self.uid)
            .field("size", &self.size)
            .field("seen", &self.seen)
            .field("triaged", &self.triaged)
            .field("date_unix", &self.date_unix)
            .field("has_message_id", &self.message_id.is_some())
            .field("to_count", &self.to.len())
            .field("references_count", &self.references.len())
            .field("list_unsubscribe", &self.list_unsubscribe)
            .field("automated", &self.is_automated())
            .field("subject_chars", &self.subject.chars().count())
            .field("excerpt_bytes", &self.excerpt.len())
            .field("excerpt_truncated", &self.excerpt_truncated)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_mail_text() {
        let item = MailItem {
            uid: 7,
            message_id: Some("secret-id@example.com".into()),
            from: Some(MailAddress::new(Some("Alice Secret"), "alice@example.com")),
            reply_to: Some(MailAddress::new(None, "reply@example.com")),
            to: vec![MailAddress::new(Some("Bob"), "bob@example.com")],
            subject: "Top secret subject".into(),
            in_reply_to: Some("parent@example.com".into()),
            references: vec!["root@example.com".into()],
            auto_submitted: Some("auto-generated".into()),
            precedence: Some("bulk".into()),
            excerpt: "the body text".into(),
            ..MailItem::default()
        };
        let shown = format!("{item:?} {:#?}", item);
        for secret in [
            "secret",
            "Secret",
            "example.com",
            "Alice",
            "Bob",
            "body text",
            "bulk",
        ] {
            assert!(!shown.contains(secret), "{secret} leaked in {shown}");
        }
        assert!(shown.contains("uid: 7"));
    }

    #[test]
    fn automated_mail_is_recognised() {
        let plain = MailItem::default();
        assert!(!plain.is_automated());
        let no = MailItem {
            auto_submitted: Some("no".into()),
            ..MailItem::default()
        };
        assert!(!no.is_automated());
        for item in [
            MailItem {
                auto_submitted: Some("auto-replied".into()),
                ..MailItem::default()
            },
            MailItem {
                precedence: Some("bulk".into()),
                ..MailItem::default()
            },
            MailItem {
                precedence: Some("list".into()),
                ..MailItem::default()
            },
            MailItem {
                list_unsubscribe: true,
                ..MailItem::default()
            },
            MailItem {
                list_id: true,
                ..MailItem::default()
            },
        ] {
            assert!(item.is_automated(), "{item:?}");
        }
    }
}
