//! What the person picked in `init`, from flags or from the prompts: only what is set here is
//! written, so a re-run changes nothing else.

use crate::ids::Channel;
use crate::port::setup::Goes;
use crate::secrets::Secret;

/// The agent backend `init` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentChoice {
    /// Any OpenAI-compatible `/chat/completions` endpoint (Ollama, llama.cpp, hosted APIs).
    Openai,
    /// An SCV agent server (a command it starts, or the socket of a running one).
    Scv,
    /// An Agent Client Protocol agent run as a child process (codex-acp, claude-agent-acp,
    /// `gemini --experimental-acp`).
    Acp,
}

impl AgentChoice {
    /// The value as the file spells it (`[agent] backend`).
    pub fn as_str(self) -> &'static str {
        match self {
            AgentChoice::Openai => "openai",
            AgentChoice::Scv => "scv",
            AgentChoice::Acp => "acp",
        }
    }
}

/// How a mail account's IMAP connection is secured (`tls = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TlsChoice {
    /// TLS from the first byte (port 993).
    Implicit,
    /// Plain, upgraded with STARTTLS (port 143).
    Starttls,
    /// No TLS: loopback hosts only.
    None,
}

impl TlsChoice {
    /// The value as the file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsChoice::Implicit => "implicit",
            TlsChoice::Starttls => "starttls",
            TlsChoice::None => "none",
        }
    }
}

/// Where credentials are kept (`credentials = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CredentialsChoice {
    /// The OS keyring where one works, else 0600 files.
    Auto,
    /// The OS keyring only.
    Keyring,
    /// 0600 files under state_dir.
    File,
}

impl CredentialsChoice {
    /// The value as the file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialsChoice::Auto => "auto",
            CredentialsChoice::Keyring => "keyring",
            CredentialsChoice::File => "file",
        }
    }
}

/// The `[agent]` part of the plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentPlan {
    /// The backend, when picked.
    pub backend: Option<AgentChoice>,
    /// `base_url` (openai).
    pub base_url: Option<String>,
    /// `model` (openai).
    pub model: Option<String>,
    /// `command` (scv, acp).
    pub command: Option<String>,
    /// `args` (acp; scv keeps its default).
    pub args: Option<Vec<String>>,
    /// `socket` (scv).
    pub socket: Option<String>,
    /// `api_key_env`: the variable the agent reads its key from (acp), or the one holding the
    /// model key (openai).
    pub api_key_env: Option<String>,
    /// `timeout_seconds`: how long a turn may go without a word from the agent.
    pub timeout_seconds: Option<u64>,
    /// The API key to store (never written to the file).
    pub key: Option<Secret>,
}

/// A mail account to add or update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailPlan {
    /// The account name (`[mail.NAME]`).
    pub name: String,
    /// `imap_host`.
    pub imap_host: Option<String>,
    /// `imap_port` (default 993 implicit, 143 otherwise).
    pub imap_port: Option<u16>,
    /// `tls`.
    pub tls: Option<TlsChoice>,
    /// `tls_ca`: a PEM file of the CA that signed a private server's certificate.
    pub tls_ca: Option<String>,
    /// `username`.
    pub username: Option<String>,
    /// `report_to`: the chat that carries digests (`CHANNEL:ACCOUNT`); made `purpose = "mail"`
    /// only when the file does not have it yet.
    pub chat: Option<String>,
}

/// A chat account to have (`[<channel>.<name>]`) and what this run sets of it: its platform's
/// set-up answers (`Platform::setup`), each for its table or its login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatPlan {
    /// Its platform.
    pub channel: Channel,
    /// The account name.
    pub name: String,
    /// Keys of its table to set.
    pub table: Vec<(String, String)>,
    /// Flags for its login (never written to the file).
    pub login: Vec<(String, String)>,
}

impl ChatPlan {
    /// An account with nothing answered yet.
    pub fn new(channel: Channel, name: &str) -> Self {
        ChatPlan {
            channel,
            name: name.to_string(),
            table: Vec::new(),
            login: Vec::new(),
        }
    }

    /// Whether `key` of its set-up has an answer.
    pub fn answered(&self, key: &str) -> bool {
        self.table.iter().chain(&self.login).any(|(k, _)| k == key)
    }

    /// Takes `key = value` when its platform's set-up has that question (where it goes: the
    /// table or the login); whether it did.
    pub fn answer(&mut self, key: &str, value: String) -> bool {
        let setup = crate::adapters::platform(self.channel).setup();
        let Some(q) = setup.and_then(|s| s.questions.iter().find(|q| q.key == key)) else {
            return false;
        };
        let into = match q.goes {
            Goes::Table => &mut self.table,
            Goes::Login => &mut self.login,
        };
        into.retain(|(k, _)| k != key);
        into.push((key.to_string(), value));
        true
    }

    /// `channel:name`.
    pub fn key(&self) -> String {
        format!("{}:{}", self.channel, self.name)
    }
}

impl MailPlan {
    /// A mail account with nothing answered yet.
    pub fn named(name: String) -> Self {
        MailPlan {
            name,
            imap_host: None,
            imap_port: None,
            tls: None,
            tls_ca: None,
            username: None,
            chat: None,
        }
    }
}

/// Everything `init` changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// `state_dir`.
    pub state_dir: Option<String>,
    /// `credentials`.
    pub credentials: Option<CredentialsChoice>,
    /// The agent.
    pub agent: AgentPlan,
    /// Named agents to add beside it (`[agents.NAME]`), each with the same keys; their keys
    /// are never stored (the one stored key is the default agent's), only `api_key_env` named.
    pub named: Vec<(String, AgentPlan)>,
    /// Chat accounts to have, in order (the first is the chat this run sets up).
    pub chats: Vec<ChatPlan>,
    /// Mail accounts to have.
    pub mail: Vec<MailPlan>,
    /// The chat accounts' `workspace`: where the agent works and received photos and files are
    /// kept (without one, media never reach the agent).
    pub workspace: Option<String>,
    /// `notify`: where `scv-bridge confirm` asks (CHANNEL:ACCOUNT).
    pub notify: Option<String>,
    /// `timezone` (IANA name), for digest times.
    pub timezone: Option<String>,
    /// `[speech] base_url`: the speech server voice notes are transcribed with.
    pub speech_url: Option<String>,
    /// `[speech] model`.
    pub speech_model: Option<String>,
}

impl Plan {
    /// The chat this run sets up (its first), the default for the digests' chat and for
    /// `notify`.
    pub fn new_chat(&self) -> Option<String> {
        self.chats.first().map(ChatPlan::key)
    }

    /// Fills what was left open with the chat being set up: each mail account's digest chat,
    /// and `notify` when the file (`has_notify`) names none.
    pub fn default_to_new_chat(&mut self, has_notify: bool) {
        let Some(chat) = self.new_chat() else {
            return;
        };
        for m in self.mail.iter_mut().filter(|m| m.chat.is_none()) {
            m.chat = Some(chat.clone());
        }
        if self.notify.is_none() && !has_notify {
            self.notify = Some(chat);
        }
    }
}
