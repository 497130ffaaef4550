//! The text of report items and of the numbered digest sent to the mail chat.

use scv_mail::MailItem;

use crate::words::{Digest, Lang};

/// Characters of a subject kept in a digest line.
const SUBJECT_CHARS: usize = 80;
/// Characters of a sender name kept in a digest line.
const SENDER_CHARS: usize = 40;

fn cut(s: &str, n: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= n {
        s
    } else {
        let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// One item's line without its number: `Alice - Invoice overdue - summary`.
pub fn item_line(item: &MailItem, summary: Option<&str>, urgent: bool) -> String {
    let sender = item
        .from
        .as_ref()
        .map(|f| match &f.name {
            Some(n) if !n.trim().is_empty() => n.clone(),
            _ => f.address.clone(),
        })
        .unwrap_or_else(|| "(unknown sender)".to_string());
    let subject = if item.subject.trim().is_empty() {
        "(no subject)".to_string()
    } else {
        cut(&item.subject, SUBJECT_CHARS)
    };
    let mut line = String::new();
    if urgent {
        line.push_str("[urgent] ");
    }
    line.push_str(&cut(&sender, SENDER_CHARS));
    line.push_str(" - ");
    line.push_str(&subject);
    if let Some(s) = summary.filter(|s| !s.trim().is_empty()) {
        line.push_str(" - ");
        line.push_str(&cut(s, 140));
    }
    line
}

/// The digest in `lang`: a header, numbered lines, and the budget notice when mail went
/// untriaged.
pub fn render(account: &str, lines: &[String], untriaged: u64, lang: Lang) -> String {
    let heading = Digest::Heading {
        account: account.to_string(),
        count: lines.len(),
    };
    let mut out = heading.text(lang).into_owned();
    for (i, l) in lines.iter().enumerate() {
        out.push_str(&format!("\n{}. {l}", i + 1));
    }
    if untriaged > 0 {
        out.push('\n');
        out.push_str(&Digest::Untriaged { count: untriaged }.text(lang));
    }
    if !lines.is_empty() {
        out.push('\n');
        out.push_str(&Digest::ReplyHint.text(lang));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_mail::MailAddress;

    #[test]
    fn lines_are_numbered_and_bounded() {
        let item = MailItem {
            from: Some(MailAddress::new(Some("Alice"), "alice@example.com")),
            subject: "Invoice   overdue".into(),
            ..MailItem::default()
        };
        let l = item_line(&item, Some("Pay by Friday"), false);
        assert_eq!(l, "Alice - Invoice overdue - Pay by Friday");
        let u = item_line(&MailItem::default(), None, true);
        assert_eq!(u, "[urgent] (unknown sender) - (no subject)");
        let text = render("work", &[l.clone(), u.clone()], 3, Lang::En);
        assert!(text.starts_with("Mail digest (work): 2 new\n"), "{text}");
        assert!(text.contains("\n1. Alice - Invoice overdue"));
        assert!(text.contains("\n2. [urgent]"));
        assert!(text.contains("3 mails not triaged today: budget spent"));
        let zh = render("work", &[l, u], 3, Lang::ZhCn);
        assert!(
            zh.starts_with("邮件摘要（work）：2 封新邮件\n1. Alice"),
            "{zh}"
        );
        assert!(
            zh.ends_with("回复 /reply N <内容> 即可回复第 N 封。"),
            "{zh}"
        );
        let long = MailItem {
            subject: "x".repeat(500),
            ..MailItem::default()
        };
        assert!(item_line(&long, None, false).chars().count() < 140);
    }
}
