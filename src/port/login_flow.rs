//! A platform's login as steps: what it asks ([`Field`]), how it checks the answers against the
//! platform ([`LoginFlow::verify`], which may show a QR code and wait for a scan), and whether
//! its owner pairs by a one-time code ([`OwnerBy`]).
//!
//! Each platform makes its flow (`Platform::login`); `crate::login::run` walks any flow with
//! any [`LoginUi`] (the terminal today, a browser page next), so `login`, `init` and the console
//! never name a platform. The field names in [`Field::name`] and in the entry a flow returns are
//! the platform's own; nothing outside its folder reads them.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::config::{AccountKey, ChannelSettings};
use crate::secrets::Credentials;

/// One answer a login asks for (or takes from a command-line flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The answer's name in [`Answers`] (the platform's own).
    pub name: &'static str,
    /// The question on a terminal or page; `None`: only ever given as a flag.
    pub prompt: Option<&'static str>,
    /// The flag that gives it on the command line (`app-id` for `--app-id`), if any.
    pub flag: Option<&'static str>,
    /// Kept off the screen (echo off on a terminal, a password box on a page).
    pub hidden: bool,
    /// An empty answer is refused with [`Field::missing`].
    pub required: bool,
    /// Kept exactly as typed (a password may start or end with a space); else trimmed.
    pub exact: bool,
    /// What to say when a required answer is empty (a fix, not just "missing").
    pub missing: &'static str,
}

impl Field {
    /// A required, trimmed, visible question.
    pub const fn asked(name: &'static str, prompt: &'static str, missing: &'static str) -> Self {
        Field {
            name,
            prompt: Some(prompt),
            flag: None,
            hidden: false,
            required: true,
            exact: false,
            missing,
        }
    }

    /// The same question, kept off the screen.
    pub const fn secret(self) -> Self {
        Field {
            hidden: true,
            ..self
        }
    }

    /// The same question, which may be left empty.
    pub const fn optional(self) -> Self {
        Field {
            required: false,
            ..self
        }
    }

    /// The same question, also given by `--FLAG VALUE`.
    pub const fn flag(self, flag: &'static str) -> Self {
        Field {
            flag: Some(flag),
            ..self
        }
    }

    /// The same question, its answer kept exactly as typed.
    pub const fn exact(self) -> Self {
        Field {
            exact: true,
            ..self
        }
    }
}

/// The answers given, by [`Field::name`].
pub type Answers = BTreeMap<&'static str, String>;

/// What a login shows a person as it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// A line of progress or advice.
    Line(String),
    /// A QR code to scan: the app that scans it, its content (a URL) and which of how many
    /// codes it is.
    Qr {
        /// The app to scan it with ("WeChat").
        app: &'static str,
        /// What the code encodes (also shown as a link to open).
        url: String,
        /// This code's number, from 1.
        number: u32,
        /// How many codes the login shows at most.
        of: u32,
    },
}

/// Where a login talks to a person: the terminal, a test's script, a browser page.
pub trait LoginUi: Send {
    /// Shows progress, advice or a QR code.
    fn show(&mut self, shown: Shown);

    /// Asks one question; `Err` when it cannot be answered (no terminal, input closed).
    fn ask<'a>(&'a mut self, field: &'a Field) -> BoxFuture<'a, Result<String, String>>;
}

/// What a flow is given besides the answers.
pub struct LoginInput<'a> {
    /// The account logging in.
    pub key: &'a AccountKey,
    /// Its configured settings, when it is configured.
    pub settings: Option<&'a ChannelSettings>,
    /// What an earlier login stored, if anything.
    pub previous: Option<&'a Credentials>,
    /// How often to poll the platform while waiting (a scan); `None`: the platform's pace.
    pub poll: Option<Duration>,
    /// `scv-bridge CMD` spelled for this configuration file, for fixes in errors.
    pub commands: &'a crate::config::CommandLine,
}

/// Who the owner of an account becomes after a login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerBy {
    /// The login names the owner (the entry carries it: a WeChat scan).
    Login,
    /// Nobody yet: a one-time code pairs them (the configuration does not name one).
    Pairing,
    /// The configuration names the owner; nothing to pair.
    Configured,
    /// The platform has no owner (mail).
    Nobody,
}

/// A login the platform accepted.
#[derive(Debug, Clone)]
pub struct Verified {
    /// Everything to store for the account, replacing an earlier login as a whole.
    pub entry: Credentials,
    /// Who the bot is, for people ("bot \"Helper\" (ou_…)").
    pub said: String,
    /// How the owner is found.
    pub owner: OwnerBy,
}

/// What the platform said to a login.
#[derive(Debug, Clone)]
pub enum Checked {
    /// Accepted: store this.
    Verified(Verified),
    /// Nothing new to store (the bot is already bound here); the line says so.
    Kept(String),
}

/// One platform's login.
pub trait LoginFlow: Send + Sync {
    /// A line shown before the questions (where the platform's set-up is explained), if any.
    fn intro(&self) -> Option<String> {
        None
    }

    /// The questions, in order, for this account (they may depend on its settings).
    fn fields(&self, input: &LoginInput<'_>) -> Vec<Field>;

    /// What a stored login lacks that this account's steps ask for (doctor's credentials
    /// check): what is wrong and its fix, with `login` the command that logs in again. By
    /// default, the first required question with no stored answer.
    fn lacks(
        &self,
        input: &LoginInput<'_>,
        stored: &Credentials,
        login: &str,
    ) -> Option<(String, String)> {
        let missing = self.fields(input).into_iter().find(|f| {
            f.required
                && f.prompt.is_some()
                && stored.get(f.name).is_none_or(|v| v.expose().is_empty())
        })?;
        Some((
            format!(
                "{} has no {} stored",
                input.key,
                missing.prompt.unwrap_or(missing.name)
            ),
            format!("run `{login}`"),
        ))
    }

    /// Checks the answers against the platform (showing a QR code through `ui` where the login
    /// is a scan). The error is for people: what failed and what to do.
    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>>;
}

/// The questions `flow` asks an account that is not configured yet, as `login --help` lists
/// them and `init` passes its answers as flags.
pub fn unconfigured_fields(flow: &dyn LoginFlow, channel: crate::ids::Channel) -> Vec<Field> {
    let key = AccountKey::new(channel, "ACCOUNT");
    let commands = crate::config::CommandLine::default();
    flow.fields(&LoginInput {
        key: &key,
        settings: None,
        previous: None,
        poll: None,
        commands: &commands,
    })
}
