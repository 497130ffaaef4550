//! The pre-filter: mail decided without a model (automated, bulk, list mail, and our own).

use std::collections::HashSet;

use scv_mail::MailItem;

/// Who "we" are: the account's addresses and the Message-IDs of mail it sent.
#[derive(Debug, Clone, Default)]
pub struct OwnIdentity {
    /// Lower-cased addresses of the account.
    pub addresses: Vec<String>,
    /// Message-IDs (without angle brackets) of replies sent through the bridge.
    pub message_ids: HashSet<String>,
}

/// What the pre-filter says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreFilter {
    /// Sent by a machine or a list (List-Unsubscribe, Auto-Submitted, Precedence bulk/list/junk).
    Automated,
    /// Sent by this account (its address, or a Message-ID the bridge made).
    Own,
    /// A person may have written it: the model (or the budget rule) decides.
    Pass,
}

/// Decides what it can from headers alone.
pub fn prefilter(item: &MailItem, own: &OwnIdentity) -> PreFilter {
    if item.is_automated() {
        return PreFilter::Automated;
    }
    let from_us = item.from.as_ref().is_some_and(|f| {
        let a = f.address.to_ascii_lowercase();
        !a.is_empty() && own.addresses.contains(&a)
    });
    let our_id = item
        .message_id
        .as_deref()
        .is_some_and(|id| own.message_ids.contains(id));
    if from_us || our_id {
        PreFilter::Own
    } else {
        PreFilter::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_mail::MailAddress;

    fn from(addr: &str) -> MailItem {
        MailItem {
            from: Some(MailAddress::new(None, addr)),
            message_id: Some("abc@example.com".into()),
            ..MailItem::default()
        }
    }

    #[test]
    fn rows() {
        let own = OwnIdentity {
            addresses: vec!["me@example.com".into()],
            message_ids: ["sent-1@example.com".to_string()].into_iter().collect(),
        };
        assert_eq!(prefilter(&from("alice@example.com"), &own), PreFilter::Pass);
        assert_eq!(prefilter(&from("ME@example.com"), &own), PreFilter::Own);
        let mut bulk = from("news@example.com");
        bulk.list_unsubscribe = true;
        assert_eq!(prefilter(&bulk, &own), PreFilter::Automated);
        let mut auto = from("daemon@example.com");
        auto.auto_submitted = Some("auto-replied".into());
        assert_eq!(prefilter(&auto, &own), PreFilter::Automated);
        let mut prec = from("x@example.com");
        prec.precedence = Some("junk".into());
        assert_eq!(prefilter(&prec, &own), PreFilter::Automated);
        let mut ours = from("alice@example.com");
        ours.message_id = Some("sent-1@example.com".into());
        assert_eq!(prefilter(&ours, &own), PreFilter::Own);
        ours.message_id = Some("other@example.com".into());
        assert_eq!(prefilter(&ours, &own), PreFilter::Pass);
    }
}
