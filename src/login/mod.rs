//! `scv-bridge login CHANNEL ACCOUNT`: store an account's credentials, then tell a running daemon;
//! `scv-bridge login agent` stores the model API key.

pub mod agent;
pub mod feishu;
pub mod mail;
pub mod prompt;
pub mod wechat;

use crate::client;
use crate::config::Config;
use crate::protocol::DaemonCommand;
use crate::secrets::CredentialStore;

/// Options the login commands take (each channel uses what applies to it).
#[derive(Debug, Clone, Default)]
pub struct LoginArgs {
    /// WeChat: the iLink base URL to log in against.
    pub base_url: Option<String>,
    /// Feishu: the app ID (the secret is prompted, or read from stdin).
    pub app_id: Option<String>,
}

/// Runs `channel`'s login for `account`: the one place that picks a login by channel (a new
/// channel fails to compile here until it has one, instead of running another's).
pub async fn run(
    channel: crate::ids::Channel,
    config: &Config,
    account: &str,
    args: &LoginArgs,
) -> Result<(), String> {
    use crate::ids::Channel;
    match channel {
        Channel::Wechat => wechat::run(config, account, args).await,
        Channel::Feishu => feishu::run(config, account, args).await,
        Channel::Mail => mail::run(config, account, args).await,
    }
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
