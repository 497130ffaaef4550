//! Stable machine codes: one short snake_case name per cause, for scripts, metrics and consoles.
//!
//! A code never changes meaning once released: tests pin every one (the adapters' tables pin
//! theirs row by row), and ARCHITECTURE.md lists them. Causes every platform shares have a plain
//! name (`network`); a platform's own causes carry its name (`wechat.session_expired`).

use std::fmt;

/// A stable machine code naming what caused a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(&'static str);

impl Code {
    /// A code from its spelling: lowercase letters, digits and `_`, parts joined by `.`.
    ///
    /// Codes are constants, so a misspelt one fails the build (the check runs at compile time).
    pub const fn new(code: &'static str) -> Code {
        assert!(
            well_formed(code),
            "a code is snake_case parts joined by '.'"
        );
        Code(code)
    }

    /// The code as sent on the wire.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Non-empty parts of `[a-z0-9_]` starting with a letter, joined by single dots.
const fn well_formed(code: &str) -> bool {
    let b = code.as_bytes();
    if b.is_empty() {
        return false;
    }
    let mut i = 0;
    let mut part_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'.' {
            if part_start {
                return false;
            }
            part_start = true;
        } else if part_start {
            if !c.is_ascii_lowercase() {
                return false;
            }
            part_start = false;
        } else if !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_') {
            return false;
        }
        i += 1;
    }
    !part_start
}

/// Causes shared by every platform and by the daemon's own parts.
pub mod general {
    use super::Code;

    /// Connecting, TLS or the connection failed below the platform's protocol.
    pub const NETWORK: Code = Code::new("network");
    /// No answer in time.
    pub const TIMEOUT: Code = Code::new("timeout");
    /// The daemon's own store failed; the next try starts from what was committed.
    pub const STORE: Code = Code::new("store");
    /// A helper task of the account failed (a blocking read, a listener).
    pub const TASK_FAILED: Code = Code::new("task_failed");
    /// The account's task panicked: a bug.
    pub const CRASHED: Code = Code::new("crashed");
    /// The account's run ended without being asked to stop.
    pub const STOPPED_UNASKED: Code = Code::new("stopped_unasked");
    /// The account is stopping; what was asked of it is not done.
    pub const STOPPING: Code = Code::new("stopping");
    /// No credentials are stored for the account.
    pub const NOT_LOGGED_IN: Code = Code::new("not_logged_in");
    /// The credential store could not be read.
    pub const CREDENTIALS_UNREADABLE: Code = Code::new("credentials_unreadable");
    /// The stored credentials lack a field the account needs.
    pub const CREDENTIALS_INCOMPLETE: Code = Code::new("credentials_incomplete");
    /// This build has no adapter for the account's channel.
    pub const CHANNEL_UNAVAILABLE: Code = Code::new("channel_unavailable");
    /// An empty message cannot be sent.
    pub const MESSAGE_EMPTY: Code = Code::new("message_empty");
    /// The message is longer than the platform takes.
    pub const MESSAGE_TOO_LONG: Code = Code::new("message_too_long");
    /// The platform cannot update a sent message.
    pub const UPDATE_UNSUPPORTED: Code = Code::new("update_unsupported");
    /// The message to update was never sent or has no platform id.
    pub const UPDATE_TARGET_MISSING: Code = Code::new("update_target_missing");
    /// The platform (or this adapter) cannot download the peer's media.
    pub const MEDIA_UNSUPPORTED: Code = Code::new("media_unsupported");
    /// A media item is larger than the bridge keeps (`[media] max_item_mb`) or the platform takes.
    pub const MEDIA_TOO_LARGE: Code = Code::new("media_too_large");
    /// A media item's bytes are not what the platform declared (wrong key, bad padding, size or
    /// checksum mismatch).
    pub const MEDIA_INVALID: Code = Code::new("media_invalid");
    /// An earlier run began this send and never learned its outcome: it is held for `/again`,
    /// never repeated (`port::held`).
    pub const SEND_IN_DOUBT: Code = Code::new("send_in_doubt");
}

/// Every general code, for the documentation check.
pub const GENERAL_CODES: &[Code] = &[
    general::NETWORK,
    general::TIMEOUT,
    general::STORE,
    general::TASK_FAILED,
    general::CRASHED,
    general::STOPPED_UNASKED,
    general::STOPPING,
    general::NOT_LOGGED_IN,
    general::CREDENTIALS_UNREADABLE,
    general::CREDENTIALS_INCOMPLETE,
    general::CHANNEL_UNAVAILABLE,
    general::MESSAGE_EMPTY,
    general::MESSAGE_TOO_LONG,
    general::UPDATE_UNSUPPORTED,
    general::UPDATE_TARGET_MISSING,
    general::MEDIA_UNSUPPORTED,
    general::MEDIA_TOO_LARGE,
    general::MEDIA_INVALID,
    general::SEND_IN_DOUBT,
];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Fails unless every code in `codes` is listed, in backticks, in ARCHITECTURE.md.
    pub(crate) fn assert_documented(codes: &[Code]) {
        let doc = include_str!("../../ARCHITECTURE.md");
        for c in codes {
            assert!(
                doc.contains(&format!("`{c}`")),
                "code {c} is not listed in ARCHITECTURE.md"
            );
        }
    }

    /// One row of an adapter's conversion table: the failure `f` made from an error shown as
    /// `shown` has this class, code, message (the error's own text when `None`) and action.
    pub(crate) fn assert_row(
        f: &crate::failure::Failure,
        shown: &str,
        class: crate::failure::Class,
        code: &str,
        message: Option<&str>,
        action: &crate::failure::Action,
    ) {
        assert_eq!(f.class, class, "{shown}");
        assert_eq!(f.code.as_str(), code, "{shown}");
        assert_eq!(f.message, message.unwrap_or(shown), "{shown}");
        assert_eq!(*f.action, *action, "{shown}");
    }

    #[test]
    fn general_codes_are_pinned_and_documented() {
        let spelled: Vec<&str> = GENERAL_CODES.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            spelled,
            [
                "network",
                "timeout",
                "store",
                "task_failed",
                "crashed",
                "stopped_unasked",
                "stopping",
                "not_logged_in",
                "credentials_unreadable",
                "credentials_incomplete",
                "channel_unavailable",
                "message_empty",
                "message_too_long",
                "update_unsupported",
                "update_target_missing",
                "media_unsupported",
                "media_too_large",
                "media_invalid",
                "send_in_doubt",
            ]
        );
        assert_documented(GENERAL_CODES);
    }

    #[test]
    fn only_snake_case_parts_joined_by_dots_are_codes() {
        for good in ["network", "wechat.session_expired", "a1.b_2"] {
            assert!(well_formed(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "a.",
            ".a",
            "a..b",
            "A",
            "wechat.Session",
            "1a",
            "a-b",
            "a b",
        ] {
            assert!(!well_formed(bad), "{bad}");
        }
    }
}
