//! The `scv-bridge` command line: parse flags, set up logging, call the library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use std::sync::Arc;

use scv_bridge::adapters::{AdapterContext, PlatformFactory};
use scv_bridge::client;
use scv_bridge::config::{CommandLine, Config, client_socket};
use scv_bridge::confirm::{Clock, ConfirmService};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::Wiring;
use scv_bridge::login::LoginArgs;
use scv_bridge::protocol::{DaemonCommand, Purpose, RemoteTools, Senders};
use scv_bridge::secrets::CredentialStore;
use scv_bridge::store::Store;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy, unix_now};

/// A supervised bridge from WeChat, Feishu and mail to your agent.
#[derive(Parser)]
#[command(name = "scv-bridge", version, about)]
struct Cli {
    /// The configuration file (else $SCV_BRIDGE_CONFIG, else $XDG_CONFIG_HOME/scv-bridge/config.toml).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value = "pretty")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Pretty,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon in the foreground (logs to stderr; SIGTERM/SIGINT stop it).
    Run,
    /// Show every account's state.
    Status {
        /// Print the raw DaemonStatus JSON.
        #[arg(long)]
        json: bool,
        /// Redraw every 2 s until interrupted.
        #[arg(long, conflicts_with = "json")]
        watch: bool,
    },
    /// Check the configuration, credentials, store, socket, clock, platforms and agent (a running
    /// daemon's view of each account when one answers).
    Doctor {
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print shell completions.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Reread the configuration and restart only what changed.
    Reload,
    /// Enable, disable, change, reset or log out one account.
    Channel {
        #[command(subcommand)]
        action: ChannelAction,
    },
    /// Ask the owner a yes/no question in chat; exit 0 yes, 1 no/expired/withdrawn, 2 failed or error.
    Confirm {
        /// The question, as the owner will read it.
        question: String,
        /// How long to wait: seconds, or e.g. 90s, 10m, 1h30m (default 30m, at most 4h).
        #[arg(long, value_parser = scv_bridge::confirm::cli::parse_timeout)]
        timeout: Option<u64>,
        /// Ask in this account's owner chat (CHANNEL:ACCOUNT, e.g. feishu:work) instead of `notify`.
        #[arg(long)]
        chat: Option<String>,
    },
    /// Store an account's credentials (a running daemon picks them up).
    Login {
        #[command(subcommand)]
        target: LoginTarget,
    },
}

#[derive(Subcommand)]
enum LoginTarget {
    /// Scan a QR code with WeChat; the scanner becomes the account's owner.
    Wechat {
        account: String,
        /// The iLink endpoint to log in against.
        #[arg(long)]
        base_url: Option<String>,
    },
    /// Store the Feishu app ID and secret, then pair the owner.
    Feishu {
        account: String,
        /// The app ID (the secret is prompted, or read from stdin).
        #[arg(long)]
        app_id: Option<String>,
    },
    /// Store the mailbox password (prompted, or read from stdin).
    Mail { account: String },
}

#[derive(Subcommand)]
enum ChannelAction {
    /// Start an account.
    Enable { channel: String, account: String },
    /// Stop an account (it stays configured).
    Disable { channel: String, account: String },
    /// Change an account's settings (persisted across restarts; `status` shows where they differ
    /// from the file, `channel reset` forgets them).
    Set {
        channel: String,
        account: String,
        #[arg(long, value_enum)]
        senders: Option<SendersArg>,
        #[arg(long = "remote-tools", value_enum)]
        remote_tools: Option<ToolsArg>,
        #[arg(long, value_enum)]
        purpose: Option<PurposeArg>,
        #[arg(long)]
        workspace: Option<String>,
        /// Also enable the account (without it, whether it runs does not change).
        #[arg(long, conflicts_with = "disabled")]
        enabled: bool,
        /// Also disable the account.
        #[arg(long)]
        disabled: bool,
    },
    /// Forget an account's run-time settings (set, enable, disable): it runs as the file says.
    Reset { channel: String, account: String },
    /// Stop an account and remove its credentials and stored state.
    Logout { channel: String, account: String },
}

#[derive(Clone, Copy, ValueEnum)]
enum SendersArg {
    Owner,
    Anyone,
}

#[derive(Clone, Copy, ValueEnum)]
enum ToolsArg {
    None,
    Owner,
}

#[derive(Clone, Copy, ValueEnum)]
enum PurposeArg {
    Chat,
    Mail,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("scv-bridge: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("scv-bridge: {message}");
            ExitCode::from(1)
        }
    }
}

