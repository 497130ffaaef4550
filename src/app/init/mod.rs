//! `scv-bridge init`: set up from nothing, or change an existing configuration in place.
//!
//! The answers come from flags, and on a terminal from prompts for what the flags leave open
//! ([`ask`]). Then: the agent is tested, the file is written (0600, only what was picked, comments
//! kept on a re-run: [`edit`]), its key is stored, the new channels log in, `doctor` runs, and the
//! user service can be installed ([`service`]).

mod ask;
mod service;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

pub use crate::setup::{
    AgentChoice, AgentPlan, ChatPlan, CredentialsChoice, MailPlan, Plan, TlsChoice, apply,
    write_private,
};
pub use service::unit_text;

use crate::config::{Channel, CommandLine, Config};
use crate::login::agent::Probe;
use crate::secrets::Secret;

/// `init`'s flags: every answer can be given here, so scripts and tests need no terminal.
#[derive(Debug, Default, clap::Args)]
pub struct InitArgs {
    /// Never prompt: take the answers from the flags, leave everything else as it is.
    #[arg(long)]
    pub non_interactive: bool,
    /// The agent backend.
    #[arg(long, value_enum)]
    pub agent: Option<AgentChoice>,
    /// The OpenAI-compatible base URL (ends before /chat/completions).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The model name the endpoint knows.
    #[arg(long)]
    pub model: Option<String>,
    /// Read the model API key from stdin (one line) and store it, as `login agent` does.
    #[arg(long)]
    pub api_key_stdin: bool,
    /// For --agent scv: the command that starts the agent server.
    #[arg(long)]
    pub scv_command: Option<String>,
    /// For --agent scv: the socket of a running agent server.
    #[arg(long)]
    pub scv_socket: Option<String>,
    /// For --agent acp: the agent's command (codex-acp, claude-agent-acp, gemini).
    #[arg(long, value_name = "COMMAND")]
    pub acp_command: Option<String>,
    /// For --agent acp: one argument of the command (repeat it; e.g. --acp-arg=--experimental-acp).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub acp_arg: Vec<String>,
    /// The environment variable holding the model's API key (for acp: the one the agent reads,
    /// e.g. OPENAI_API_KEY or ANTHROPIC_API_KEY).
    #[arg(long, value_name = "VARIABLE")]
    pub api_key_env: Option<String>,
    /// Have a chat account of any platform (repeat it): telegram:bot, wechat:phone, ...
    #[arg(long, value_name = "CHANNEL:ACCOUNT")]
    pub chat: Vec<String>,
    /// An answer to the new chat accounts' set-up questions (repeat it; each platform takes the
    /// keys it asks: base_url for WeChat, domain and app-id for Feishu).
    #[arg(long, value_name = "KEY=VALUE")]
    pub setup: Vec<String>,
    /// Have a WeChat account of this name (the same as --chat wechat:ACCOUNT).
    #[arg(long, value_name = "ACCOUNT")]
    pub wechat: Option<String>,
    /// The WeChat account's iLink endpoint (written as its base_url, and logged in against; the
    /// same as --setup base_url=URL).
    #[arg(long, requires = "wechat", value_name = "URL")]
    pub wechat_base_url: Option<String>,
    /// Have a Feishu account of this name (the same as --chat feishu:ACCOUNT).
    #[arg(long, value_name = "ACCOUNT")]
    pub feishu: Option<String>,
    /// The Feishu app ID, for its login (the same as --setup app-id=ID).
    #[arg(long, requires = "feishu")]
    pub app_id: Option<String>,
    /// The Feishu account's domain: feishu (China), lark (international) or a base URL (the
    /// same as --setup domain=DOMAIN).
    #[arg(long, requires = "feishu", value_name = "DOMAIN")]
    pub feishu_domain: Option<String>,
    /// The new chat accounts' workspace: where the agent works and photos and files people send
    /// are kept (without one, they never reach the agent).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<String>,
    /// Where `scv-bridge confirm` asks (CHANNEL:ACCOUNT; default: the chat set up now).
    #[arg(long, value_name = "CHANNEL:ACCOUNT")]
    pub notify: Option<String>,
    /// The timezone digests are timed in (an IANA name such as Asia/Shanghai).
    #[arg(long, value_name = "ZONE")]
    pub timezone: Option<String>,
    /// A speech server for voice notes: its OpenAI-compatible base URL (`[speech] base_url`).
    #[arg(long, value_name = "URL")]
    pub speech_url: Option<String>,
    /// Have a mail account of this name (with --imap-host, --username and --mail-chat).
    #[arg(long, value_name = "ACCOUNT")]
    pub mail: Option<String>,
    /// The mail account's IMAP server.
    #[arg(long, requires = "mail")]
    pub imap_host: Option<String>,
    /// The IMAP port (default 993 with implicit TLS, 143 otherwise).
    #[arg(long, requires = "mail")]
    pub imap_port: Option<u16>,
    /// How IMAP is secured.
    #[arg(long, requires = "mail", value_enum)]
    pub tls: Option<TlsChoice>,
    /// A PEM file of the CA that signed the mail server's certificate (a private CA).
    #[arg(long, requires = "mail", value_name = "FILE")]
    pub tls_ca: Option<String>,
    /// The mail account's login.
    #[arg(long, requires = "mail")]
    pub username: Option<String>,
    /// The chat that carries mail digests (CHANNEL:ACCOUNT; default: the chat set up now): a
    /// configured one stays as it is (digests may share an ordinary chat); a new one is made
    /// purpose = "mail" and logs in.
    #[arg(long, requires = "mail", value_name = "CHANNEL:ACCOUNT")]
    pub mail_chat: Option<String>,
    /// Where state lives (default $XDG_STATE_HOME/scv-bridge, else ~/.local/state/scv-bridge).
    #[arg(long)]
    pub state_dir: Option<String>,
    /// Where credentials are kept.
    #[arg(long, value_enum)]
    pub credentials: Option<CredentialsChoice>,
    /// Run the new channels' logins now (WeChat QR, Feishu app secret and pairing, mail password).
    #[arg(long)]
    pub login: bool,
    /// Do not run `doctor` at the end.
    #[arg(long)]
    pub skip_doctor: bool,
    /// Install and start the systemd user service.
    #[arg(long)]
    pub install_service: bool,
    /// The language of the questions (default: the locale's, from LC_ALL, LC_MESSAGES or LANG).
    #[arg(long, value_enum)]
    pub lang: Option<crate::app::GuideLang>,
}

