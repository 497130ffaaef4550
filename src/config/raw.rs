//! The configuration as written (serde, unknown keys refused) and its validation into [`Config`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::platform_split::Written;
use super::{
    AccountKey, AccountSpec, Channel, ChannelSettings, Config, ConfigError, expand_tilde, located,
    socket_path, valid_account_name,
};
use crate::protocol::{Purpose, RemoteTools, Senders};
use crate::words::Language;

/// Where credentials are kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialsMode {
    /// The OS keyring where one works, else files (one info line says so).
    #[default]
    Auto,
    /// The OS keyring only.
    Keyring,
    /// 0600 files under `<state_dir>/credentials/`.
    File,
}

/// Which agent backend answers chats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentBackend {
    /// An OpenAI-compatible chat completions endpoint.
    #[default]
    Openai,
    /// An SCV agent server over JSON lines.
    Scv,
    /// An Agent Client Protocol agent (codex-acp, claude-agent-acp, `gemini --experimental-acp`).
    Acp,
}

/// The `[agent]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Which backend.
    #[serde(default)]
    pub backend: AgentBackend,
    /// The OpenAI-compatible base URL (`.../v1`).
    pub base_url: Option<String>,
    /// The model name.
    pub model: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// The key `scv-bridge login agent` stored; never in the file (the daemon fills it in from the
    /// credential store at start).
    #[serde(skip)]
    pub stored_api_key: Option<crate::secret::Secret>,
    /// The system prompt for the `openai` backend.
    pub system_prompt: Option<String>,
    /// The SCV agent server command (`scv`), run with `args`.
    pub command: Option<String>,
    /// Arguments of `command` (default `["server", "--stdio"]`).
    pub args: Option<Vec<String>>,
    /// Extra environment variables for the `acp` agent process (never API keys: those come from
    /// the daemon's environment or `scv-bridge login agent` with `api_key_env` naming the variable).
    pub env: Option<BTreeMap<String, String>>,
    /// A Unix socket of a running SCV agent server, instead of `command`.
    pub socket: Option<String>,
    /// Seconds to wait for an answer before giving up on a turn.
    pub timeout_seconds: Option<u64>,
    /// The most bytes of one chat message handed to the agent; longer ones are cut and the
    /// sender is told. 1024 to 4194304 (4 MiB); default 32768.
    pub max_message_bytes: Option<u64>,
    /// The most text of one answer put into the chat, in KiB (4 to 65536; default 64); the rest
    /// goes into a file in the workspace, sent after the answer.
    pub max_answer_kib: Option<u64>,
    /// Whether the `openai` model sees images: `true` sends photos as image parts, `false` as a
    /// line with the saved path; unset tries images and remembers a refusal.
    pub vision: Option<bool>,
    /// The largest image the `openai` model takes inline, in MB (1 to 100; default 20); a
    /// larger JPEG or PNG is made smaller to fit.
    pub max_image_mb: Option<u64>,
    /// The owner's explicit yes to an `scv` or `acp` agent answering strangers as some
    /// account's `stranger_agent` (their turns still go without tools as the policy says).
    pub stranger_tools: Option<bool>,
    /// Whose history this agent keeps: `None` for `[agent]` (the keys it always had), the name
    /// for `[agents.NAME]`, so two agents never share a chat's history. Set at load.
    #[serde(skip)]
    pub scope: Option<String>,
}

/// The `[media]` table: how much of what people send is kept in the workspaces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaConfig {
    /// The largest item downloaded, in MB (1 to 1024; default 100).
    pub max_item_mb: Option<u64>,
    /// The most the inbox of one workspace may hold, in MB (1 to 1048576; default 2048).
    pub max_workspace_mb: Option<u64>,
    /// Which transcript of a voice note the agent reads: `platform` (default), `speech`, `both`.
    pub voice_text: Option<super::VoiceText>,
}

