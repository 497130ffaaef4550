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
    /// A WeChat account's iLink host answers.
    WechatEndpoint,
    /// A Feishu account's open platform host answers.
    FeishuEndpoint,
    /// A Feishu account's app credentials get a tenant token.
    FeishuApp,
    /// A mail account's IMAP login.
    MailImap,
    /// A mail account's SMTP login.
    MailSmtp,
    /// The model's API key.
    AgentKey,
    /// The model endpoint's `/models`.
    AgentEndpoint,
    /// The SCV or ACP agent's socket or command.
    AgentServer,
    /// `approvals = "ask"` with an agent that runs no tools.
    Approvals,
}

impl CheckId {
    /// Every id, in the order they were introduced.
    pub const ALL: [CheckId; 19] = [
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
        CheckId::WechatEndpoint,
        CheckId::FeishuEndpoint,
        CheckId::FeishuApp,
        CheckId::MailImap,
        CheckId::MailSmtp,
        CheckId::AgentKey,
        CheckId::AgentEndpoint,
        CheckId::AgentServer,
        CheckId::Approvals,
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
            CheckId::WechatEndpoint => "wechat.endpoint",
            CheckId::FeishuEndpoint => "feishu.endpoint",
            CheckId::FeishuApp => "feishu.app",
            CheckId::MailImap => "mail.imap",
            CheckId::MailSmtp => "mail.smtp",
            CheckId::AgentKey => "agent.key",
            CheckId::AgentEndpoint => "agent.endpoint",
            CheckId::AgentServer => "agent.server",
            CheckId::Approvals => "approvals",
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
    pub(super) fn pass(id: CheckId, what: impl Into<String>) -> Self {
        Check {
            id,
            account: None,
            what: what.into(),
            fix: None,
        }
    }

    pub(super) fn fail(id: CheckId, what: impl Into<String>, fix: impl Into<String>) -> Self {
        Check {
            id,
            account: None,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }

    /// The same check, about `account`.
    pub(super) fn of(mut self, account: impl ToString) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripts key on these: a rename breaks them, so it must break this test first.
    #[test]
    fn the_ids_are_pinned() {
        let ids: Vec<&str> = CheckId::ALL.iter().map(|i| i.as_str()).collect();
        assert_eq!(
            ids,
            [
                "config",
                "daemon",
                "daemon.account",
                "daemon.agent",
                "credential_store",
                "credentials",
                "same_bot",
                "store",
                "socket_dir",
                "clock",
                "wechat.endpoint",
                "feishu.endpoint",
                "feishu.app",
                "mail.imap",
                "mail.smtp",
                "agent.key",
                "agent.endpoint",
                "agent.server",
                "approvals",
            ]
        );
    }
}
