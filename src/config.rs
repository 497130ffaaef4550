//! The TOML configuration (`cli-and-config.md`), validated with errors that name file, line and key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use crate::ids::{AccountKey, Channel, valid_account_name};
use crate::protocol::{Purpose, RemoteTools, Senders};

mod agents;
mod client_socket;
mod command_line;
mod key_range;
mod locate;
mod mail_check;
mod owner;
mod platform_split;
mod platform_table;
mod ranges;
mod raw;
mod speech;

pub use agents::{
    AgentChoice, ChatsConfig, Choices, DEFAULT_AGENT, DEFAULT_AWAY_MINUTES, grants_tools,
};
pub use client_socket::{ClientSocket, client_socket};
pub use command_line::{CommandLine, EXAMPLE_COMMAND, command, default_location, shell_quote};
use locate::{key_path_at, line_col, line_of_key};
pub use raw::{
    AgentBackend, AgentConfig, Approvals, CredentialsMode, MailTls, MediaConfig, MediaLimits,
};

/// One account as the daemon runs it; compared by value to decide what a reload restarts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountSpec {
    /// Which account.
    pub key: AccountKey,
    /// Whether it should run.
    pub enabled: bool,
    /// The agent's working directory for this account's chats.
    pub workspace: Option<PathBuf>,
    /// Who it answers.
    pub senders: Senders,
    /// Who may use tools.
    pub remote_tools: RemoteTools,
    /// Whether the owner's tool calls run at once or after a yes in chat.
    pub approvals: Approvals,
    /// What the chat is for.
    pub purpose: Purpose,
    /// The language the bridge writes to this account's chats in (the account's `language`,
    /// else the global one, else `auto`).
    pub language: crate::words::Language,
    /// How much received media the account keeps (`[media]`).
    pub media: MediaLimits,
    /// Platform-specific settings.
    pub settings: ChannelSettings,
}

/// The settings only one platform has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelSettings {
    /// A chat platform's own keys, checked by its schema; the platform reads them
    /// (`<Platform>Settings::of(spec)`).
    Own(PlatformTable),
    /// Mail settings: mail's table is the configuration's own (digests name other accounts).
    Mail(raw::MailSettings),
}

impl Default for ChannelSettings {
    fn default() -> Self {
        ChannelSettings::Own(PlatformTable::default())
    }
}

pub use key_range::{KeyRange, Scope, account_range};
pub use owner::OwnerConfig;
pub use platform_table::{PLATFORM_TABLES, PlatformTable, TableSchema, schema};
pub use raw::MailSettings;
pub use speech::{SpeechConfig, VoiceText};

/// Where the console listens when `console_listen` is not set: this machine only.
pub const DEFAULT_CONSOLE_LISTEN: std::net::SocketAddr = std::net::SocketAddr::V4(
    std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 7860),
);

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file it was read from.
    pub path: PathBuf,
    /// Where the store, file credentials and (by default) the socket live.
    pub state_dir: PathBuf,
    /// The control socket's path.
    pub socket: PathBuf,
    /// Where credentials are kept.
    pub credentials: CredentialsMode,
    /// Where confirm questions go when no parent names a chat.
    pub notify: Option<AccountKey>,
    /// The "local day" for daily counters; `None` means the system's local time.
    pub timezone: Option<chrono_tz::Tz>,
    /// Where Prometheus metrics are served, if anywhere.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Where the web console is served (`console_listen`; `None`: `off`). A non-loopback
    /// address is served as set, and `status` and `doctor` warn about it.
    pub console_listen: Option<std::net::SocketAddr>,
    /// The agent backend: the agent named `default`.
    pub agent: AgentConfig,
    /// The speech server (`[speech]`), for voice notes and answers in voice.
    pub speech: SpeechConfig,
    /// The named agents (`[agents.NAME]`), `default` not among them.
    pub agents: BTreeMap<String, AgentConfig>,
    /// How chats' turns take their messages (`[chats]`).
    pub chats: ChatsConfig,
    /// Which agents each chat account talks to (mail accounts have none).
    pub choices: Choices,
    /// `[owner]`: the chats that reach the owner, in order, and when a message moves on.
    pub owner: OwnerConfig,
    /// Every configured account.
    pub accounts: BTreeMap<AccountKey, AccountSpec>,
}