impl InitArgs {
    /// The chat accounts the flags name, each with the set-up answers its platform takes; a
    /// name or an answer no new account takes is an error (a typo must not pass silently).
    fn chats(&self) -> Result<Vec<ChatPlan>, String> {
        let mut chats = Vec::new();
        let named = self.chat.iter().map(|c| {
            crate::ids::AccountKey::parse(c)
                .filter(|k| crate::adapters::platform(k.channel).setup().is_some())
                .map(|k| (k.channel, k.account))
                .ok_or_else(|| {
                    format!(
                        "--chat takes CHANNEL:ACCOUNT of a chat platform ({}), found '{c}'",
                        chat_channels()
                    )
                })
        });
        let legacy = [
            (Channel::Wechat, &self.wechat),
            (Channel::Feishu, &self.feishu),
        ];
        let legacy = legacy
            .into_iter()
            .filter_map(|(ch, name)| Some(Ok((ch, name.clone()?))));
        for named in named.chain(legacy) {
            let (channel, name) = named?;
            chats.push(ChatPlan::new(channel, &name));
        }
        let legacy_answers = [
            ("base_url", &self.wechat_base_url),
            ("domain", &self.feishu_domain),
            ("app-id", &self.app_id),
        ];
        let mut answers: Vec<(String, String)> = legacy_answers
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.clone()?)))
            .collect();
        for a in &self.setup {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| format!("--setup takes KEY=VALUE, found '{a}'"))?;
            answers.push((k.trim().to_string(), v.trim().to_string()));
        }
        for (key, value) in answers {
            let mut taken = false;
            for chat in &mut chats {
                taken |= chat.answer(&key, value.clone());
            }
            if !taken {
                return Err(format!(
                    "no new chat account asks {key} (the accounts given: {})",
                    chats
                        .iter()
                        .map(ChatPlan::key)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Ok(chats)
    }

    /// The plan the flags alone give.
    fn plan(&self) -> Result<Plan, String> {
        Ok(Plan {
            state_dir: self.state_dir.clone(),
            credentials: self.credentials,
            agent: AgentPlan {
                backend: self.agent,
                base_url: self.base_url.clone(),
                model: self.model.clone(),
                command: self.scv_command.clone().or(self.acp_command.clone()),
                args: Some(self.acp_arg.clone()).filter(|a| !a.is_empty()),
                socket: self.scv_socket.clone(),
                api_key_env: self.api_key_env.clone(),
                timeout_seconds: None,
                key: None,
            },
            named: Vec::new(),
            chats: self.chats()?,
            mail: self
                .mail
                .iter()
                .map(|name| MailPlan {
                    name: name.clone(),
                    imap_host: self.imap_host.clone(),
                    imap_port: self.imap_port,
                    tls: self.tls,
                    tls_ca: self.tls_ca.clone(),
                    username: self.username.clone(),
                    chat: self.mail_chat.clone(),
                })
                .collect(),
            workspace: self.workspace.clone(),
            notify: self.notify.clone(),
            timezone: self.timezone.clone(),
            speech_url: self.speech_url.clone(),
            speech_model: None,
        })
    }
}

/// The chat platforms, for a message: "wechat, feishu, telegram".
fn chat_channels() -> String {
    let chat = |c: &Channel| crate::adapters::platform(*c).setup().is_some();
    let names: Vec<&str> = Channel::ALL
        .iter()
        .filter(|c| chat(c))
        .map(|c| c.as_str())
        .collect();
    names.join(", ")
}

/// Runs `init` for the configuration at `path`; the error is one line for people.
pub async fn run(path: &Path, args: InitArgs) -> Result<ExitCode, String> {
    let commands = CommandLine::for_config(path);
    let existing = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let interactive = !args.non_interactive;
    if interactive && !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(format!(
            "init asks its questions on a terminal; in a script give the answers as flags with --non-interactive (see `{}`)",
            commands.command("init --help")
        ));
    }
    let mut plan = args.plan()?;
    let mut login = args.login;
    let mut install = args.install_service;
    let current = existing
        .as_deref()
        .and_then(|t| Config::parse(path, t).ok());
    // The accounts the file had before this run: their logins are kept unless picked.
    let current_keys: Option<Vec<String>> = current
        .as_ref()
        .map(|c| c.accounts.keys().map(ToString::to_string).collect());
    let has_notify = current.as_ref().is_some_and(|c| c.notify.is_some());
    if interactive {
        let lang = super::guide::words_lang(args.lang, |k| std::env::var(k).ok());
        let answers = tokio::task::spawn_blocking(move || ask::fill(plan, current, lang))
            .await
            .map_err(|e| e.to_string())??;
        plan = answers.plan;
        login |= answers.login;
        install |= answers.install_service;
    } else if args.api_key_stdin {
        let key = tokio::task::spawn_blocking(|| crate::login::prompt::secret("Model API key"))
            .await
            .map_err(|e| e.to_string())??;
        plan.agent.key = Some(Secret::new(key));
    }

    plan.default_to_new_chat(has_notify);

    // The new text, checked as the daemon will read it, before anything is stored.
    let text = apply(existing.as_deref(), &plan)?;
    let config = Config::parse(path, &text)
        .map_err(|e| format!("the configuration would not load, so nothing was written: {e}"))?;
    test_agent(&config, plan.agent.key.as_ref()).await?;
    if existing.as_deref() == Some(text.as_str()) {
        println!("{}: unchanged", path.display());
    } else {
        write_private(path, &text)?;
        println!("{}: written (mode 0600)", path.display());
    }
    if let Some(key) = &plan.agent.key {
        let store = crate::login::credential_store(&config).await?;
        crate::login::agent::save(&store, key).await?;
        println!("agent: API key stored in the credential store");
    }

    let mut failed_logins = Vec::new();
    if login {
        for (channel, account, args) in logins(&plan, current_keys.as_deref()) {
            println!("\n== login {channel} {account} ==");
            let r = crate::login::run(channel, &config, account, &args).await;
            if let Err(e) = r {
                eprintln!("scv-bridge: login {channel} {account}: {e}");
                failed_logins.push(commands.command(&format!("login {channel} {account}")));
            }
        }
    }

    let mut doctor_failed = 0;
    if !args.skip_doctor {
        println!("\n== doctor ==");
        let report = crate::doctor::run(path).await;
        print!("{}", report.render());
        doctor_failed = report.failed();
    }
    let mut service_failed = false;
    if install {
        match service::install(path, &config).await {
            Ok(note) => println!("\n{note}"),
            Err(e) => {
                eprintln!("scv-bridge: the user service was not installed: {e}");
                service_failed = true;
            }
        }
    }
    println!();
    for c in &failed_logins {
        println!("to log in later: `{c}`");
    }
    if doctor_failed > 0 {
        println!(
            "{doctor_failed} doctor check(s) failed: each line above says what fixes it; then run `{}`",
            commands.command("doctor")
        );
    }
    if service_failed {
        // Said above; the exit code tells a script that the set-up is not complete.
        return Ok(ExitCode::FAILURE);
    }
    if !install {
        println!("{}", next_step(&config, &commands).await);
    }
    Ok(ExitCode::SUCCESS)
}

/// The last line: start the daemon, or, when one already answers on the socket, have it read
/// the new file (a changed `[agent]` needs a restart, which `reload` says).
async fn next_step(config: &Config, commands: &CommandLine) -> String {
    let asked = crate::client::request(&config.socket, crate::protocol::DaemonCommand::Status);
    match tokio::time::timeout(std::time::Duration::from_secs(3), asked).await {
        Ok(Ok(status)) => format!(
            "a daemon already runs (pid {}); next: `{}` to apply the file",
            status.pid,
            commands.command("reload")
        ),
        _ => format!("next: `{}`", commands.command("run")),
    }
}

/// Each account the plan names, as (channel, account, its login's flags), in the order they
/// log in; a mail account's digest chat logs in too when it is new (`before`: the accounts the
/// file had).
fn logins<'a>(
    plan: &'a Plan,
    before: Option<&[String]>,
) -> Vec<(Channel, &'a str, crate::login::LoginArgs)> {
    let mut out: Vec<(Channel, &str, crate::login::LoginArgs)> = plan
        .chats
        .iter()
        .map(|c| (c.channel, c.name.as_str(), login_args(c)))
        .collect();
    for m in &plan.mail {
        // The chat a mail account reports to, when it is one to log in (not another mailbox).
        let chat = m
            .chat
            .as_deref()
            .and_then(|c| c.split_once(':'))
            .and_then(|(ch, a)| Some((Channel::parse(ch)?, a)))
            .filter(|(ch, _)| *ch != Channel::Mail);
        let known = |(ch, a): (Channel, &str)| {
            before.is_some_and(|b| b.iter().any(|k| *k == format!("{ch}:{a}")))
        };
        if let Some((ch, a)) = chat
            && !out.iter().any(|(c, n, _)| (*c, *n) == (ch, a))
            && !known((ch, a))
        {
            out.push((ch, a, crate::login::LoginArgs::default()));
        }
        out.push((
            Channel::Mail,
            m.name.as_str(),
            crate::login::LoginArgs::default(),
        ));
    }
    out
}

