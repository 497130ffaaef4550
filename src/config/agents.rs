//! Named agents (`[agents.NAME]`), which agent each account's chats talk to (`agent`,
//! `stranger_agent`), and how a chat's turns take its messages (`[chats]`).
//!
//! `[agent]` stays the agent named [`DEFAULT_AGENT`]; every other agent is a table of its own
//! with the same keys. Checked here at load, each error naming the key and the fix.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{AccountKey, AgentBackend, AgentConfig};
use crate::protocol::Senders;

/// The name `[agent]` goes by: `agent = "default"` picks it, and it answers every account
/// that names none.
pub const DEFAULT_AGENT: &str = "default";

/// How long a message may have waited before it is answered with the note that it was sent
/// while the bridge was away, when `[chats] away_minutes` is not set.
pub const DEFAULT_AWAY_MINUTES: u64 = 10;

/// The `[chats]` table: how a chat's turn worker takes its messages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatsConfig {
    /// How long a turn waits after a chat's first message for more, in milliseconds (0 to
    /// 60000; default 0: no added latency). Messages that arrive while a turn runs are
    /// answered together in the next turn whatever this says.
    pub merge_ms: Option<u64>,
    /// A message older than this, in minutes, is answered with a note that it was sent while
    /// the bridge was away instead of by the agent (1 to 10080; default 10).
    pub away_minutes: Option<u64>,
}

/// Which agents one account's chats talk to, and how their turns take messages; made by
/// `Config::parse`, read by the conversation pipeline for each turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentChoice {
    /// The agent the chats talk to until a chat picks another with `/agent NAME`.
    pub agent: String,
    /// The agent strangers talk to (`senders = "anyone"`), if not [`AgentChoice::agent`].
    pub stranger_agent: Option<String>,
    /// Milliseconds a turn waits after a first message for more (`[chats] merge_ms`).
    pub merge_ms: u64,
    /// Milliseconds after which a message is answered with the away note (`[chats] away_minutes`).
    pub away_after_ms: u64,
}

impl Default for AgentChoice {
    fn default() -> Self {
        AgentChoice::of(&ChatsConfig::default())
    }
}

impl AgentChoice {
    /// The default agent for everyone, with `chats`' timing.
    pub fn of(chats: &ChatsConfig) -> Self {
        AgentChoice {
            agent: DEFAULT_AGENT.to_string(),
            stranger_agent: None,
            merge_ms: chats.merge_ms.unwrap_or(0),
            away_after_ms: chats.away_minutes.unwrap_or(DEFAULT_AWAY_MINUTES) * 60_000,
        }
    }
}

/// A key that is wrong: the dotted table, the key, and what to do.
pub(super) type Problem = (String, Option<&'static str>, String);

/// Checks the named agents and fills in what the file does not say (the history scope).
pub(super) fn check_named(named: &mut BTreeMap<String, AgentConfig>) -> Result<(), Problem> {
    for (name, cfg) in named.iter_mut() {
        let table = format!("agents.{name}");
        if name == DEFAULT_AGENT {
            let msg = "the agent named default is the [agent] table; move these keys to [agent]"
                .to_string();
            return Err((table, None, msg));
        }
        if !crate::ids::valid_account_name(name) {
            let msg = format!(
                "agent names use letters, digits, '-' and '_' (at most 64), found '{name}'; rename [agents.{name}]"
            );
            return Err((table, None, msg));
        }
        // Its own history: the default agent keeps the keys it always had.
        cfg.scope = Some(name.clone());
    }
    Ok(())
}

/// Whether `cfg`'s backend runs tools on its own (an agent process that edits files and runs
/// commands): such an agent answers strangers only when its table says `stranger_tools = true`.
pub fn grants_tools(cfg: &AgentConfig) -> bool {
    matches!(cfg.backend, AgentBackend::Scv | AgentBackend::Acp)
}

/// The account's choice from its keys as written (`agent`, `stranger_agent`) and who it
/// answers, among the agents `known` (`[agent]`, `[agents.NAME]`, `[chats]`); the error names
/// the key and the fix.
pub(super) fn choose(
    table: &str,
    (agent, stranger_agent, senders): (Option<String>, Option<String>, Senders),
    known: (&AgentConfig, &BTreeMap<String, AgentConfig>, &ChatsConfig),
) -> Result<AgentChoice, Problem> {
    let (default, named, chats) = known;
    let known = |key: &'static str, name: &str| -> Result<&AgentConfig, Problem> {
        if name == DEFAULT_AGENT {
            return Ok(default);
        }
        named.get(name).ok_or_else(|| {
            let msg = format!(
                "no agent is named '{name}'; expected one of {}, or add a table [agents.{name}]",
                names(named)
            );
            (table.to_string(), Some(key), msg)
        })
    };
    let mut choice = AgentChoice::of(chats);
    if let Some(name) = agent {
        known("agent", &name)?;
        choice.agent = name;
    }
    if let Some(name) = stranger_agent {
        let cfg = known("stranger_agent", &name)?;
        if senders != Senders::Anyone {
            let msg = "stranger_agent answers strangers, but this account answers only its owner; set senders = \"anyone\" or remove stranger_agent".to_string();
            return Err((table.to_string(), Some("stranger_agent"), msg));
        }
        if grants_tools(cfg) && cfg.stranger_tools != Some(true) {
            let at = match name.as_str() {
                DEFAULT_AGENT => "[agent]".to_string(),
                n => format!("[agents.{n}]"),
            };
            let msg = format!(
                "the agent '{name}' runs tools of its own (backend scv or acp) and strangers would reach them; name an openai agent, or if strangers may use it set stranger_tools = true in {at}"
            );
            return Err((table.to_string(), Some("stranger_agent"), msg));
        }
        choice.stranger_agent = Some(name);
    }
    Ok(choice)
}

