//! Who may do what: the one place that decides, as a pure function.

use crate::protocol::{Purpose, RemoteTools, Senders};

/// What to do with one inbound message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Say nothing, do nothing (counted by reason; the text is not logged).
    Drop(DropReason),
    /// Pass it to the agent; `tools` only for the authenticated owner of an account that grants them.
    Answer {
        /// Whether the session may use tools (auto-approved).
        tools: bool,
    },
    /// A mail chat: the owner's commands only; no model, no tools, no logging.
    MailChat,
}

/// Why a message was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// `senders = owner` and the sender is not the owner.
    NotOwner,
    /// `senders = owner` and no owner is known yet (nobody is the owner).
    OwnerUnknown,
    /// Someone other than the owner wrote in a mail chat.
    MailChatStranger,
}

impl DropReason {
    /// A stable name for counters and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::NotOwner => "not_owner",
            DropReason::OwnerUnknown => "owner_unknown",
            DropReason::MailChatStranger => "mail_chat_stranger",
        }
    }
}

/// Decides what happens to a message from `sender` on an account with these settings.
///
/// The owner is an exact match of platform user ids; an unknown owner means nobody is the owner.
pub fn decide(
    senders: Senders,
    remote_tools: RemoteTools,
    purpose: Purpose,
    owner: Option<&str>,
    sender: &str,
) -> Decision {
    let is_owner = owner.is_some_and(|o| !o.is_empty() && o == sender);
    match purpose {
        Purpose::Mail if is_owner => Decision::MailChat,
        Purpose::Mail => Decision::Drop(DropReason::MailChatStranger),
        Purpose::Chat => match (senders, is_owner) {
            (_, true) => Decision::Answer {
                tools: remote_tools == RemoteTools::Owner,
            },
            (Senders::Anyone, false) => Decision::Answer { tools: false },
            (Senders::Owner, false) if owner.is_none() => Decision::Drop(DropReason::OwnerUnknown),
            (Senders::Owner, false) => Decision::Drop(DropReason::NotOwner),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of (senders, remote_tools, purpose, owner known?, sender is owner?).
    #[test]
    fn table_covers_every_combination() {
        use Decision::*;
        use DropReason::*;
        #[rustfmt::skip]
        type Row<'a> = (Senders, RemoteTools, Purpose, Option<&'a str>, &'a str, Decision);
        let table: &[Row<'_>] = &[
            // senders owner
            (
                Senders::Owner,
                RemoteTools::None,
                Purpose::Chat,
                Some("o"),
                "o",
                Answer { tools: false },
            ),
            (
                Senders::Owner,
                RemoteTools::None,
                Purpose::Chat,
                Some("o"),
                "x",
                Drop(NotOwner),
            ),
            (
                Senders::Owner,
                RemoteTools::None,
                Purpose::Chat,
                None,
                "x",
                Drop(OwnerUnknown),
            ),
            (
                Senders::Owner,
                RemoteTools::Owner,
                Purpose::Chat,
                Some("o"),
                "o",
                Answer { tools: true },
            ),
            (
                Senders::Owner,
                RemoteTools::Owner,
                Purpose::Chat,
                Some("o"),
                "x",
                Drop(NotOwner),
            ),
            (
                Senders::Owner,
                RemoteTools::Owner,
                Purpose::Chat,
                None,
                "x",
                Drop(OwnerUnknown),
            ),
            // senders anyone: strangers answered, never with tools
            (
                Senders::Anyone,
                RemoteTools::None,
                Purpose::Chat,
                Some("o"),
                "o",
                Answer { tools: false },
            ),
            (
                Senders::Anyone,
                RemoteTools::None,
                Purpose::Chat,
                Some("o"),
                "x",
                Answer { tools: false },
            ),
            (
                Senders::Anyone,
                RemoteTools::None,
                Purpose::Chat,
                None,
                "x",
                Answer { tools: false },
            ),
            (
                Senders::Anyone,
                RemoteTools::Owner,
                Purpose::Chat,
                Some("o"),
                "o",
                Answer { tools: true },
            ),
            (
                Senders::Anyone,
                RemoteTools::Owner,
                Purpose::Chat,
                Some("o"),
                "x",
                Answer { tools: false },
            ),
            (
                Senders::Anyone,
                RemoteTools::Owner,
                Purpose::Chat,
                None,
                "x",
                Answer { tools: false },
            ),
            // mail chats: owner only, whatever else is set
            (
                Senders::Owner,
                RemoteTools::None,
                Purpose::Mail,
                Some("o"),
                "o",
                MailChat,
            ),
            (
                Senders::Owner,
                RemoteTools::None,
                Purpose::Mail,
                Some("o"),
                "x",
                Drop(MailChatStranger),
            ),
            (
                Senders::Owner,
                RemoteTools::None,
                Purpose::Mail,
                None,
                "x",
                Drop(MailChatStranger),
            ),
            (
                Senders::Owner,
                RemoteTools::Owner,
                Purpose::Mail,
                Some("o"),
                "o",
                MailChat,
            ),
            (
                Senders::Owner,
                RemoteTools::Owner,
                Purpose::Mail,
                Some("o"),
                "x",
                Drop(MailChatStranger),
            ),
            (
                Senders::Owner,
                RemoteTools::Owner,
                Purpose::Mail,
                None,
                "x",
                Drop(MailChatStranger),
            ),
            (
                Senders::Anyone,
                RemoteTools::None,
                Purpose::Mail,
                Some("o"),
                "o",
                MailChat,
            ),
            (
                Senders::Anyone,
                RemoteTools::None,
                Purpose::Mail,
                Some("o"),
                "x",
                Drop(MailChatStranger),
            ),
            (
                Senders::Anyone,
                RemoteTools::None,
                Purpose::Mail,
                None,
                "x",
                Drop(MailChatStranger),
            ),
            (
                Senders::Anyone,
                RemoteTools::Owner,
                Purpose::Mail,
                Some("o"),
                "o",
                MailChat,
            ),
            (
                Senders::Anyone,
                RemoteTools::Owner,
                Purpose::Mail,
                Some("o"),
                "x",
                Drop(MailChatStranger),
            ),
            (
                Senders::Anyone,
                RemoteTools::Owner,
                Purpose::Mail,
                None,
                "x",
                Drop(MailChatStranger),
            ),
        ];
        assert_eq!(
            table.len(),
            24,
            "2 senders x 2 tools x 2 purposes x 3 sender cases"
        );
        for (s, t, p, owner, sender, want) in table {
            assert_eq!(
                decide(*s, *t, *p, *owner, sender),
                *want,
                "{s:?} {t:?} {p:?} owner={owner:?} sender={sender}"
            );
        }
    }

    #[test]
    fn owner_match_is_exact() {
        let d = |owner, sender| {
            decide(
                Senders::Owner,
                RemoteTools::Owner,
                Purpose::Chat,
                owner,
                sender,
            )
        };
        assert_eq!(
            d(Some("o9@im.wechat"), "O9@im.wechat"),
            Decision::Drop(DropReason::NotOwner)
        );
        assert_eq!(
            d(Some("o9@im.wechat"), "o9@im.wechat "),
            Decision::Drop(DropReason::NotOwner)
        );
        assert_eq!(
            d(Some(""), ""),
            Decision::Drop(DropReason::NotOwner),
            "an empty id is nobody"
        );
    }
}