/// The flags a chat's set-up answered for its login.
fn login_args(chat: &ChatPlan) -> crate::login::LoginArgs {
    chat.login
        .iter()
        .fold(crate::login::LoginArgs::default(), |args, (flag, value)| {
            args.with_flag(flag, value.clone())
        })
}

/// Asks the endpoint's `/models` with the key; a rejected key stops `init` before it writes.
async fn test_agent(config: &Config, new_key: Option<&Secret>) -> Result<(), String> {
    use crate::config::AgentBackend;
    match config.agent.backend {
        AgentBackend::Openai => {}
        AgentBackend::Scv => {
            println!("agent: scv (doctor checks the server below)");
            return Ok(());
        }
        AgentBackend::Acp => {
            println!("agent: acp (doctor checks that its command is installed)");
            return Ok(());
        }
    }
    let Some(base) = config.agent.base_url.as_deref() else {
        return Ok(());
    };
    let key = match new_key {
        Some(k) => Some(k.clone()),
        None => {
            // The key a previous `init` or `login agent` stored, as the daemon would find it.
            let mut agent = config.agent.clone();
            if let Ok(store) = crate::login::credential_store(config).await {
                agent.stored_api_key = tokio::task::spawn_blocking(move || store.agent_key())
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .flatten();
            }
            crate::agent::key::resolve(&agent)
                .ok()
                .flatten()
                .map(|k| k.secret)
        }
    };
    match crate::login::agent::probe(base, key.as_ref()).await {
        Probe::Accepted => {
            println!("agent: {base} answers");
            Ok(())
        }
        Probe::Rejected(code) => Err(format!(
            "agent: {base} refused {} (HTTP {code}), so nothing was written; give the right key{}",
            if key.is_some() {
                "the key"
            } else {
                "a request without a key"
            },
            if key.is_some() {
                ""
            } else {
                " (--api-key-stdin, or the prompt)"
            }
        )),
        Probe::Status(code) => {
            eprintln!(
                "warning: agent: {base}/models answered HTTP {code}; check base_url and model"
            );
            Ok(())
        }
        Probe::Unreachable(why) => {
            eprintln!(
                "warning: agent: {base} cannot be reached now ({why}); start the model server before the first chat"
            );
            Ok(())
        }
    }
}