fn init_logging(format: LogFormat) {
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Protocol libraries log raw traffic (mail text, chat frames) at debug/trace: never let them,
    // whatever RUST_LOG says.
    let quiet = scv_bridge::adapters::mail::QUIET_PROTOCOL_LOGS
        .iter()
        .chain(&[
            "hyper=info",
            "hyper_util=info",
            "reqwest=info",
            "h2=info",
            "tungstenite=info",
            "tokio_tungstenite=info",
            "rustls=info",
        ]);
    for directive in quiet {
        if let Ok(d) = directive.parse() {
            filter = filter.add_directive(d);
        }
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Pretty => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, String> {
    let config_path = Config::default_path(cli.config.as_deref());
    // Every command printed from here on (and by a daemon started here) names this file.
    CommandLine::for_config(&config_path).install();
    match cli.command {
        Command::Run => run(&config_path).await,
        Command::Doctor { json } => {
            let report = scv_bridge::doctor::run(&config_path).await;
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
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "scv-bridge",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Status {
            json: false,
            watch: true,
        } => {
            let socket = socket_of(&config_path);
            loop {
                let status = client::request(&socket, DaemonCommand::Status)
                    .await
                    .map_err(|e| e.to_string())?;
                // Clear the screen and redraw from the top.
                print!(
                    "\x1b[2J\x1b[H{}",
                    scv_bridge::cli::status_table(&status, unix_now())
                );
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
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
                print!("{}", scv_bridge::cli::status_table(&status, unix_now()));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reload => {
            let status = client::request(&socket_of(&config_path), DaemonCommand::Reload)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "reloaded; {} account(s) configured",
                status.components.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Channel { action } => channel(&config_path, action).await,
        Command::Confirm {
            question,
            timeout,
            chat,
        } => confirm(&config_path, question, timeout, chat).await,
        Command::Login { target } => {
            let config = Config::load(&config_path).map_err(|e| e.to_string())?;
            let result = match target {
                LoginTarget::Wechat { account, base_url } => {
                    let args = LoginArgs {
                        base_url,
                        ..LoginArgs::default()
                    };
                    scv_bridge::login::wechat::run(&config, &account, &args).await
                }
                LoginTarget::Feishu { account, app_id } => {
                    let args = LoginArgs {
                        app_id,
                        ..LoginArgs::default()
                    };
                    scv_bridge::login::feishu::run(&config, &account, &args).await
                }
                LoginTarget::Mail { account } => {
                    scv_bridge::login::mail::run(&config, &account, &LoginArgs::default()).await
                }
            };
            result.map(|()| ExitCode::SUCCESS)
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

async fn run(config_path: &Path) -> Result<ExitCode, String> {
    let config = Config::load(config_path).map_err(|e| e.to_string())?;
    let agent_config = config.agent.clone();
    let timezone = config.timezone;
    let wire = move |creds: &CredentialStore, store: &Store| {
        // A backend that cannot work is a stand-in that says why: accounts still connect, status
        // shows "not configured" from the start, and the owner is told why nobody answers.
        let agent = scv_bridge::agent::build(&agent_config, store.clone());
        let conversation = Conversation::new(store.clone(), agent);
        let confirm = ConfirmService::new(
            store.clone(),
            conversation.clone(),
            creds.clone(),
            Clock::tokio(),
        );
        let ctx = AdapterContext {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: conversation.clone(),
            agent: agent_config,
            mail: scv_bridge::adapters::mail::MailEnv::new(timezone),
        };
        // Feishu card clicks answer confirm questions.
        let cards = Arc::new(scv_bridge::adapters::feishu::ConfirmCards(confirm.clone()));
        let factory: Arc<dyn ComponentFactory> = PlatformFactory::with_cards(ctx, cards);
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: Some(confirm),
        }
    };
    let daemon = scv_bridge::daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .map_err(|e| e.to_string())?;
    let shutdown = daemon.shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("stopping: signal received");
        shutdown.cancel();
    });
    let report = daemon.wait().await;
    if report.abandoned.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "scv-bridge: abandoned while stopping: {}",
            report.abandoned.join(", ")
        );
        Ok(ExitCode::from(1))
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
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
    print!("{}", scv_bridge::cli::status_table(&status, unix_now()));
    Ok(ExitCode::SUCCESS)
}

/// `scv-bridge confirm`: asks, shows a live line on a terminal, prints the outcome, exits 0/1/2.
async fn confirm(
    config_path: &Path,
    question: String,
    timeout: Option<u64>,
    chat: Option<String>,
) -> Result<ExitCode, String> {
    use scv_bridge::confirm::cli;
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