/// A configuration that could not be loaded, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// The dotted key, when known (`feishu.work.senders`).
    pub key: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: None,
            key: None,
            message: if e.kind() == std::io::ErrorKind::NotFound {
                // The first thing a new user sees: say how to get a configuration.
                format!(
                    "cannot read the configuration: {e}; run `{}` to write one, or `{}` for \
                     every key, documented",
                    CommandLine::for_config(path).command("init"),
                    EXAMPLE_COMMAND
                )
            } else {
                format!("cannot read the configuration: {e}")
            },
        })?;
        Config::parse(path, &text)
    }

    /// Parses and validates configuration text that came from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let parse_error = |e: toml::de::Error| {
            let (line, key) = match e.span() {
                Some(span) => (
                    Some(line_col(text, span.start).0),
                    key_path_at(text, span.start),
                ),
                None => (None, None),
            };
            let message = match (&key, e.span()) {
                // A number its type cannot hold (`backfill_days = 18446744073709551615`) reads
                // like any other value out of range.
                (Some(k), Some(span)) if number_error(e.message()) => match ranges::range_of(k) {
                    Some(r) => format!(
                        "expected {}, found {}",
                        r.expected(),
                        text.get(span).unwrap_or("").trim()
                    ),
                    None => friendly_serde_message(e.message()),
                },
                _ => friendly_serde_message(e.message()),
            };
            ConfigError {
                file: path.to_path_buf(),
                line,
                key,
                message,
            }
        };
        // Ranges first, on the file as a plain tree: a number the typed parse accepts can still be
        // one that overflows at run time.
        let tree: serde_json::Value = toml::from_str(text).map_err(parse_error)?;
        ranges::check(&tree).map_err(|o| located(path, text, &o.table, Some(o.key), o.message))?;
        // The chat platforms' tables are theirs to check; the rest is the configuration's.
        let mut doc = toml::de::DeTable::parse(text).map_err(parse_error)?;
        let written = platform_split::take_platform_tables(
            doc.get_mut(),
            path,
            text,
            &parse_error,
            &raw::SHARED_KEYS,
        )?;
        let platforms = written
            .into_iter()
            .map(|w| raw::PlatformAccount::read(w).map_err(&parse_error))
            .collect::<Result<Vec<_>, _>>()?;
        let raw =
            raw::RawConfig::deserialize(toml::de::Deserializer::from(doc)).map_err(parse_error)?;
        raw.validate(path, text, platforms)
    }

    /// Finds the configuration file: `--config`, else `$SCV_BRIDGE_CONFIG`, else the XDG default.
    pub fn default_path(explicit: Option<&Path>) -> PathBuf {
        if let Some(p) = explicit {
            return p.to_path_buf();
        }
        if let Some(p) = std::env::var_os("SCV_BRIDGE_CONFIG").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        default_location()
    }

    /// The settings whose change a reload cannot apply, named when they differ.
    pub fn unreloadable_changes(&self, new: &Config) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if self.state_dir != new.state_dir {
            changed.push("state_dir");
        }
        if self.socket != new.socket {
            changed.push("socket");
        }
        if self.credentials != new.credentials {
            changed.push("credentials");
        }
        if self.metrics_listen != new.metrics_listen {
            changed.push("metrics_listen");
        }
        if self.console_listen != new.console_listen {
            changed.push("console_listen");
        }
        // A changed `[agent]` is taken by a reload (the daemon swaps the agent; turns in flight
        // finish on the old one), except into an `acp` backend: building one kills the agent
        // process groups recorded in the state directory, which may be ours still answering.
        if self.agent_changed(new) && new.agent.backend == AgentBackend::Acp {
            changed.push("[agent]");
        }
        // The same for a new or changed named `acp` agent.
        let acp_changed = new.agents.iter().any(|(name, cfg)| {
            cfg.backend == AgentBackend::Acp && self.agents.get(name) != Some(cfg)
        });
        if acp_changed {
            changed.push("an [agents.NAME] table with backend = \"acp\"");
        }
        changed
    }

    /// The agent named `name` (`default` is `[agent]`).
    pub fn agent_named(&self, name: &str) -> Option<&AgentConfig> {
        match name {
            DEFAULT_AGENT => Some(&self.agent),
            other => self.agents.get(other),
        }
    }

    /// Whether `[agent]` differs in `new` (the key `login agent` stored is not part of the file,
    /// so it is not compared).
    pub fn agent_changed(&self, new: &Config) -> bool {
        let (mut old_agent, mut new_agent) = (self.agent.clone(), new.agent.clone());
        (old_agent.stored_api_key, new_agent.stored_api_key) = (None, None);
        old_agent != new_agent
    }
}

