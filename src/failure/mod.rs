//! The one failure type: what went wrong, how the daemon reacts, and what a person does about it.
//!
//! Every failure an account reports, whether its run ends (the supervisor acts on it) or one send
//! fails (the outbox acts on it), is a [`Failure`]: a [`Class`] that decides the reaction, a
//! stable machine [`Code`] naming the cause, a message for people and a typed [`Action`] that
//! renders the exact command to copy. Each adapter builds failures in one conversion table from
//! its channel crate's errors (`adapters/<platform>/failure.rs`).
//!
//! A leaf: it imports only the shared names (`ids`) and the process's command line (`config`'s
//! `CommandLine`, so a printed command carries `--config`).

mod action;
mod code;

use std::fmt;
use std::time::Duration;

pub use action::{Action, Command};
#[cfg(test)]
pub(crate) use code::tests::{assert_documented, assert_row};
pub use code::{Code, GENERAL_CODES, general};

/// How the daemon reacts to a failure; decided once, at the adapter's edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Network, 5xx, timeouts: retry with backoff (a run restarts, a send is retried).
    Transient,
    /// The platform asked to wait exactly this long; nothing is retried sooner and the backoff
    /// does not grow.
    SlowDown(Duration),
    /// The platform takes no message for this chat now (WeChat's window); the message waits in
    /// the outbox until the peer writes again. A run that ends with it is retried with backoff.
    WindowClosed,
    /// This one request can never succeed (too long, recalled); the account is fine. A send is
    /// marked failed, an update goes out as a new message; a run that ends with it is retried.
    Rejected,
    /// Only a person can fix it (credentials, configuration): a run ends in `failed`, a send
    /// pauses while the account's own run fails.
    Fatal,
}

/// One failure: class, stable code, message for people and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// How to react.
    pub class: Class,
    /// What caused it, as a stable machine code (`wechat.session_expired`, `network`).
    pub code: Code,
    /// For people: what failed (never a secret, never message text).
    pub message: String,
    /// What a person does about it; [`Action::None`] when it heals by itself. Boxed so that a
    /// `Result` carrying a failure stays small.
    pub action: Box<Action>,
}

impl Failure {
    /// A failure of `class` with no action.
    pub fn new(class: Class, code: Code, message: impl Into<String>) -> Self {
        Failure {
            class,
            code,
            message: message.into(),
            action: Box::new(Action::None),
        }
    }

    /// Retry with backoff.
    pub fn transient(code: Code, message: impl Into<String>) -> Self {
        Failure::new(Class::Transient, code, message)
    }

    /// The platform asked to wait `delay`.
    pub fn slow_down(code: Code, message: impl Into<String>, delay: Duration) -> Self {
        Failure::new(Class::SlowDown(delay), code, message)
    }

    /// The chat's send window is closed until the peer writes.
    pub fn window_closed(code: Code, message: impl Into<String>) -> Self {
        Failure::new(Class::WindowClosed, code, message)
    }

    /// This one request can never succeed.
    pub fn rejected(code: Code, message: impl Into<String>) -> Self {
        Failure::new(Class::Rejected, code, message)
    }

    /// Only a person can fix it, with `action`.
    pub fn fatal(code: Code, message: impl Into<String>, action: Action) -> Self {
        Failure {
            class: Class::Fatal,
            code,
            message: message.into(),
            action: Box::new(action),
        }
    }

    /// The same failure with another class (an adapter that knows better, e.g. a longer hold).
    pub fn with_class(mut self, class: Class) -> Self {
        self.class = class;
        self
    }

    /// The same failure with another message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }
}

/// "message; action": what failed, then what to do.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(a) = self.action.text() {
            write!(f, "; {a}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{AccountKey, Channel};

    #[test]
    fn a_failure_reads_message_then_fix() {
        let key = AccountKey::new(Channel::Wechat, "phone");
        let f = Failure::fatal(
            general::NOT_LOGGED_IN,
            "not logged in",
            Action::Relogin(key),
        );
        assert_eq!(
            f.to_string(),
            "not logged in; run `scv-bridge login wechat phone`"
        );
        let f = Failure::transient(general::NETWORK, "connection refused");
        assert_eq!(f.to_string(), "connection refused");
        assert_eq!(*f.action, Action::None);
        let f = f.with_class(Class::SlowDown(Duration::from_secs(3)));
        assert_eq!(f.class, Class::SlowDown(Duration::from_secs(3)));
    }
}
