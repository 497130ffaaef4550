//! The wizard's questions (dialoguer, on stderr) in the reader's language
//! ([`words::wizard`](crate::words::wizard)): only what the flags left open is asked, and each
//! default is what the file already says, else what a first set-up most likely wants.

use dialoguer::{Confirm, Input, MultiSelect, Select};

use crate::config::{AgentBackend, AgentConfig, Channel, Config};
use crate::port::setup::Question;
use crate::secrets::Secret;
use crate::setup::{AgentChoice, AgentPlan, ChatPlan, MailPlan, Plan, TlsChoice};
use crate::words::{Lang, Wizard, wizard};

/// The answers: the plan, and whether to log in and install the service.
pub struct Answers {
    /// What to write.
    pub plan: Plan,
    /// Run the new channels' logins now.
    pub login: bool,
    /// Install the user service.
    pub install_service: bool,
}

/// One wizard run: its words and the file as it loads now, if it does.
struct Asker {
    w: &'static Wizard,
    lang: Lang,
    current: Option<Config>,
}

/// Asks what `plan` leaves open, in `lang`; `current` is the file as it loads now, if it does.
pub fn fill(mut plan: Plan, current: Option<Config>, lang: Lang) -> Result<Answers, String> {
    let a = Asker {
        w: wizard(lang),
        lang,
        current,
    };
    a.agent(&mut plan)?;
    a.named_agent(&mut plan)?;
    let new_accounts = a.channels(&mut plan)?;
    a.shared(&mut plan, new_accounts)?;
    let login = new_accounts && a.confirm(a.w.login, true)?;
    let install_service = cfg!(target_os = "linux") && a.confirm(a.w.service, false)?;
    Ok(Answers {
        plan,
        login,
        install_service,
    })
}

impl Asker {
    fn configured_agent(&self) -> AgentConfig {
        self.current
            .as_ref()
            .map(|c| c.agent.clone())
            .unwrap_or_default()
    }

    fn agent(&self, plan: &mut Plan) -> Result<(), String> {
        let agent = self.configured_agent();
        if plan.agent.backend.is_none() {
            let mut items = vec![self.w.openai, self.w.scv, self.w.acp];
            if self.current.is_some() {
                items.push(self.w.keep);
            }
            // A re-run keeps what is there unless the person picks otherwise.
            let default = match (self.current.is_some(), agent.backend) {
                (true, _) => 3,
                (false, AgentBackend::Scv) => 1,
                (false, AgentBackend::Acp) => 2,
                (false, _) => 0,
            };
            plan.agent.backend = match self.select(self.w.agent, &items, default)? {
                0 => Some(AgentChoice::Openai),
                1 => Some(AgentChoice::Scv),
                2 => Some(AgentChoice::Acp),
                _ => None,
            };
        }
        match plan.agent.backend {
            Some(AgentChoice::Openai) => self.openai(plan, &agent),
            Some(AgentChoice::Scv)
                if plan.agent.command.is_none() && plan.agent.socket.is_none() =>
            {
                let default = agent.command.clone().unwrap_or_else(|| "scv".into());
                plan.agent.command = Some(self.input(self.w.scv_command, &default)?);
                Ok(())
            }
            Some(AgentChoice::Acp) if plan.agent.command.is_none() => self.acp(plan),
            Some(AgentChoice::Scv | AgentChoice::Acp) | None => Ok(()),
        }
    }

    /// One more agent after the first, when the person wants one: its name and backend, then
    /// the same questions as the first's, less the key to store (the one stored key is the
    /// first agent's; this one reads its variable from the daemon's environment).
    fn named_agent(&self, plan: &mut Plan) -> Result<(), String> {
        if !plan.named.is_empty() || !self.confirm(self.w.another_agent, false)? {
            return Ok(());
        }
        let name = loop {
            let name = self.input(self.w.agent_name, "claude")?;
            let free = !self
                .current
                .as_ref()
                .is_some_and(|c| c.agents.contains_key(&name));
            if crate::ids::valid_account_name(&name) && name != crate::config::DEFAULT_AGENT && free
            {
                break name;
            }
        };
        let items = [self.w.openai, self.w.scv, self.w.acp];
        let mut named = Plan::default();
        named.agent.backend = match self.select(self.w.named_agent, &items, 2)? {
            0 => Some(AgentChoice::Openai),
            1 => Some(AgentChoice::Scv),
            _ => Some(AgentChoice::Acp),
        };
        // No key is asked: the one stored key is the first agent's.
        named.agent.key = Some(Secret::new(String::new()));
        self.agent(&mut named)?;
        let agent = AgentPlan {
            key: None,
            ..named.agent
        };
        plan.named.push((name, agent));
        Ok(())
    }