/// Whether a parse error is about a value that is not a number of the right size.
fn number_error(msg: &str) -> bool {
    msg.starts_with("invalid value")
        || msg.starts_with("invalid type")
        || msg.contains("out of range")
}

/// Makes serde's enum message read as "expected owner or anyone, found 'all'".
fn friendly_serde_message(msg: &str) -> String {
    let msg = msg.trim();
    if let Some(rest) = msg.strip_prefix("unknown variant `")
        && let Some((found, expected)) = rest.split_once("`, expected ")
    {
        let expected = expected.replace('`', "");
        return format!("expected {expected}, found '{found}'");
    }
    if let Some(rest) = msg.strip_prefix("unknown field `")
        && let Some((found, expected)) = rest.split_once('`')
        && let Some(near) = nearest_key(found, expected)
    {
        return format!("{msg}; did you mean `{near}`?");
    }
    msg.to_string()
}

/// The allowed key closest to a misspelt one, from serde's "expected one of `a`, `b`" list: at
/// most a third of the key's letters away (a typo, not a different key).
fn nearest_key<'a>(found: &str, expected: &'a str) -> Option<&'a str> {
    let limit = found.chars().count().div_ceil(3).max(1);
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|k| (strsim::levenshtein(found, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The user's home directory (`$HOME`), or `/` when unset.
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Where state lives when the file names no `state_dir`: `$XDG_STATE_HOME/scv-bridge`, else
/// `~/.local/state/scv-bridge`.
pub fn default_state_dir() -> PathBuf {
    state_dir_under(std::env::var_os("XDG_STATE_HOME"), &home_dir())
}

/// [`default_state_dir`] for a given `$XDG_STATE_HOME` and home; a relative or empty value is
/// ignored, as the XDG base directory specification asks.
fn state_dir_under(xdg_state_home: Option<std::ffi::OsString>, home: &Path) -> PathBuf {
    match xdg_state_home.map(PathBuf::from) {
        Some(base) if base.is_absolute() => base.join("scv-bridge"),
        _ => home.join(".local").join("state").join("scv-bridge"),
    }
}

/// Expands a leading `~/` to the home directory.
pub fn expand_tilde(p: &str) -> PathBuf {
    if p == "~" {
        return home_dir();
    }
    match p.strip_prefix("~/") {
        Some(rest) => home_dir().join(rest),
        None => PathBuf::from(p),
    }
}

/// The control socket path: configured, else `$XDG_RUNTIME_DIR/scv-bridge/daemon.sock`, else `<state_dir>/daemon.sock`.
pub fn socket_path(configured: Option<&str>, state_dir: &Path) -> PathBuf {
    if let Some(s) = configured {
        return expand_tilde(s);
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|p| !p.is_empty()) {
        Some(run) => PathBuf::from(run).join("scv-bridge").join("daemon.sock"),
        None => state_dir.join("daemon.sock"),
    }
}

/// A validation error located at `table.key` in `text`.
pub(crate) fn located(
    path: &Path,
    text: &str,
    table: &str,
    key: Option<&str>,
    message: String,
) -> ConfigError {
    let dotted = match key {
        Some(k) if table.is_empty() => k.to_string(),
        Some(k) => format!("{table}.{k}"),
        None => table.to_string(),
    };
    ConfigError {
        file: path.to_path_buf(),
        line: line_of_key(text, table, key),
        key: Some(dotted),
        message,
    }
}

impl<'de> Deserialize<'de> for AccountKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AccountKey::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "expected <channel>:<account> with channel {}, found '{s}'",
                Channel::ALL.map(Channel::as_str).join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod state_dir_tests {
    use super::*;

    #[test]
    fn xdg_state_home_is_honoured_when_absolute() {
        let home = Path::new("/home/me");
        assert_eq!(
            state_dir_under(Some("/srv/state".into()), home),
            Path::new("/srv/state/scv-bridge")
        );
        for ignored in [None, Some("".into()), Some("relative/state".into())] {
            assert_eq!(
                state_dir_under(ignored, home),
                Path::new("/home/me/.local/state/scv-bridge")
            );
        }
    }
}

#[cfg(test)]
mod range_tests;
#[cfg(test)]
mod tests;
