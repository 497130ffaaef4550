//! `scv-bridge login CHANNEL ACCOUNT`: walk the platform's login steps, store what it accepted,
//! pair the owner where the login names none, then tell a running daemon; `scv-bridge login
//! agent` stores the model API key.

pub mod agent;
mod pairing_wait;
pub mod prompt;
mod said;
mod steps;
mod terminal;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::client;
use crate::config::Config;
use crate::protocol::DaemonCommand;
use crate::secrets::CredentialStore;

pub use steps::run_with;

/// What the command line gave a login besides the account.
#[derive(Debug, Clone, Default)]
pub struct LoginArgs {
    /// `--FLAG VALUE` pairs, by flag name without the dashes (`app-id`): answers to the
    /// platform's questions that have a flag (`Field::flag`).
    pub flags: BTreeMap<String, String>,
    /// How often to poll while waiting (a scan, a pairing); `None`: the platform's pace.
    pub poll: Option<Duration>,
}

impl LoginArgs {
    /// `args` with `--FLAG VALUE` given (a builder for callers that know a flag).
    pub fn with_flag(mut self, flag: &str, value: impl Into<String>) -> Self {
        self.flags.insert(flag.to_string(), value.into());
        self
    }

    /// Reads `--FLAG VALUE` / `--FLAG=VALUE` words after the account; the error is for people.
    pub fn parse(words: &[String]) -> Result<Self, String> {
        let mut args = LoginArgs::default();
        let mut words = words.iter();
        while let Some(w) = words.next() {
            let Some(flag) = w.strip_prefix("--").filter(|f| !f.is_empty()) else {
                return Err(format!("expected a --FLAG VALUE option, found '{w}'"));
            };
            let (flag, value) = match flag.split_once('=') {
                Some((f, v)) => (f.to_string(), v.to_string()),
                None => match words.next() {
                    Some(v) => (flag.to_string(), v.clone()),
                    None => return Err(format!("--{flag} needs a value")),
                },
            };
            args.flags.insert(flag, value);
        }
        Ok(args)
    }
}

/// Runs `channel`'s login for `account` in the terminal: its platform's steps
/// (`Platform::login`), the same for every platform.
pub async fn run(
    channel: crate::ids::Channel,
    config: &Config,
    account: &str,
    args: &LoginArgs,
) -> Result<(), String> {
    run_with(channel, config, account, args, &mut terminal::Terminal)
        .await
        .map(drop)
}

/// The credential store the daemon with `config` uses.
pub async fn credential_store(config: &Config) -> Result<CredentialStore, String> {
    let (mode, dir) = (config.credentials, config.state_dir.clone());
    tokio::task::spawn_blocking(move || CredentialStore::open_quietly(mode, &dir))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Asks a running daemon to pick up new credentials (a reload restarts only that account).
///
/// Returns a line for people: picked up, or no daemon running.
pub async fn notify_daemon(config: &Config) -> String {
    tell_daemon(config).await.1
}

/// [`notify_daemon`], and whether a daemon answered (only a running daemon hears the platform,
/// so a login that waits for something sent to the bot must know).
pub async fn tell_daemon(config: &Config) -> (bool, String) {
    let commands = crate::config::CommandLine::for_config(&config.path);
    match client::request(&config.socket, DaemonCommand::Reload).await {
        Ok(_) => (
            true,
            "the running daemon picked up the new credentials".to_string(),
        ),
        Err(client::ClientError::NotRunning(_)) => (
            false,
            format!(
                "no daemon is running; start it with `{}`",
                commands.command("run")
            ),
        ),
        Err(e) => (
            false,
            format!(
                "the daemon did not reload: {e}; run `{}`",
                commands.command("reload")
            ),
        ),
    }
}
