//! The command line's flags and subcommands (clap); `main` parses them, [`super::dispatch`] acts.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use clap_complete::ArgValueCompleter;

/// `--version`: the release and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("SCV_BRIDGE_COMMIT"),
    ")"
);

/// A supervised bridge from your chat apps (WeChat, Feishu, Telegram, WeCom, DingTalk, QQ) and
/// mail to your agent.
#[derive(Parser)]
#[command(name = "scv-bridge", version = VERSION, about)]
pub struct Cli {
    /// The configuration file (else $SCV_BRIDGE_CONFIG, else $XDG_CONFIG_HOME/scv-bridge/config.toml).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// How log lines are written on stderr.
#[derive(Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// For people.
    Pretty,
    /// One JSON object per line, for collectors.
    Json,
}

/// What to do.
#[derive(Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground (logs to stderr; SIGTERM/SIGINT stop it).
    Run,
    /// Show every account's state.
    Status {
        /// Print the raw DaemonStatus JSON.
        #[arg(long)]
        json: bool,
        /// Redraw every 2 s, clearing the screen each time, until Ctrl-C.
        #[arg(long, conflicts_with = "json")]
        watch: bool,
        /// Print nothing; exit 0 when a daemon answers, 1 when none does (for health checks).
        #[arg(long, conflicts_with_all = ["json", "watch"])]
        quiet: bool,
    },
    /// Check the configuration, credentials, store, socket, clock, platforms and agent (a running
    /// daemon's view of each account when one answers).
    Doctor {
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the script that makes a shell complete scv-bridge, account names included
    /// (e.g. `source <(scv-bridge completions bash)` in ~/.bashrc).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `scv-bridge man > ~/.local/share/man/man1/scv-bridge.1`.
    Man,
    /// Reread the configuration and restart only what changed.
    Reload,
    /// Print a one-time login link to the web console (it works once, for a few minutes).
    Console,
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
        #[arg(long, value_parser = crate::confirm::cli::parse_timeout)]
        timeout: Option<u64>,
        /// Ask in this account's owner chat (CHANNEL:ACCOUNT, e.g. feishu:work) instead of `notify`.
        #[arg(long, add = ArgValueCompleter::new(super::candidates::account_keys))]
        chat: Option<String>,
    },
    /// Send a text to the owner in chat, now or later; exit 0 sent (or stored, without --wait),
    /// 1 stopped waiting, 2 failed/cancelled/error, 3 sent but unconfirmed by the platform.
    Send {
        /// The text, as the owner will read it (not with --cancel; may be left out with --file).
        #[arg(required_unless_present_any = ["cancel", "file"])]
        text: Option<String>,
        /// A file to send, inside an account's workspace, at most [media] max_item_mb; give it
        /// more than once for several (with or without the text).
        #[arg(long, value_name = "PATH")]
        file: Vec<std::path::PathBuf>,
        /// Send in this account's owner chat (CHANNEL:ACCOUNT, e.g. feishu:work) instead of `notify`.
        #[arg(long, add = ArgValueCompleter::new(super::candidates::account_keys))]
        to: Option<String>,
        /// When, in the configured `timezone`: 09:00 (its next occurrence), 2026-03-08 09:00, or
        /// RFC 3339 with an offset.
        #[arg(long, conflicts_with = "in_")]
        at: Option<String>,
        /// In how long: seconds, or e.g. 90s, 10m, 1h30m.
        #[arg(long = "in", id = "in_", value_parser = crate::owner::cli::parse_in)]
        in_: Option<u64>,
        /// Wait until it is sent or failed, and exit by how it ended.
        #[arg(long)]
        wait: bool,
        /// Cancel a scheduled send (its id, s-N) instead of sending.
        #[arg(long, conflicts_with_all = ["text", "file", "to", "at", "in_", "wait"])]
        cancel: Option<String>,
    },
    /// Log an account in through its platform's steps (a scan, or the secrets it asks for; the
    /// owner pairs by a one-time code where the login names none); a running daemon picks it up.
    /// `login agent` stores the model API key, checked against [agent] base_url.
    #[command(after_help = login_options())]
    Login {
        /// The account's channel, or `agent` for the model API key.
        #[arg(add = ArgValueCompleter::new(super::candidates::login_targets))]
        target: String,
        /// The account to log in (not for `agent`).
        #[arg(add = ArgValueCompleter::new(super::candidates::accounts))]
        account: Option<String>,
        /// The platform's own options as `--FLAG VALUE` (listed below); what is not given is asked.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "OPTIONS"
        )]
        options: Vec<String>,
    },
    /// Helpers for the configuration file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print the channel set-up guide: each chat platform's bot or app and its login (Feishu's
    /// scopes, events and card callbacks included), mail, the model key.
    Guide {
        /// The language (default: the locale's, from LC_ALL, LC_MESSAGES or LANG).
        #[arg(long, value_enum)]
        lang: Option<GuideLang>,
    },
    /// Set up step by step: the agent, its key, the channels and their logins, the configuration
    /// file (0600), a doctor run and the user service. On an existing file it changes only what
    /// you pick, keeping comments.
    Init(Box<super::init::InitArgs>),
}

