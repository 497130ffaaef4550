//! What a person does to fix a failure, typed, rendered with the exact command to copy.

use std::borrow::Cow;
use std::fmt;

use crate::ids::AccountKey;

/// A `scv-bridge` command that fixes something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `scv-bridge login <channel> <account>`: store new credentials.
    Login(AccountKey),
    /// `scv-bridge reload`: reread the configuration and restart failed accounts.
    Reload,
    /// `scv-bridge channel enable <channel> <account>`: turn the account on.
    Enable(AccountKey),
    /// `scv-bridge channel disable <channel> <account>`: turn the account off.
    Disable(AccountKey),
}

impl Command {
    /// The arguments after `scv-bridge`.
    fn args(&self) -> String {
        match self {
            Command::Login(k) => format!("login {} {}", k.channel, k.account),
            Command::Reload => "reload".to_string(),
            Command::Enable(k) => format!("channel enable {} {}", k.channel, k.account),
            Command::Disable(k) => format!("channel disable {} {}", k.channel, k.account),
        }
    }

    /// The command line to copy, with `--config FILE` when this process's file is not the
    /// default one.
    pub fn line(&self) -> String {
        crate::config::command(&self.args())
    }
}

/// What a person does about a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing: it heals by itself (retries, a slow-down, the peer writing again).
    None,
    /// Log the account in again: "run `scv-bridge login wechat phone`".
    Relogin(AccountKey),
    /// Turn the account on: "run `scv-bridge channel enable wechat phone`".
    Enable(AccountKey),
    /// Change the configuration (or the machine) as `first` says, then reload:
    /// "check base_url under [wechat.phone], then run `scv-bridge reload`".
    Reload {
        /// What to change, in words.
        first: Cow<'static, str>,
    },
    /// Change the app in the platform's developer console as `first` says, then run `then`:
    /// "check the app ID and secret in the developer console, then run `scv-bridge login …`".
    Console {
        /// What to change in the console, in words.
        first: Cow<'static, str>,
        /// The command that picks the change up.
        then: Command,
    },
    /// Do `first`, or else run `command`: "upgrade scv-bridge, or disable the account with `…`".
    Otherwise {
        /// The preferred fix, in words.
        first: Cow<'static, str>,
        /// Words leading to the alternative command ("disable the account with").
        or: &'static str,
        /// The alternative.
        command: Command,
    },
}

impl Action {
    /// The command this action asks a person to run, if any.
    pub fn command(&self) -> Option<Command> {
        match self {
            Action::None => None,
            Action::Relogin(k) => Some(Command::Login(k.clone())),
            Action::Enable(k) => Some(Command::Enable(k.clone())),
            Action::Reload { .. } => Some(Command::Reload),
            Action::Console { then, .. } => Some(then.clone()),
            Action::Otherwise { command, .. } => Some(command.clone()),
        }
    }

    /// The exact command line to copy, if the action has one.
    pub fn command_line(&self) -> Option<String> {
        self.command().map(|c| c.line())
    }

    /// The fix in words for people, with the command in backticks; `None` for [`Action::None`].
    pub fn text(&self) -> Option<String> {
        let line = self.command_line();
        let line = line.as_deref().unwrap_or_default();
        Some(match self {
            Action::None => return None,
            Action::Relogin(_) | Action::Enable(_) => format!("run `{line}`"),
            Action::Reload { first } | Action::Console { first, .. } => {
                format!("{first}, then run `{line}`")
            }
            Action::Otherwise { first, or, .. } => format!("{first}, or {or} `{line}`"),
        })
    }
}

/// The words of [`Action::text`] ("" for [`Action::None`]).
impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Channel;

    #[test]
    fn every_action_renders_its_command() {
        let key = AccountKey::new(Channel::Feishu, "work");
        let rows: Vec<(Action, Option<&str>, Option<&str>)> = vec![
            (Action::None, None, None),
            (
                Action::Relogin(key.clone()),
                Some("run `scv-bridge login feishu work`"),
                Some("scv-bridge login feishu work"),
            ),
            (
                Action::Enable(key.clone()),
                Some("run `scv-bridge channel enable feishu work`"),
                Some("scv-bridge channel enable feishu work"),
            ),
            (
                Action::Reload {
                    first: "check base_url under [wechat.phone]".into(),
                },
                Some("check base_url under [wechat.phone], then run `scv-bridge reload`"),
                Some("scv-bridge reload"),
            ),
            (
                Action::Console {
                    first: "check the app ID and secret in the developer console".into(),
                    then: Command::Login(key.clone()),
                },
                Some(
                    "check the app ID and secret in the developer console, then run `scv-bridge login feishu work`",
                ),
                Some("scv-bridge login feishu work"),
            ),
            (
                Action::Otherwise {
                    first: "upgrade scv-bridge".into(),
                    or: "disable the account with",
                    command: Command::Disable(key.clone()),
                },
                Some(
                    "upgrade scv-bridge, or disable the account with `scv-bridge channel disable feishu work`",
                ),
                Some("scv-bridge channel disable feishu work"),
            ),
        ];
        for (action, text, line) in rows {
            assert_eq!(action.text().as_deref(), text, "{action:?}");
            assert_eq!(action.command_line().as_deref(), line, "{action:?}");
        }
    }
}