    fn openai(&self, plan: &mut Plan, agent: &AgentConfig) -> Result<(), String> {
        if plan.agent.base_url.is_none() {
            let default = agent
                .base_url
                .clone()
                .unwrap_or_else(|| "http://127.0.0.1:11434/v1".into());
            plan.agent.base_url = Some(self.input(self.w.base_url, &default)?);
        }
        if plan.agent.model.is_none() {
            let default = agent.model.clone().unwrap_or_else(|| "qwen2.5:7b".into());
            plan.agent.model = Some(self.input(self.w.model, &default)?);
        }
        let base = plan.agent.base_url.clone().unwrap_or_default();
        let wants_key =
            !crate::agent::key::is_local(&base) || self.confirm(self.w.key_local, false)?;
        if wants_key && plan.agent.key.is_none() {
            plan.agent.key = self.secret(self.w.key)?;
        }
        Ok(())
    }

    /// The coding agent: its command, the variable its key is read from, and the key to store.
    fn acp(&self, plan: &mut Plan) -> Result<(), String> {
        let items = [self.w.acp_codex, self.w.acp_claude, self.w.acp_gemini];
        let (command, args, var) = match self.select(self.w.acp_agent, &items, 0)? {
            0 => ("codex-acp", None, "OPENAI_API_KEY"),
            1 => ("claude-agent-acp", None, "ANTHROPIC_API_KEY"),
            _ => (
                "gemini",
                Some(vec!["--experimental-acp".to_string()]),
                "GEMINI_API_KEY",
            ),
        };
        plan.agent.command = Some(command.into());
        plan.agent.args = plan.agent.args.take().or(args);
        let var = plan
            .agent
            .api_key_env
            .get_or_insert_with(|| var.into())
            .clone();
        if plan.agent.key.is_none() {
            plan.agent.key = self.secret(&format!("{} ({var})", self.w.acp_key))?;
        }
        Ok(())
    }

    fn has(&self, ch: Channel) -> bool {
        self.current
            .as_ref()
            .is_some_and(|c| c.accounts.keys().any(|k| k.channel == ch))
    }

    /// The channels to add; whether any account is new.
    fn channels(&self, plan: &mut Plan) -> Result<bool, String> {
        if !plan.chats.is_empty() || !plan.mail.is_empty() {
            self.channel_details(plan)?;
            return Ok(true);
        }
        let labels: Vec<&str> = Channel::ALL
            .iter()
            .map(|c| crate::adapters::platform(*c).label())
            .collect();
        // WeChat (the first) is offered on a new file; on an old one, what it already has.
        let defaults: Vec<bool> = Channel::ALL
            .iter()
            .enumerate()
            .map(|(i, c)| self.has(*c) || (i == 0 && self.current.is_none()))
            .collect();
        let picks = MultiSelect::new()
            .with_prompt(self.w.channels)
            .items(&labels)
            .defaults(&defaults)
            .interact()
            .map_err(|e| self.err(e))?;
        // An account the file already has is kept as it is; only a new one is added.
        for c in picks.into_iter().map(|i| Channel::ALL[i]) {
            if self.has(c) {
                continue;
            }
            match crate::adapters::platform(c).setup() {
                Some(setup) => {
                    let name = self.input(setup.name.get(self.lang), setup.default_name)?;
                    plan.chats.push(ChatPlan::new(c, &name));
                }
                None => {
                    let name = self.input(self.w.mail_name, "personal")?;
                    plan.mail.push(MailPlan::named(name));
                }
            }
        }
        self.channel_details(plan)?;
        Ok(!plan.chats.is_empty() || !plan.mail.is_empty())
    }

    /// What each new account needs: its platform's set-up questions not answered by a flag,
    /// and for mail the server and its digests' chat.
    fn channel_details(&self, plan: &mut Plan) -> Result<(), String> {
        for chat in &mut plan.chats {
            let Some(setup) = crate::adapters::platform(chat.channel).setup() else {
                continue;
            };
            for q in setup.questions {
                if chat.answered(q.key) {
                    continue;
                }
                if let Some(value) = self.question(q)? {
                    chat.answer(q.key, value);
                }
            }
        }
        let new_chat = plan.new_chat();
        for m in &mut plan.mail {
            self.mail(m, new_chat.as_deref())?;
        }
        Ok(())
    }

    /// One set-up question: a pick, or a typed answer (`None`: left empty, or the default kept).
    fn question(&self, q: &Question) -> Result<Option<String>, String> {
        let prompt = q.prompt.get(self.lang);
        if !q.choices.is_empty() {
            let labels: Vec<&str> = q.choices.iter().map(|c| c.label.get(self.lang)).collect();
            let pick = self.select(prompt, &labels, 0)?;
            return Ok(Some(q.choices[pick].value.to_string()));
        }
        match q.default {
            Some(d) => Ok(Some(self.input(prompt, d)?).filter(|v| v != d)),
            None => self.optional(prompt),
        }
    }