/// What one account may keep of received media, in bytes (from `[media]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaLimits {
    /// The largest item downloaded.
    pub max_item_bytes: u64,
    /// The most the workspace's inbox may hold.
    pub max_workspace_bytes: u64,
    /// Whether `max_item_bytes` comes from the account's own `media` table (notes name it).
    pub own_item_cap: bool,
    /// Whether `max_workspace_bytes` comes from the account's own `media` table.
    pub own_workspace_cap: bool,
    /// Which transcript of a voice note the agent reads. It sits with the caps because it is
    /// the one media choice every account has and the pipeline already holds these limits:
    /// no platform's settings and no new field of every account are needed for it.
    pub voice_text: super::VoiceText,
}

impl Default for MediaLimits {
    fn default() -> Self {
        MediaLimits::from(&MediaConfig::default())
    }
}

impl MediaLimits {
    /// The global limits with each cap the account's own table sets instead.
    pub fn for_account(global: &MediaConfig, account: Option<&MediaConfig>) -> Self {
        let own = account.cloned().unwrap_or_default();
        MediaLimits {
            own_item_cap: own.max_item_mb.is_some(),
            own_workspace_cap: own.max_workspace_mb.is_some(),
            ..MediaLimits::from(&MediaConfig {
                max_item_mb: own.max_item_mb.or(global.max_item_mb),
                max_workspace_mb: own.max_workspace_mb.or(global.max_workspace_mb),
                voice_text: own.voice_text.or(global.voice_text),
            })
        }
    }

    /// Where the item cap is set, as a note names it (`[media] max_item_mb`,
    /// `[wechat.phone.media] max_item_mb`) for `account` (`wechat:phone`).
    pub fn item_key(&self, account: &str) -> String {
        cap_key(self.own_item_cap, account, "max_item_mb")
    }

    /// Where the workspace cap is set, as [`MediaLimits::item_key`].
    pub fn workspace_key(&self, account: &str) -> String {
        cap_key(self.own_workspace_cap, account, "max_workspace_mb")
    }
}

fn cap_key(own: bool, account: &str, key: &str) -> String {
    if own {
        format!("[{}.media] {key}", account.replace(':', "."))
    } else {
        format!("[media] {key}")
    }
}

impl From<&MediaConfig> for MediaLimits {
    fn from(c: &MediaConfig) -> Self {
        const MB: u64 = 1024 * 1024;
        // The ranges were checked at load; the product cannot overflow a u64.
        MediaLimits {
            max_item_bytes: c.max_item_mb.unwrap_or(100) * MB,
            max_workspace_bytes: c.max_workspace_mb.unwrap_or(2048) * MB,
            own_item_cap: false,
            own_workspace_cap: false,
            voice_text: c.voice_text.unwrap_or_default(),
        }
    }
}

/// How the owner's tool calls are approved on an account with `remote_tools = "owner"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approvals {
    /// Every tool call of the owner's session runs without asking (the default).
    #[default]
    Auto,
    /// Each tool call the agent asks approval for becomes a yes/no question to the owner in the chat.
    Ask,
    /// Like `ask`, and when the agent offers it the question also offers "always" (`A <code>`):
    /// calls like it then run without asking for the rest of the agent's session.
    AskOrAlways,
}

impl Approvals {
    /// Whether the owner is asked before a tool runs (`ask` or `ask_or_always`).
    pub fn asks(self) -> bool {
        matches!(self, Approvals::Ask | Approvals::AskOrAlways)
    }
}

/// How a mailbox connection is secured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MailTls {
    /// TLS from the first byte (port 993 / 465).
    #[default]
    Implicit,
    /// Plain, upgraded with STARTTLS.
    Starttls,
    /// No TLS: loopback hosts only.
    None,
}

