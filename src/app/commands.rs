//! What each subcommand does: client commands over the control socket, login, doctor.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::{ChannelAction, Cli, Command, ConfigAction, PurposeArg, SendersArg, ToolsArg};
use crate::client;
use crate::config::{CommandLine, Config, client_socket};
use crate::login::LoginArgs;
use crate::protocol::{DaemonCommand, Purpose, RemoteTools, Senders};
use crate::supervisor::unix_now;

/// Runs one parsed command line; the error is one line for people.
pub async fn dispatch(cli: Cli) -> Result<ExitCode, String> {
    let config_path = Config::default_path(cli.config.as_deref());
    // Every command printed from here on (and by a daemon started here) names this file.
    CommandLine::for_config(&config_path).install();
    match cli.command {
        Command::Run => super::compose::run(&config_path).await,
        Command::Doctor { json } => {
            let report = crate::doctor::run(&config_path).await;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report.to_json()).map_err(|e| e.to_string())?
                );
            } else {
                print!("{}", report.render());
            }
            Ok(if report.failed() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Completions { shell } => {
            super::complete::registration(&shell.to_string(), &mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            super::man::man_page(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Config {
            action: ConfigAction::Example,
        } => {
            super::complete::print_text(&super::example::example(&crate::config::Channel::ALL))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Guide { lang } => {
            let lang = super::guide::language(lang, |k| std::env::var(k).ok());
            super::complete::print_text(&super::guide::text(lang))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Init(args) => super::init::run(&config_path, *args).await,
        Command::Status { quiet: true, .. } => {
            // A health check: the answer is the exit code alone.
            let found = client_socket(&config_path);
            Ok(
                match client::request(&found.path, DaemonCommand::Status).await {
                    Ok(_) => ExitCode::SUCCESS,
                    Err(_) => ExitCode::from(1),
                },
            )
        }
        Command::Status {
            json: false,
            watch: true,
            ..
        } => {
            let socket = socket_of(&config_path);
            // Accounts that did not change between redraws are not parsed again.
            let mut watch = client::StatusWatch::default();
            loop {
                let status = client::Client::connect(&socket)
                    .await
                    .map_err(|e| e.to_string())?
                    .watch_status(&mut watch)
                    .await
                    .map_err(|e| e.to_string())?;
                print!("{}", crate::cli::watch_frame(status, unix_now()));
                let every = std::time::Duration::from_secs(crate::cli::WATCH_EVERY_SECS);
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
                }
            }
        }
        Command::Status { json, .. } => {
            let status = client::request(&socket_of(&config_path), DaemonCommand::Status)
                .await
                .map_err(|e| e.to_string())?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&status).map_err(|e| e.to_string())?
                );
            } else {
                print!("{}", crate::cli::status_table(&status, unix_now()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reload => {
            let status = client::request(&socket_of(&config_path), DaemonCommand::Reload)
                .await
                .map_err(|e| e.to_string())?;
            let did = status.reload.map(|r| r.describe()).unwrap_or_default();
            println!(
                "reloaded: {did}; {} account(s) configured",
                status.components.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Console => {
            let status = client::request(&socket_of(&config_path), DaemonCommand::ConsoleLink)
                .await
                .map_err(|e| e.to_string())?;
            let console = status.console.unwrap_or_default();
            if let Some(w) = &console.warning {
                eprintln!("warning: {w}");
            }
            let link = console
                .link
                .ok_or("the daemon answered without a link; is it an older release? restart it")?;
            println!("{link}");
            println!("Open it in a browser on this machine within 5 minutes; it works once.");
            Ok(ExitCode::SUCCESS)
        }
        Command::Channel { action } => channel(&config_path, action).await,
        Command::Confirm {
            question,
            timeout,
            chat,
        } => confirm(&config_path, question, timeout, chat).await,
        Command::Send {
            text,
            to,
            at,
            in_,
            wait,
            cancel,
        } => {
            let opts = crate::owner::cli::Options {
                text: text.unwrap_or_default(),
                to,
                at,
                in_seconds: in_,
                wait,
                poll_every: crate::owner::cli::POLL_EVERY,
            };
            send(&config_path, opts, cancel).await
        }
        Command::Login {
            target,
            account,
            options,
        } => {
            let config = Config::load(&config_path).map_err(|e| e.to_string())?;
            login(&config, &target, account, &options).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The socket path every client command uses, found the same way as the daemon finds it; a
/// configuration error is a warning here (the running daemon keeps what it loaded).
fn socket_of(config_path: &Path) -> PathBuf {
    let found = client_socket(config_path);
    for line in found.warning.iter().flat_map(|w| w.lines()) {
        eprintln!("scv-bridge: warning: {line}");
    }
    found.path
}

async fn channel(config_path: &Path, action: ChannelAction) -> Result<ExitCode, String> {
    let set = |channel: String, account: String, enabled: bool| DaemonCommand::ChannelSet {
        channel,
        account,
        enabled: Some(enabled),
        workspace: None,
        remote_tools: None,
        senders: None,
        purpose: None,
    };
    let command = match action {
        ChannelAction::Enable { channel, account } => set(channel, account, true),
        ChannelAction::Disable { channel, account } => set(channel, account, false),
        ChannelAction::Set {
            channel,
            account,
            senders,
            remote_tools,
            purpose,
            workspace,
            enabled,
            disabled,
        } => DaemonCommand::ChannelSet {
            channel,
            account,
            // Neither flag: whether the account runs stays as it is.
            enabled: (enabled || disabled).then_some(enabled),
            workspace,
            senders: senders.map(|s| match s {
                SendersArg::Owner => Senders::Owner,
                SendersArg::Anyone => Senders::Anyone,
            }),
            remote_tools: remote_tools.map(|t| match t {
                ToolsArg::None => RemoteTools::None,
                ToolsArg::Owner => RemoteTools::Owner,
            }),
            purpose: purpose.map(|p| match p {
                PurposeArg::Chat => Purpose::Chat,
                PurposeArg::Mail => Purpose::Mail,
            }),
        },
        ChannelAction::Reset { channel, account } => {
            DaemonCommand::ChannelReset { channel, account }
        }
        ChannelAction::Logout { channel, account } => {
            DaemonCommand::ChannelLogout { channel, account }
        }
    };
    let status = client::request(&socket_of(config_path), command)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(r) = &status.reload {
        println!("{}", r.describe());
    }
    print!("{}", crate::cli::status_table(&status, unix_now()));
    Ok(ExitCode::SUCCESS)
}

/// `scv-bridge confirm`: asks, shows a live line on a terminal, prints the outcome, exits 0/1/2.
async fn confirm(
    config_path: &Path,
    question: String,
    timeout: Option<u64>,
    chat: Option<String>,
) -> Result<ExitCode, String> {
    use crate::confirm::cli;
    use std::io::IsTerminal;
    let socket = socket_of(config_path);
    let opts = cli::Options {
        question,
        timeout_seconds: timeout,
        chat,
        poll_every: cli::POLL_EVERY,
    };
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let mut stderr = std::io::stderr();
    let live: Option<&mut (dyn std::io::Write + Send)> = if stderr.is_terminal() {
        Some(&mut stderr)
    } else {
        None
    };
    let outcome = cli::run(&socket, &opts, stop, live).await;
    match &outcome {
        cli::Outcome::Error(_) => eprintln!("scv-bridge: {}", outcome.message()),
        _ => println!("{}", outcome.message()),
    }
    Ok(ExitCode::from(outcome.exit_code()))
}

/// `send TEXT` (or `send --cancel ID`): one line at the end, the exit code by how it ended.
async fn send(
    config_path: &Path,
    opts: crate::owner::cli::Options,
    cancel: Option<String>,
) -> Result<ExitCode, String> {
    use crate::owner::cli;
    let socket = socket_of(config_path);
    let outcome = match cancel {
        Some(id) => cli::cancel(&socket, &id).await,
        None => {
            let stop = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            cli::run(&socket, &opts, stop).await
        }
    };
    match &outcome {
        cli::Outcome::Error(_) => eprintln!("scv-bridge: {}", outcome.message()),
        _ => println!("{}", outcome.message()),
    }
    Ok(ExitCode::from(outcome.exit_code()))
}

/// `login TARGET [ACCOUNT] [OPTIONS]`: the model key, or an account through its platform's steps.
async fn login(
    config: &Config,
    target: &str,
    account: Option<String>,
    options: &[String],
) -> Result<(), String> {
    if target == "agent" {
        if let Some(extra) = account.as_ref().or(options.first()) {
            return Err(format!(
                "`login agent` takes no account or options, found '{extra}'"
            ));
        }
        return crate::login::agent::run(config).await;
    }
    let channel = crate::config::Channel::parse(target).ok_or_else(|| {
        format!(
            "expected a channel ({}) or agent, found '{target}'",
            crate::config::Channel::ALL.map(|c| c.as_str()).join(", ")
        )
    })?;
    let account = account.ok_or_else(|| {
        format!(
            "which account? e.g. `{}`",
            crate::config::CommandLine::for_config(&config.path)
                .command(&format!("login {channel} NAME"))
        )
    })?;
    let args = LoginArgs::parse(options)?;
    crate::login::run(channel, config, &account, &args).await
}