    fn mail(&self, m: &mut MailPlan, new_chat: Option<&str>) -> Result<(), String> {
        if m.imap_host.is_none() {
            m.imap_host = Some(self.input(self.w.imap_host, "imap.example.com")?);
        }
        if m.tls.is_none() {
            let items = [self.w.tls_implicit, self.w.tls_starttls, self.w.tls_none];
            m.tls = Some(match self.select(self.w.tls, &items, 0)? {
                0 => TlsChoice::Implicit,
                1 => TlsChoice::Starttls,
                _ => TlsChoice::None,
            });
        }
        if m.imap_port.is_none() {
            let default = if m.tls == Some(TlsChoice::Implicit) {
                993
            } else {
                143
            };
            let port = self.input(self.w.imap_port, &default.to_string())?;
            let port: u16 = port
                .parse()
                .map_err(|_| format!("{}: '{port}'", self.w.imap_port))?;
            m.imap_port = Some(port).filter(|p| *p != default);
        }
        if m.tls_ca.is_none() && m.tls != Some(TlsChoice::None) {
            m.tls_ca = self.optional(self.w.tls_ca)?;
        }
        if m.username.is_none() {
            m.username = Some(self.input(self.w.username, "me@example.com")?);
        }
        if m.chat.is_none() {
            // The digests go to the chat set up now, unless the person names another.
            let default = new_chat.unwrap_or("wechat:inbox");
            m.chat = Some(self.input(self.w.mail_chat, default)?);
        }
        Ok(())
    }

    /// What the whole bridge needs once: the workspace of the new chats, `notify` and the
    /// timezone, each asked only when the file has none yet.
    fn shared(&self, plan: &mut Plan, new_accounts: bool) -> Result<(), String> {
        let new_chat = plan.new_chat();
        if new_accounts && new_chat.is_some() && plan.workspace.is_none() {
            plan.workspace = Some(self.input(self.w.workspace, "~/scv-workspace")?);
        }
        let file = self.current.as_ref();
        if let Some(chat) = &new_chat
            && plan.notify.is_none()
            && file.is_none_or(|c| c.notify.is_none())
        {
            plan.notify = Some(self.input(self.w.notify, chat)?);
        }
        if plan.timezone.is_none() && file.is_none_or(|c| c.timezone.is_none()) {
            plan.timezone = Some(self.input(self.w.timezone, &system_timezone())?);
        }
        // Optional: voice notes work without one (as files), so an empty answer is no server.
        if plan.speech_url.is_none() && file.is_none_or(|c| !c.speech.is_set()) {
            plan.speech_url = self.optional(self.w.speech)?;
        }
        Ok(())
    }

    fn err(&self, e: dialoguer::Error) -> String {
        format!("{}: {e}", self.w.unanswered)
    }

    fn select(&self, prompt: &str, items: &[&str], default: usize) -> Result<usize, String> {
        Select::new()
            .with_prompt(prompt)
            .items(items)
            .default(default)
            .interact()
            .map_err(|e| self.err(e))
    }

    fn confirm(&self, prompt: &str, default: bool) -> Result<bool, String> {
        Confirm::new()
            .with_prompt(prompt)
            .default(default)
            .interact()
            .map_err(|e| self.err(e))
    }

    fn input(&self, prompt: &str, default: &str) -> Result<String, String> {
        let s: String = Input::new()
            .with_prompt(prompt)
            .default(default.to_string())
            .interact_text()
            .map_err(|e| self.err(e))?;
        Ok(s.trim().to_string())
    }

    /// A line that may be left empty (`None`).
    fn optional(&self, prompt: &str) -> Result<Option<String>, String> {
        let s: String = Input::new()
            .with_prompt(prompt)
            .allow_empty(true)
            .interact_text()
            .map_err(|e| self.err(e))?;
        Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty()))
    }

    /// A secret that may be left empty (`None`).
    fn secret(&self, prompt: &str) -> Result<Option<Secret>, String> {
        let k = dialoguer::Password::new()
            .with_prompt(prompt)
            .allow_empty_password(true)
            .interact()
            .map_err(|e| self.err(e))?;
        let k = k.trim();
        Ok((!k.is_empty()).then(|| Secret::new(k)))
    }
}

/// This machine's timezone: `TZ`, else `/etc/timezone`, else where `/etc/localtime` points
/// (`.../zoneinfo/Asia/Shanghai`), else UTC; only a name chrono-tz knows.
fn system_timezone() -> String {
    let from_link = || {
        let target = std::fs::read_link("/etc/localtime").ok()?;
        let s = target.to_string_lossy().into_owned();
        s.split_once("zoneinfo/").map(|(_, z)| z.to_string())
    };
    [
        std::env::var("TZ")
            .ok()
            .map(|t| t.trim_start_matches(':').to_string()),
        std::fs::read_to_string("/etc/timezone")
            .ok()
            .map(|t| t.trim().to_string()),
        from_link(),
    ]
    .into_iter()
    .flatten()
    .find(|z| z.parse::<chrono_tz::Tz>().is_ok())
    .unwrap_or_else(|| "UTC".into())
}