pub use super::guide::GuideLang;

/// What to do with the configuration.
#[derive(Subcommand)]
pub enum ConfigAction {
    /// Print the example configuration, every key documented (`> config.toml` to start from it).
    Example,
}

/// Each platform's login options, for `login --help` and the manual page.
fn login_options() -> String {
    let mut out = String::from("Each platform's options:\n");
    for p in crate::adapters::all() {
        let flags: Vec<String> =
            crate::port::login_flow::unconfigured_fields(p.login(), p.channel())
                .iter()
                .filter_map(|f| {
                    f.flag
                        .map(|flag| format!("--{flag} {}", f.name.to_uppercase()))
                })
                .collect();
        let flags = match flags.is_empty() {
            true => "(none; everything is asked)".to_string(),
            false => flags.join(" "),
        };
        out.push_str(&format!("  login {} ACCOUNT  {flags}\n", p.channel()));
    }
    out
}

/// What to do to one account.
#[derive(Subcommand)]
pub enum ChannelAction {
    /// Start an account.
    Enable {
        #[arg(add = ArgValueCompleter::new(super::candidates::channels))]
        channel: String,
        #[arg(add = ArgValueCompleter::new(super::candidates::accounts))]
        account: String,
    },
    /// Stop an account (it stays configured).
    Disable {
        #[arg(add = ArgValueCompleter::new(super::candidates::channels))]
        channel: String,
        #[arg(add = ArgValueCompleter::new(super::candidates::accounts))]
        account: String,
    },
    /// Change an account's settings (persisted across restarts; `status` shows where they differ
    /// from the file, `channel reset` forgets them).
    Set {
        #[arg(add = ArgValueCompleter::new(super::candidates::channels))]
        channel: String,
        #[arg(add = ArgValueCompleter::new(super::candidates::accounts))]
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
    Reset {
        #[arg(add = ArgValueCompleter::new(super::candidates::channels))]
        channel: String,
        #[arg(add = ArgValueCompleter::new(super::candidates::accounts))]
        account: String,
    },
    /// Stop an account and remove its credentials and stored state.
    Logout {
        #[arg(add = ArgValueCompleter::new(super::candidates::channels))]
        channel: String,
        #[arg(add = ArgValueCompleter::new(super::candidates::accounts))]
        account: String,
    },
}

/// `--senders`.
#[derive(Clone, Copy, ValueEnum)]
pub enum SendersArg {
    /// Only the owner.
    Owner,
    /// Anyone (strangers stay tool-free).
    Anyone,
}

/// `--remote-tools`.
#[derive(Clone, Copy, ValueEnum)]
pub enum ToolsArg {
    /// Nobody gets tools.
    None,
    /// The owner gets tools.
    Owner,
}

/// `--purpose`.
#[derive(Clone, Copy, ValueEnum)]
pub enum PurposeArg {
    /// Conversations with the agent.
    Chat,
    /// Mail reports only.
    Mail,
}
