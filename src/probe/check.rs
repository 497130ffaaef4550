//! One check's outcome, and the stable id a script keys on in `doctor --json`.

/// What kind of check a line is. Made by the check functions in `doctor/*`; the strings of
/// [`CheckId::as_str`] are an interface (scripts read them from `doctor --json`): never rename
/// one, add new ones at the end of [`CheckId::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckId {
    /// The configuration file parses and validates.
    Config,
    /// A daemon answers on the control socket.
    Daemon,
    /// The running daemon's view of one account.
    DaemonAccount,
    /// The running daemon's view of the agent.
    DaemonAgent,
    /// The credential store opens.
    CredentialStore,
    /// One account's stored credentials.
    Credentials,
    /// Two accounts logged in to one bot.
    SameBot,
    /// The state database's integrity.
    Store,
    /// The control socket's directory is private.
    SocketDir,
    /// The system clock is plausible.
    Clock,
    /// One of a platform's own probes, named by the platform (`wechat.endpoint`, `mail.imap`):
    /// each platform lists its ids in `Platform::check_ids`, and they are pinned like these.
    Platform(&'static str),
    /// The model's API key.
    AgentKey,
    /// The model endpoint's `/models`.
    AgentEndpoint,
    /// The SCV or ACP agent's socket or command.
    AgentServer,
    /// `approvals = "ask"` with an agent that runs no tools.
    Approvals,
    /// The web console listens beyond this machine (`console_listen`).
    Console,
    /// The speech server (`[speech]`) transcribes a short silence.
    Speech,
}

impl CheckId {
    /// Every id the core runs, in the order they were introduced (the platforms' own follow
    /// from the registry).
    pub const ALL: [CheckId; 16] = [
        CheckId::Config,
        CheckId::Daemon,
        CheckId::DaemonAccount,
        CheckId::DaemonAgent,
        CheckId::CredentialStore,
        CheckId::Credentials,
        CheckId::SameBot,
        CheckId::Store,
        CheckId::SocketDir,
        CheckId::Clock,
        CheckId::AgentKey,
        CheckId::AgentEndpoint,
        CheckId::AgentServer,
        CheckId::Approvals,
        CheckId::Console,
        CheckId::Speech,
    ];

    /// The id as `doctor --json` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::Config => "config",
            CheckId::Daemon => "daemon",
            CheckId::DaemonAccount => "daemon.account",
            CheckId::DaemonAgent => "daemon.agent",
            CheckId::CredentialStore => "credential_store",
            CheckId::Credentials => "credentials",
            CheckId::SameBot => "same_bot",
            CheckId::Store => "store",
            CheckId::SocketDir => "socket_dir",
            CheckId::Clock => "clock",
            CheckId::Platform(id) => id,
            CheckId::AgentKey => "agent.key",
            CheckId::AgentEndpoint => "agent.endpoint",
            CheckId::AgentServer => "agent.server",
            CheckId::Approvals => "approvals",
            CheckId::Console => "console",
            CheckId::Speech => "speech",
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What kind of check.
    pub id: CheckId,
    /// The account it is about (`wechat:phone`), when it is about one.
    pub account: Option<String>,
    /// What was checked.
    pub what: String,
    /// `None` when it passed; else what fixes it.
    pub fix: Option<String>,
}

impl Check {
    pub fn pass(id: CheckId, what: impl Into<String>) -> Self {
        Check {
            id,
            account: None,
            what: what.into(),
            fix: None,
        }
    }

    pub fn fail(id: CheckId, what: impl Into<String>, fix: impl Into<String>) -> Self {
        Check {
            id,
            account: None,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }

    /// The same check, about `account`.
    pub fn of(mut self, account: impl ToString) -> Self {
        self.account = Some(account.to_string());
        self
    }

    /// The line(s) printed for it.
    pub fn render(&self) -> String {
        match &self.fix {
            None => format!("ok    {}", self.what),
            Some(f) => format!("FAIL  {}\n      fix: {f}", self.what),
        }
    }

    /// Its object in `doctor --json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id.as_str(),
            "account": self.account,
            "what": self.what,
            "ok": self.fix.is_none(),
            "fix": self.fix,
        })
    }
}
