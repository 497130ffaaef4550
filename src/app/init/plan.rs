//! What the person picked in `init`, from flags or from the prompts: only what is set here is
//! written, so a re-run changes nothing else.

use crate::secrets::Secret;

/// The agent backend `init` offers. ACP is not offered: the configuration does not accept it yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentChoice {
    /// Any OpenAI-compatible `/chat/completions` endpoint (Ollama, llama.cpp, hosted APIs).
    Openai,
    /// An SCV agent server (a command it starts, or the socket of a running one).
    Scv,
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
    /// `command` (scv).
    pub command: Option<String>,
    /// `socket` (scv).
    pub socket: Option<String>,
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
    /// `username`.
    pub username: Option<String>,
    /// `report_to`: the chat that carries digests (`CHANNEL:ACCOUNT`); made `purpose = "mail"`
    /// only when the file does not have it yet.
    pub chat: Option<String>,
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
    /// WeChat accounts to have (`[wechat.NAME]`).
    pub wechat: Vec<String>,
    /// Their iLink endpoint (`base_url`), also the one their login uses; `None`: WeChat's default.
    pub wechat_base_url: Option<String>,
    /// Feishu accounts to have (`[feishu.NAME]`).
    pub feishu: Vec<String>,
    /// The Feishu app ID for the login (not a configuration key).
    pub feishu_app_id: Option<String>,
    /// Mail accounts to have.
    pub mail: Vec<MailPlan>,
}
