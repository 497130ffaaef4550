//! An account's fix as a button where pressing it cannot do harm (log in again, reconnect,
//! enable), and as the command to copy otherwise (disable, or a change to make first).
//!
//! The buttons send the control commands the CLI sends (`channel enable` is `ChannelSet`,
//! `reload` is `Reload`) through the daemon's own handler, so the console and the CLI cannot
//! drift; "log in again" is the row's login form (`scan.rs`), the walk `login` takes.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::Console;
use super::guard::CSRF_FIELD;
use super::posted::{Posted, carries_csrf};
use crate::control::Handler;
use crate::daemon::console_keys::Session;
use crate::failure::Command;
use crate::ids::AccountKey;
use crate::protocol::{ComponentHealth, ComponentState, DaemonCommand};
use crate::words::{Console as Words, console as words};

/// A fix the page may offer as a button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fix {
    /// Log the account in again (the row's login form).
    Login,
    /// Reread the configuration and restart what failed (`reload`).
    Reconnect,
    /// Turn the account on (`channel enable`).
    Enable,
}

impl Fix {
    /// The safe fix `h` asks for, if any: a disabled account is enabled; otherwise the command
    /// its failure names, when it is one of the three.
    pub(super) fn of(h: &ComponentHealth) -> Option<Fix> {
        let key = AccountKey::parse(&h.id)?;
        if !h.enabled || h.state == ComponentState::Disabled {
            return Some(Fix::Enable);
        }
        let named = h.command.as_deref()?;
        [
            (Command::Login(key.clone()), Fix::Login),
            (Command::Reload, Fix::Reconnect),
            (Command::Enable(key), Fix::Enable),
        ]
        .into_iter()
        .find(|(c, _)| c.line() == named)
        .map(|(_, f)| f)
    }

    fn as_str(self) -> &'static str {
        match self {
            Fix::Login => "login",
            Fix::Reconnect => "reconnect",
            Fix::Enable => "enable",
        }
    }

    fn parse(s: &str) -> Option<Fix> {
        [Fix::Reconnect, Fix::Enable]
            .into_iter()
            .find(|f| f.as_str() == s)
    }
}

/// The fix cell's button for `h` (not for a login: that is the row's login form).
pub(super) fn button(h: &ComponentHealth, w: &Words, session: &Session) -> Markup {
    let label = match Fix::of(h) {
        Some(Fix::Reconnect) => w.fix_reconnect,
        Some(Fix::Enable) => w.fix_enable,
        Some(Fix::Login) | None => return html! {},
    };
    let fix = Fix::of(h).map(Fix::as_str).unwrap_or_default();
    html! {
        form.fix method="post" action="/fix" {
            input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
            input type="hidden" name="account" value=(h.id);
            button type="submit" name="fix" value=(fix) { (label) }
        }
    }
}

/// The fix form.
#[derive(Deserialize)]
pub(super) struct FixForm {
    csrf: Option<String>,
    account: String,
    fix: String,
}
carries_csrf!(FixForm);

/// `POST /fix`: carries out a safe fix of a configured account, as the CLI's command would.
pub(super) async fn fix(
    State(console): State<Console>,
    Posted { lang, form }: Posted<FixForm>,
) -> Response {
    let w = words(lang);
    let (Some(key), Some(fix)) = (AccountKey::parse(&form.account), Fix::parse(&form.fix)) else {
        let msg = format!("{} {} {}", w.fix_unknown, form.account, form.fix);
        return (StatusCode::BAD_REQUEST, msg).into_response();
    };
    let command = match fix {
        Fix::Enable => DaemonCommand::ChannelSet {
            channel: key.channel.as_str().to_string(),
            account: key.account.to_string(),
            enabled: Some(true),
            workspace: None,
            remote_tools: None,
            senders: None,
            purpose: None,
        },
        Fix::Reconnect | Fix::Login => DaemonCommand::Reload,
    };
    match console.core.handle(command).await {
        Ok(_) => Redirect::to("/").into_response(),
        Err(e) => (
            StatusCode::CONFLICT,
            format!("{} {}", w.fix_failed, e.message),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any chat platform will do: the fixes do not depend on which.
    fn key() -> AccountKey {
        AccountKey::new(crate::ids::Channel::ALL[0], "phone")
    }

    fn health(enabled: bool, command: Option<Command>) -> ComponentHealth {
        let key = key();
        let mut h = ComponentHealth::new(key.channel.as_str(), &key.account, enabled);
        h.command = command.map(|c| c.line());
        h
    }

    #[test]
    fn only_the_safe_fixes_are_buttons() {
        let key = key();
        assert_eq!(Fix::of(&health(false, None)), Some(Fix::Enable));
        let login = health(true, Some(Command::Login(key.clone())));
        assert_eq!(Fix::of(&login), Some(Fix::Login));
        assert_eq!(
            Fix::of(&health(true, Some(Command::Reload))),
            Some(Fix::Reconnect)
        );
        assert_eq!(Fix::of(&health(true, Some(Command::Disable(key)))), None);
        assert_eq!(Fix::of(&health(true, None)), None);
        assert_eq!(Fix::parse("login"), None, "a login is the login form");
    }
}