/// "default, claude or codex".
fn names(named: &BTreeMap<String, AgentConfig>) -> String {
    let all: Vec<&str> = std::iter::once(DEFAULT_AGENT)
        .chain(named.keys().map(String::as_str))
        .collect();
    match all.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The choices of every account that has them, keyed by account (mail accounts have none).
pub type Choices = BTreeMap<AccountKey, AgentChoice>;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Config, ConfigError};

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/c.toml"), text)
    }

    const TWO: &str = "[agents.claude]\nbackend = \"acp\"\ncommand = \"claude-agent-acp\"\n\
                       [agents.cheap]\nbackend = \"openai\"\nmodel = \"m\"\n";

    #[test]
    fn named_agents_parse_with_their_own_scope_and_accounts_pick_one() {
        let c = parse(&format!(
            "{TWO}[chats]\nmerge_ms = 250\n[wechat.a]\nagent = \"claude\"\n[wechat.b]\n"
        ))
        .expect("parses");
        assert_eq!(c.agents.len(), 2);
        assert_eq!(c.agents["claude"].scope.as_deref(), Some("claude"));
        assert_eq!(
            c.agent.scope, None,
            "[agent] keeps the history it always had"
        );
        let a = &c.choices[&AccountKey::parse("wechat:a").expect("key")];
        assert_eq!((a.agent.as_str(), a.merge_ms), ("claude", 250));
        let b = &c.choices[&AccountKey::parse("wechat:b").expect("key")];
        assert_eq!(b.agent, DEFAULT_AGENT);
        assert_eq!(b.away_after_ms, DEFAULT_AWAY_MINUTES * 60_000);
        assert_eq!(
            c.agent_named("cheap")
                .and_then(|a| a.model.clone())
                .as_deref(),
            Some("m")
        );
    }

    #[test]
    fn an_unknown_agent_is_named_with_the_ones_there_are() {
        let e = parse(&format!("{TWO}[wechat.a]\nagent = \"gpt\"\n")).expect_err("refused");
        assert_eq!(e.key.as_deref(), Some("wechat.a.agent"), "{e}");
        assert!(
            e.message.contains("default, cheap or claude") && e.message.contains("[agents.gpt]"),
            "{e}"
        );
    }

    #[test]
    fn the_default_name_and_bad_names_are_refused_with_the_fix() {
        let e = parse("[agents.default]\nmodel = \"m\"\n").expect_err("refused");
        assert!(e.message.contains("move these keys to [agent]"), "{e}");
        let e = parse("[agents.\"a b\"]\nmodel = \"m\"\n").expect_err("refused");
        assert!(e.message.contains("rename"), "{e}");
        let e = parse("[agents.x]\ntimeout_seconds = 0\n").expect_err("out of range");
        assert_eq!(e.key.as_deref(), Some("agents.x.timeout_seconds"), "{e}");
    }

    #[test]
    fn a_stranger_agent_needs_strangers_and_no_tools_unless_the_owner_says_so() {
        let owner_only = parse(&format!("{TWO}[wechat.a]\nstranger_agent = \"cheap\"\n"))
            .expect_err("owner-only account");
        assert!(
            owner_only.message.contains("senders = \"anyone\""),
            "{owner_only}"
        );
        let tools = parse(&format!(
            "{TWO}[wechat.a]\nsenders = \"anyone\"\nstranger_agent = \"claude\"\n"
        ))
        .expect_err("a tool-granting agent");
        assert_eq!(tools.key.as_deref(), Some("wechat.a.stranger_agent"));
        assert!(
            tools
                .message
                .contains("set stranger_tools = true in [agents.claude]"),
            "{tools}"
        );
        let said = TWO.replace(
            "command = \"claude-agent-acp\"\n",
            "command = \"claude-agent-acp\"\nstranger_tools = true\n",
        );
        let c = parse(&format!(
            "{said}[wechat.a]\nsenders = \"anyone\"\nstranger_agent = \"claude\"\n"
        ))
        .expect("the owner said so");
        let a = &c.choices[&AccountKey::parse("wechat:a").expect("key")];
        assert_eq!(a.stranger_agent.as_deref(), Some("claude"));
        let cheap = parse(&format!(
            "{TWO}[wechat.a]\nsenders = \"anyone\"\nstranger_agent = \"cheap\"\n"
        ));
        assert!(cheap.is_ok(), "an openai agent grants no tools");
    }

    #[test]
    fn mail_accounts_take_no_agent() {
        let e = parse("[mail.m]\nimap_host = \"h\"\nusername = \"u\"\nagent = \"default\"\n")
            .expect_err("refused");
        assert!(e.message.contains("agent"), "{e}");
    }
}
