//! The wizard's questions (dialoguer, on stderr): only what the flags left open is asked, and
//! each default is what the file already says.

use dialoguer::{Confirm, Input, MultiSelect, Select};

use super::plan::{AgentChoice, MailPlan, Plan};
use crate::config::{AgentBackend, Channel, Config};
use crate::secrets::Secret;

/// The answers: the plan, and whether to log in and install the service.
pub struct Answers {
    /// What to write.
    pub plan: Plan,
    /// Run the new channels' logins now.
    pub login: bool,
    /// Install the user service.
    pub install_service: bool,
}

/// The wizard's words, in one place.
mod text {
    pub const AGENT: &str = "Which agent answers the chats?";
    pub const OPENAI: &str = "An OpenAI-compatible endpoint (Ollama, llama.cpp, a hosted API)";
    pub const SCV: &str = "An SCV agent server";
    pub const KEEP: &str = "Keep the agent as configured";
    pub const BASE_URL: &str = "Base URL (ends before /chat/completions)";
    pub const MODEL: &str = "Model name";
    pub const KEY: &str = "API key (empty: none, or keep the stored one)";
    pub const KEY_LOCAL: &str = "The endpoint is on this machine; does it need an API key?";
    pub const SCV_COMMAND: &str = "The command that starts the agent server";
    pub const CHANNELS: &str = "Which channels? (space selects, enter goes on)";
    pub const WECHAT_NAME: &str = "A name for the WeChat account";
    pub const FEISHU_NAME: &str = "A name for the Feishu account";
    pub const APP_ID: &str = "The Feishu app ID (cli_...; empty: log in later)";
    pub const MAIL_NAME: &str = "A name for the mail account";
    pub const IMAP_HOST: &str = "IMAP server";
    pub const USERNAME: &str = "Mail login";
    pub const MAIL_CHAT: &str =
        "The chat for mail digests (CHANNEL:ACCOUNT; a new one carries only digests)";
    pub const LOGIN: &str = "Log in to the new channels now?";
    pub const SERVICE: &str = "Install and start the systemd user service?";
}

fn err(e: dialoguer::Error) -> String {
    format!("the question was not answered: {e}")
}

/// Asks what `plan` leaves open; `current` is the file as it loads now, if it does.
pub fn fill(mut plan: Plan, current: Option<Config>) -> Result<Answers, String> {
    let agent = current
        .as_ref()
        .map(|c| c.agent.clone())
        .unwrap_or_default();
    if plan.agent.backend.is_none() {
        let mut items = vec![text::OPENAI, text::SCV];
        if current.is_some() {
            items.push(text::KEEP);
        }
        let pick = Select::new()
            .with_prompt(text::AGENT)
            .items(&items)
            // A re-run keeps what is there unless the person picks otherwise.
            .default(match (current.is_some(), agent.backend) {
                (true, _) => 2,
                (false, AgentBackend::Scv) => 1,
                (false, _) => 0,
            })
            .interact()
            .map_err(err)?;
        plan.agent.backend = match pick {
            0 => Some(AgentChoice::Openai),
            1 => Some(AgentChoice::Scv),
            _ => None,
        };
    }
    match plan.agent.backend {
        Some(AgentChoice::Openai) => {
            if plan.agent.base_url.is_none() {
                let default = agent
                    .base_url
                    .clone()
                    .unwrap_or_else(|| "http://127.0.0.1:11434/v1".into());
                plan.agent.base_url = Some(input(text::BASE_URL, &default)?);
            }
            if plan.agent.model.is_none() {
                let default = agent.model.clone().unwrap_or_else(|| "qwen2.5:7b".into());
                plan.agent.model = Some(input(text::MODEL, &default)?);
            }
            let base = plan.agent.base_url.clone().unwrap_or_default();
            let wants_key = !crate::agent::key::is_local(&base)
                || Confirm::new()
                    .with_prompt(text::KEY_LOCAL)
                    .default(false)
                    .interact()
                    .map_err(err)?;
            if wants_key && plan.agent.key.is_none() {
                let k = dialoguer::Password::new()
                    .with_prompt(text::KEY)
                    .allow_empty_password(true)
                    .interact()
                    .map_err(err)?;
                let k = k.trim();
                if !k.is_empty() {
                    plan.agent.key = Some(Secret::new(k));
                }
            }
        }
        Some(AgentChoice::Scv) if plan.agent.command.is_none() && plan.agent.socket.is_none() => {
            let default = agent.command.clone().unwrap_or_else(|| "scv".into());
            plan.agent.command = Some(input(text::SCV_COMMAND, &default)?);
        }
        Some(AgentChoice::Scv) | None => {}
    }

    let has = |ch: Channel| {
        current
            .as_ref()
            .is_some_and(|c| c.accounts.keys().any(|k| k.channel == ch))
    };
    let picked_by_flags =
        !plan.wechat.is_empty() || !plan.feishu.is_empty() || !plan.mail.is_empty();
    let mut new_accounts = picked_by_flags;
    if !picked_by_flags {
        let picks = MultiSelect::new()
            .with_prompt(text::CHANNELS)
            .items(["WeChat", "Feishu", "Mail"])
            .defaults(&[
                has(Channel::Wechat) || current.is_none(),
                has(Channel::Feishu),
                has(Channel::Mail),
            ])
            .interact()
            .map_err(err)?;
        // An account the file already has is kept as it is; only a new one is added.
        if picks.contains(&0) && !has(Channel::Wechat) {
            plan.wechat.push(input(text::WECHAT_NAME, "phone")?);
            new_accounts = true;
        }
        if picks.contains(&1) && !has(Channel::Feishu) {
            plan.feishu.push(input(text::FEISHU_NAME, "work")?);
            new_accounts = true;
        }
        if picks.contains(&2) && !has(Channel::Mail) {
            let name = input(text::MAIL_NAME, "personal")?;
            let imap_host = input(text::IMAP_HOST, "imap.example.com")?;
            let username = input(text::USERNAME, "me@example.com")?;
            let chat = input(text::MAIL_CHAT, "wechat:inbox")?;
            plan.mail.push(MailPlan {
                name,
                imap_host: Some(imap_host),
                username: Some(username),
                chat: Some(chat),
            });
            new_accounts = true;
        }
    }
    if !plan.feishu.is_empty() && plan.feishu_app_id.is_none() {
        let id: String = Input::new()
            .with_prompt(text::APP_ID)
            .allow_empty(true)
            .interact_text()
            .map_err(err)?;
        plan.feishu_app_id = Some(id.trim().to_string()).filter(|s| !s.is_empty());
    }
    let login = new_accounts
        && Confirm::new()
            .with_prompt(text::LOGIN)
            .default(true)
            .interact()
            .map_err(err)?;
    let install_service = cfg!(target_os = "linux")
        && Confirm::new()
            .with_prompt(text::SERVICE)
            .default(false)
            .interact()
            .map_err(err)?;
    Ok(Answers {
        plan,
        login,
        install_service,
    })
}

fn input(prompt: &str, default: &str) -> Result<String, String> {
    let s: String = Input::new()
        .with_prompt(prompt)
        .default(default.to_string())
        .interact_text()
        .map_err(err)?;
    Ok(s.trim().to_string())
}