/// Declares a channel's settings struct and the raw table that adds the keys every account shares.
macro_rules! account_table {
    ($(#[$sm:meta])* $settings:ident, $raw:ident { $($(#[$m:meta])* $f:ident : $t:ty),* $(,)? }) => {
        $(#[$sm])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
        pub struct $settings {
            $($(#[$m])* pub $f: $t,)*
        }

        /// The table as written: shared keys plus the channel's own.
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct $raw {
            enabled: Option<bool>,
            workspace: Option<String>,
            senders: Option<Senders>,
            remote_tools: Option<RemoteTools>,
            approvals: Option<Approvals>,
            purpose: Option<Purpose>,
            language: Option<Language>,
            media: Option<MediaConfig>,
            $($(#[$m])* $f: $t,)*
        }

        impl $raw {
            /// Splits the shared keys from the channel's settings.
            fn split(self) -> (Shared, $settings) {
                let shared = Shared {
                    enabled: self.enabled,
                    workspace: self.workspace,
                    senders: self.senders,
                    remote_tools: self.remote_tools,
                    approvals: self.approvals,
                    purpose: self.purpose,
                    language: self.language,
                    media: self.media,
                    agent: None,
                    stranger_agent: None,
                };
                (shared, $settings { $($f: self.$f,)* })
            }
        }
    };
}

/// One account table of a chat platform as read.
pub(super) struct PlatformAccount {
    /// Its platform.
    pub channel: Channel,
    /// Its name (`[<channel>.<name>]`).
    pub name: String,
    /// The keys every account may set.
    pub shared: Shared,
    /// The platform's own keys.
    pub table: super::PlatformTable,
}

impl PlatformAccount {
    /// Reads the shared keys of a table its platform has checked.
    pub(super) fn read(written: Written<'_>) -> Result<Self, toml::de::Error> {
        let shared = Shared::deserialize(toml::de::ValueDeserializer::from(written.value))?;
        Ok(PlatformAccount {
            channel: written.channel,
            name: written.name,
            shared,
            table: written.table,
        })
    }
}

/// The names of [`Shared`]'s keys, taken out of a platform's table before it keeps the rest.
pub(super) const SHARED_KEYS: [&str; 10] = [
    "agent",
    "stranger_agent",
    "enabled",
    "workspace",
    "senders",
    "remote_tools",
    "approvals",
    "purpose",
    "language",
    "media",
];

/// The keys every account table may set (a platform's table may hold others: its own).
#[derive(Debug, Deserialize)]
pub(super) struct Shared {
    enabled: Option<bool>,
    workspace: Option<String>,
    senders: Option<Senders>,
    remote_tools: Option<RemoteTools>,
    approvals: Option<Approvals>,
    purpose: Option<Purpose>,
    language: Option<Language>,
    /// The account's own `[<channel>.<account>.media]` caps, over the global `[media]`.
    media: Option<MediaConfig>,
    /// The agent its chats talk to, and the one strangers do (`config/agents.rs`).
    agent: Option<String>,
    stranger_agent: Option<String>,
}

account_table!(
    /// Mail-only settings.
    MailSettings, RawMail {
    /// The IMAP server.
    imap_host: String,
    /// The IMAP port (default 993 implicit, 143 otherwise).
    imap_port: Option<u16>,
    /// How IMAP (and by default SMTP) is secured.
    #[serde(default)]
    tls: MailTls,
    /// A PEM file of extra CA certificates to trust.
    tls_ca: Option<String>,
    /// The login name.
    username: String,
    /// The mailbox to watch (default INBOX).
    mailbox: Option<String>,
    /// The SMTP server for replies (default: none, replies disabled).
    smtp_host: Option<String>,
    /// The SMTP port.
    smtp_port: Option<u16>,
    /// How SMTP is secured (default: like `tls`).
    smtp_tls: Option<MailTls>,
    /// Where digests go (`<channel>:<account>`): a `purpose = "mail"` chat or an ordinary one.
    report_to: Option<AccountKey>,
    /// Model tokens a day.
    token_budget: Option<u64>,
    /// Mails per triage call (default 10).
    triage_batch: Option<u32>,
    /// Triage calls at once (default 4).
    triage_parallel: Option<u32>,
    /// Minutes between digests.
    digest_interval_minutes: Option<u64>,
    /// At most this many digests a day.
    max_digests_per_day: Option<u32>,
    /// Days of existing mail to triage on first start (default 0: start at new mail).
    backfill_days: Option<u32>,
    /// Set the `$ScvTriaged` keyword on mail once it is decided, where the server allows new
    /// keywords (default false: the mailbox is opened read-only).
    mark_triaged: Option<bool>,
});

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    state_dir: Option<String>,
    socket: Option<String>,
    #[serde(default)]
    credentials: CredentialsMode,
    notify: Option<AccountKey>,
    timezone: Option<String>,
    metrics_listen: Option<String>,
    console_listen: Option<String>,
    language: Option<Language>,
    #[serde(default)]
    agent: AgentConfig,
    #[serde(default)]
    agents: BTreeMap<String, AgentConfig>,
    #[serde(default)]
    chats: super::ChatsConfig,
    #[serde(default)]
    media: MediaConfig,
    #[serde(default)]
    speech: super::SpeechConfig,
    #[serde(default)]
    mail: BTreeMap<String, RawMail>,
    #[serde(default)]
    owner: super::OwnerConfig,
}

impl RawConfig {
    /// Checks what serde cannot and builds the [`Config`].
    pub(super) fn validate(
        mut self,
        path: &Path,
        text: &str,
        platforms: Vec<PlatformAccount>,
    ) -> Result<Config, ConfigError> {
        let err =
            |table: &str, key: Option<&str>, msg: String| located(path, text, table, key, msg);
        let state_dir = self
            .state_dir
            .as_deref()
            .map(expand_tilde)
            .unwrap_or_else(super::default_state_dir);
        let socket = socket_path(self.socket.as_deref(), &state_dir);
        let timezone = match &self.timezone {
            None => None,
            Some(tz) => Some(tz.parse::<chrono_tz::Tz>().map_err(|_| {
                err(
                    "",
                    Some("timezone"),
                    format!("expected an IANA time zone such as Asia/Shanghai, found '{tz}'"),
                )
            })?),
        };
        let metrics_listen = match &self.metrics_listen {
            None => None,
            Some(addr) => Some(addr.parse::<std::net::SocketAddr>().map_err(|_| {
                err(
                    "",
                    Some("metrics_listen"),
                    format!("expected an address such as 127.0.0.1:9464, found '{addr}'"),
                )
            })?),
        };
        let console_listen = match self.console_listen.as_deref() {
            None => Some(super::DEFAULT_CONSOLE_LISTEN),
            Some("off") => None,
            Some(addr) => Some(addr.parse::<std::net::SocketAddr>().map_err(|_| {
                err(
                    "",
                    Some("console_listen"),
                    format!("expected an address such as 127.0.0.1:7860, or off, found '{addr}'"),
                )
            })?),
        };
        super::agents::check_named(&mut self.agents).map_err(|(t, k, m)| err(&t, k, m))?;
        let (mut accounts, mut choices) = (BTreeMap::new(), BTreeMap::new());
        for PlatformAccount {
            channel,
            name,
            shared,
            table: own,
        } in platforms
        {
            let table = format!("{channel}.{name}");
            check_name(&name).map_err(|m| err(&table, None, m))?;
            let spec = AccountSpec {
                key: AccountKey::new(channel, &name),
                enabled: shared.enabled.unwrap_or(true),
                workspace: shared.workspace.as_deref().map(expand_tilde),
                senders: shared.senders.unwrap_or_default(),
                remote_tools: shared.remote_tools.unwrap_or_default(),
                approvals: shared.approvals.unwrap_or_default(),
                purpose: shared.purpose.unwrap_or_default(),
                language: shared.language.or(self.language).unwrap_or_default(),
                media: MediaLimits::for_account(&self.media, shared.media.as_ref()),
                settings: ChannelSettings::Own(own),
            };
            if spec.purpose == Purpose::Mail && spec.remote_tools == RemoteTools::Owner {
                let msg = "a purpose = \"mail\" chat has no tools; expected none".to_string();
                return Err(err(&table, Some("remote_tools"), msg));
            }
            if spec.approvals.asks() && spec.remote_tools != RemoteTools::Owner {
                let msg = "approvals = \"ask\" asks the owner before a tool runs, but this account gives nobody tools; set remote_tools = \"owner\" or remove approvals".to_string();
                return Err(err(&table, Some("approvals"), msg));
            }
            let raw = (shared.agent, shared.stranger_agent, spec.senders);
            let known = (&self.agent, &self.agents, &self.chats);
            let choice = super::agents::choose(&table, raw, known);
            choices.insert(spec.key.clone(), choice.map_err(|(t, k, m)| err(&t, k, m))?);
            accounts.insert(spec.key.clone(), spec);
        }
        for (name, raw) in self.mail {
            let table = format!("mail.{name}");
            check_name(&name).map_err(|m| err(&table, None, m))?;
            let (shared, settings) = raw.split();
            for (key, set) in [
                ("workspace", shared.workspace.is_some()),
                ("senders", shared.senders.is_some()),
                ("remote_tools", shared.remote_tools.is_some()),
                ("approvals", shared.approvals.is_some()),
                ("purpose", shared.purpose.is_some()),
                ("media", shared.media.is_some()),
            ] {
                if set {
                    let msg = "mail accounts have no such setting; their reports go to report_to"
                        .to_string();
                    return Err(err(&table, Some(key), msg));
                }
            }
            super::mail_check::check_mail(&settings).map_err(|(k, m)| err(&table, Some(k), m))?;
            let spec = AccountSpec {
                key: AccountKey::new(Channel::Mail, &name),
                enabled: shared.enabled.unwrap_or(true),
                workspace: None,
                senders: Senders::Owner,
                remote_tools: RemoteTools::None,
                approvals: Approvals::Auto,
                purpose: Purpose::Chat,
                language: shared.language.or(self.language).unwrap_or_default(),
                media: MediaLimits::from(&self.media),
                settings: ChannelSettings::Mail(settings),
            };
            accounts.insert(spec.key.clone(), spec);
        }
        for spec in accounts.values() {
            if let ChannelSettings::Mail(m) = &spec.settings
                && let Some(to) = &m.report_to
            {
                let ok = accounts
                    .get(to)
                    .is_some_and(|t| t.key.channel != Channel::Mail);
                if !ok {
                    return Err(err(
                        &spec.key.to_string().replace(':', "."),
                        Some("report_to"),
                        format!(
                            "expected a configured {} account (a purpose = \"mail\" chat or an ordinary one), found '{to}'",
                            chat_channels()
                        ),
                    ));
                }
            }
        }
        if let Some(n) = &self.notify
            && accounts
                .get(n)
                .is_none_or(|a| a.key.channel == Channel::Mail)
        {
            return Err(err(
                "",
                Some("notify"),
                format!(
                    "expected a configured {} account, found '{n}'",
                    chat_channels()
                ),
            ));
        }
        if let Some((key, msg)) = self.owner.check(&accounts) {
            return Err(err("owner", Some(key), msg));
        }
        Ok(Config {
            path: path.to_path_buf(),
            state_dir,
            socket,
            credentials: self.credentials,
            notify: self.notify,
            timezone,
            metrics_listen,
            console_listen,
            agent: self.agent,
            speech: self.speech,
            agents: self.agents,
            chats: self.chats,
            choices,
            owner: self.owner,
            accounts,
        })
    }
}

/// The chat channels, for a message: "wechat, feishu or telegram".
fn chat_channels() -> String {
    let names: Vec<&str> = Channel::ALL
        .into_iter()
        .filter(|c| super::schema(*c).is_some())
        .map(Channel::as_str)
        .collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if valid_account_name(name) {
        Ok(())
    } else {
        Err(format!(
            "account names use letters, digits, '-' and '_' (at most 64), found '{name}'"
        ))
    }
}
