//! Selecting mailboxes, finding the Sent folder and appending messages.

use async_imap::imap_proto::NameAttribute;
use async_imap::types::Name;
use futures_util::TryStreamExt;

use crate::error::{MailError, Result};
use crate::mailbox_state::MailboxState;
use crate::session::{ImapSession, timed};

/// The keyword this crate sets on mail it has handled, when the server lets it.
pub const TRIAGED_KEYWORD: &str = "$ScvTriaged";

/// Names tried, in order, when no mailbox carries the `\Sent` special-use attribute.
/// `&XfJT0ZAB-` is "已发送" in IMAP's modified UTF-7 (163.com, QQ).
const SENT_NAMES: &[&str] = &[
    "Sent",
    "Sent Messages",
    "Sent Items",
    "Sent Mail",
    "INBOX.Sent",
    "INBOX/Sent",
    "[Gmail]/Sent Mail",
    "&XfJT0ZAB-",
];

impl ImapSession {
    /// Opens `mailbox` read-write (needed for keyword marking). Fetching with this crate never
    /// changes `\Seen` either way.
    pub async fn select(&mut self, mailbox: &str) -> Result<MailboxState> {
        self.open_mailbox(mailbox, false).await
    }

    /// Opens `mailbox` read-only: for watching and fetching without any chance of a write.
    pub async fn examine(&mut self, mailbox: &str) -> Result<MailboxState> {
        self.open_mailbox(mailbox, true).await
    }

    async fn open_mailbox(&mut self, name: &str, read_only: bool) -> Result<MailboxState> {
        self.selected = None;
        let limit = self.settings.timeout;
        let session = self.session()?;
        let r = if read_only {
            timed("examine", limit, session.examine(name)).await
        } else {
            timed("select", limit, session.select(name)).await
        };
        let mailbox = self.keep_if_sound(r)?;
        // Announcements queued before this SELECT describe the previous mailbox.
        self.drain_unsolicited();
        let state = MailboxState::from_imap(name, &mailbox, read_only);
        self.selected = Some(state.clone());
        Ok(state)
    }

    /// Lists all mailboxes with their attributes.
    async fn list_all(&mut self) -> Result<Vec<Name>> {
        let limit = self.settings.timeout;
        let session = self.session()?;
        let r = timed("list", limit, async {
            session
                .list(Some(""), Some("*"))
                .await?
                .try_collect::<Vec<Name>>()
                .await
        })
        .await;
        self.keep_if_sound(r)
    }

    /// Finds the Sent folder: SPECIAL-USE `\Sent` first, then common names. `None` when the
    /// account has none (the caller then simply does not save a copy).
    pub async fn find_sent_folder(&mut self) -> Result<Option<String>> {
        let names = self.list_all().await?;
        let selectable = |n: &&Name| !n.attributes().contains(&NameAttribute::NoSelect);
        if let Some(sent) = names
            .iter()
            .filter(selectable)
            .find(|n| n.attributes().contains(&NameAttribute::Sent))
        {
            return Ok(Some(sent.name().to_owned()));
        }
        for wanted in SENT_NAMES {
            if let Some(found) = names
                .iter()
                .filter(selectable)
                .find(|n| n.name().eq_ignore_ascii_case(wanted))
            {
                return Ok(Some(found.name().to_owned()));
            }
        }
        Ok(None)
    }

    /// Appends a raw RFC 5322 message to `mailbox` with the given flags (e.g. `\Seen`).
    pub async fn append(&mut self, mailbox: &str, flags: &[&str], raw: &[u8]) -> Result<()> {
        if let Some(bad) = flags.iter().find(|f| !is_flag_atom(f)) {
            return Err(MailError::Config(format!("invalid flag {bad:?}")));
        }
        let flag_list = format!("({})", flags.join(" "));
        let limit = self.settings.timeout;
        let session = self.session()?;
        let r = timed(
            "append",
            limit,
            session.append(mailbox, Some(&flag_list), None, raw),
        )
        .await;
        self.keep_if_sound(r)
    }

    /// Saves a sent message (e.g. [`crate::BuiltMessage::raw`]) to the Sent folder, marked
    /// `\Seen`. Returns the folder used, or `None` when the account has no Sent folder.
    pub async fn append_to_sent(&mut self, raw: &[u8]) -> Result<Option<String>> {
        let Some(folder) = self.find_sent_folder().await? else {
            return Ok(None);
        };
        self.append(&folder, &["\\Seen"], raw).await?;
        Ok(Some(folder))
    }

    /// Throws away queued untagged announcements; returns whether any said the mailbox changed.
    pub(crate) fn drain_unsolicited(&mut self) -> bool {
        use async_imap::types::UnsolicitedResponse as U;
        let Some(session) = self.inner.as_mut() else {
            return false;
        };
        let mut changed = false;
        while let Ok(response) = session.unsolicited_responses.try_recv() {
            if matches!(response, U::Exists(_) | U::Recent(_) | U::Expunge(_)) {
                changed = true;
            }
        }
        changed
    }
}

/// A flag or keyword atom: `\Seen`, `$Label1`. Rejects anything that could break the command.
fn is_flag_atom(flag: &str) -> bool {
    let body = flag.strip_prefix('\\').unwrap_or(flag);
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"(){%*\"\\]".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(flags: &[&str], read_only: bool) -> MailboxState {
        MailboxState {
            name: "INBOX".into(),
            uid_validity: Some(1),
            uid_next: Some(1),
            exists: 0,
            permanent_flags: flags.iter().map(|s| s.to_string()).collect(),
            read_only,
        }
    }

    #[test]
    fn keyword_allowed_only_when_permanent() {
        assert!(state(&["\\Seen", "\\*"], false).allows_keyword(TRIAGED_KEYWORD));
        assert!(state(&["$scvtriaged"], false).allows_keyword(TRIAGED_KEYWORD));
        assert!(!state(&["\\Seen", "\\Flagged"], false).allows_keyword(TRIAGED_KEYWORD));
        assert!(!state(&[], false).allows_keyword(TRIAGED_KEYWORD));
        assert!(!state(&["\\*"], true).allows_keyword(TRIAGED_KEYWORD));
    }

    #[test]
    fn flag_atoms_are_checked() {
        assert!(is_flag_atom("\\Seen"));
        assert!(is_flag_atom("$ScvTriaged"));
        assert!(!is_flag_atom("a b"));
        assert!(!is_flag_atom("x)"));
        assert!(!is_flag_atom(""));
        assert!(!is_flag_atom("\\"));
    }
}
