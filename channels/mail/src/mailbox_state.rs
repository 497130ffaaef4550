//! What SELECT or EXAMINE reported about a mailbox, kept by the session between commands;
//! apart from `mailbox` (which opens mailboxes on the session) so the session can hold it
//! without importing what builds on it.

use async_imap::types::{Flag, Mailbox};

/// What SELECT or EXAMINE reported about a mailbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailboxState {
    /// The mailbox name as given to SELECT.
    pub name: String,
    /// UIDVALIDITY: when it changes, every stored UID of this mailbox is void.
    pub uid_validity: Option<u32>,
    /// UIDNEXT: the UID the next arriving message will get at least.
    pub uid_next: Option<u32>,
    /// Number of messages.
    pub exists: u32,
    /// Flags that can be stored permanently; `\*` means any new keyword may be created.
    pub permanent_flags: Vec<String>,
    /// Opened with EXAMINE: nothing can be stored.
    pub read_only: bool,
}

impl MailboxState {
    /// Whether `keyword` can be stored permanently here (listed, or `\*` allows new ones).
    pub fn allows_keyword(&self, keyword: &str) -> bool {
        !self.read_only
            && self
                .permanent_flags
                .iter()
                .any(|f| f == "\\*" || f.eq_ignore_ascii_case(keyword))
    }

    pub(crate) fn from_imap(name: &str, mailbox: &Mailbox, read_only: bool) -> Self {
        MailboxState {
            name: name.to_owned(),
            uid_validity: mailbox.uid_validity,
            uid_next: mailbox.uid_next,
            exists: mailbox.exists,
            permanent_flags: mailbox.permanent_flags.iter().map(flag_name).collect(),
            read_only,
        }
    }
}

/// The IMAP spelling of a flag.
pub(crate) fn flag_name(flag: &Flag<'_>) -> String {
    match flag {
        Flag::Seen => "\\Seen".to_owned(),
        Flag::Answered => "\\Answered".to_owned(),
        Flag::Flagged => "\\Flagged".to_owned(),
        Flag::Deleted => "\\Deleted".to_owned(),
        Flag::Draft => "\\Draft".to_owned(),
        Flag::Recent => "\\Recent".to_owned(),
        Flag::MayCreate => "\\*".to_owned(),
        Flag::Custom(c) => c.to_string(),
    }
}
