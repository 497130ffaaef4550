//! Checks on this machine: credentials present, store sound, socket directory private, clock sane,
//! and settings that mean nothing with the configured agent.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Check, CheckId};
use crate::config::{AccountKey, AgentBackend, CommandLine, Config};
use crate::secrets::{
    AGENT_KEY_ID, API_KEY_FIELD, CredentialStore, Credentials, Secret, named_agent_key_id,
    shared_bots,
};

/// Each enabled account's stored credentials, or why they could not be read.
pub(super) type Loaded = BTreeMap<String, Result<Option<Credentials>, String>>;

/// Loads every enabled account's credentials once; the store's own failure is one check.
pub(super) async fn load_credentials(config: &Config) -> Result<Loaded, Check> {
    let (mode, dir) = (config.credentials, config.state_dir.clone());
    // The agents' stored keys ride along (the store is opened once); `credentials` skips them.
    let ids: Vec<String> = config
        .accounts
        .values()
        .filter(|a| a.enabled)
        .map(|a| a.key.to_string())
        .chain([AGENT_KEY_ID.to_string()])
        .chain(config.agents.keys().map(|n| named_agent_key_id(n)))
        .collect();
    let loaded = tokio::task::spawn_blocking(move || {
        let store = CredentialStore::open_quietly(mode, &dir).map_err(|e| e.to_string())?;
        Ok::<_, String>(
            ids.into_iter()
                .map(|id| {
                    let r = store.load(&id).map_err(|e| e.to_string());
                    (id, r)
                })
                .collect::<Loaded>(),
        )
    })
    .await;
    match loaded {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(Check::fail(
            CheckId::CredentialStore,
            format!("credential store: {e}"),
            "set credentials = \"file\" in the configuration",
        )),
        Err(e) => Err(Check::fail(
            CheckId::CredentialStore,
            format!("credential store: {e}"),
            "run doctor again",
        )),
    }
}

/// One check per stored login: readable, and holding what its account's login steps ask for.
pub(super) fn credentials(config: &Config, loaded: &Loaded) -> Vec<Check> {
    let commands = CommandLine::for_config(&config.path);
    let keys: Vec<String> = config
        .agents
        .keys()
        .map(|n| named_agent_key_id(n))
        .collect();
    loaded
        .iter()
        .filter(|(id, _)| id.as_str() != AGENT_KEY_ID && !keys.contains(id))
        .map(|(id, r)| {
            let (channel, account) = id.split_once(':').unwrap_or((id, ""));
            let login = commands.command(&format!("login {channel} {account}"));
            let check = match r {
                Ok(Some(c)) => match lacks(config, &commands, id, c, &login) {
                    Some((what, fix)) => Check::fail(CheckId::Credentials, what, fix),
                    None => Check::pass(CheckId::Credentials, format!("{id} has credentials")),
                },
                Ok(None) => Check::fail(
                    CheckId::Credentials,
                    format!("{id} has no credentials"),
                    format!("run `{login}`"),
                ),
                Err(e) => Check::fail(
                    CheckId::Credentials,
                    format!("{id} credentials unreadable: {e}"),
                    format!("run `{login}` again"),
                ),
            };
            check.of(id)
        })
        .collect()
}

/// What the stored login of enabled account `id` lacks, per its platform's login steps.
fn lacks(
    config: &Config,
    commands: &CommandLine,
    id: &str,
    stored: &Credentials,
    login: &str,
) -> Option<(String, String)> {
    let spec = config
        .accounts
        .values()
        .find(|a| a.enabled && a.key.to_string() == id)?;
    let input = crate::port::login_flow::LoginInput {
        key: &spec.key,
        settings: Some(&spec.settings),
        previous: Some(stored),
        poll: None,
        commands,
    };
    crate::adapters::platform(spec.key.channel)
        .login()
        .lacks(&input, stored, login)
}

/// Two enabled accounts logged in to one bot (WeChat bot id, Feishu app id) each miss messages.
pub(super) fn same_bot(config: &Config, loaded: &Loaded) -> Vec<Check> {
    let commands = CommandLine::for_config(&config.path);
    let logins: Vec<(AccountKey, Credentials)> = config
        .accounts
        .keys()
        .filter_map(|k| {
            let c = loaded.get(&k.to_string())?.as_ref().ok()?.as_ref()?;
            Some((k.clone(), c.clone()))
        })
        .collect();
    shared_bots(logins.iter().map(|(k, c)| (k, c)), |k, c| {
        crate::adapters::platform(k.channel).bot(c)
    })
    .iter()
    .map(|s| Check::fail(CheckId::SameBot, s.problem(), s.fix(&commands)))
    .collect()
}

/// The key `scv-bridge login agent` stored, when the store could be read and holds one.
pub(super) fn agent_key(loaded: &Loaded) -> Option<Secret> {
    stored_key(loaded, AGENT_KEY_ID)
}

/// The keys stored for the named agents (the console's agent form), by name.
pub(super) fn named_agent_keys(config: &Config, loaded: &Loaded) -> BTreeMap<String, Secret> {
    let keys = config.agents.keys();
    keys.filter_map(|n| Some((n.clone(), stored_key(loaded, &named_agent_key_id(n))?)))
        .collect()
}

fn stored_key(loaded: &Loaded, id: &str) -> Option<Secret> {
    loaded
        .get(id)
        .and_then(|r| r.as_ref().ok())
        .and_then(Option::as_ref)
        .and_then(|c| c.get(API_KEY_FIELD).cloned())
        .filter(|k| !k.expose().is_empty())
}

/// `approvals = "ask"` means something only to an agent that runs tools and asks first.
/// The console's address: on this machine it passes; beyond it, a warning with the fix.
pub(super) fn console(config: &Config) -> Option<Check> {
    let addr = config.console_listen?;
    Some(if addr.ip().is_loopback() {
        Check::pass(
            CheckId::Console,
            format!("the console listens on {addr}, this machine only"),
        )
    } else {
        Check::fail(
            CheckId::Console,
            format!(
                "the console listens on {addr}, beyond this machine: anyone who can reach it may try to log in, over plain HTTP"
            ),
            format!(
                "set console_listen = \"127.0.0.1:{}\" and reach it with `ssh -L {}:127.0.0.1:{} HOST`",
                addr.port(),
                addr.port(),
                addr.port()
            ),
        )
    })
}

pub(super) fn approvals(config: &Config) -> Vec<Check> {
    if matches!(config.agent.backend, AgentBackend::Scv | AgentBackend::Acp) {
        return Vec::new();
    }
    config
        .accounts
        .values()
        .filter(|a| a.approvals.asks())
        .map(|a| {
            Check::fail(
                CheckId::Approvals,
                format!(
                    "{}: approvals = \"ask\" has no effect: the openai backend runs no tools",
                    a.key
                ),
                "set [agent] backend = \"scv\", or remove approvals from the account",
            )
            .of(&a.key)
        })
        .collect()
}

/// The store opens read-only and passes SQLite's integrity check.
pub(super) async fn store(path: &Path) -> Check {
    if !path.exists() {
        return Check::pass(
            CheckId::Store,
            format!(
                "store {} not created yet (the daemon creates it)",
                path.display()
            ),
        );
    }
    let p = path.to_path_buf();
    let result = tokio::task::spawn_blocking(move || {
        let conn =
            rusqlite::Connection::open_with_flags(&p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
    })
    .await;
    match result {
        Ok(Ok(s)) if s == "ok" => Check::pass(
            CheckId::Store,
            format!("store {} passes the integrity check", path.display()),
        ),
        Ok(Ok(s)) => Check::fail(
            CheckId::Store,
            format!("store {} is damaged: {s}", path.display()),
            "stop the daemon, move the file aside and start again (accounts re-baseline; credentials are kept)",
        ),
        Ok(Err(e)) => Check::fail(
            CheckId::Store,
            format!("store {} cannot be opened: {e}", path.display()),
            "check the file's owner and permissions",
        ),
        Err(e) => Check::fail(
            CheckId::Store,
            format!("store check failed: {e}"),
            "run doctor again",
        ),
    }
}

/// The socket's directory is private to this user.
pub(super) fn socket_dir(socket: &Path) -> Check {
    let Some(dir) = socket.parent() else {
        return Check::fail(
            CheckId::SocketDir,
            "the socket path has no directory",
            "set `socket` to a path in a private directory",
        );
    };
    match std::fs::metadata(dir) {
        Err(_) => Check::pass(
            CheckId::SocketDir,
            format!("socket directory {} will be created 0700", dir.display()),
        ),
        Ok(m) if m.permissions().mode() & 0o077 == 0 => Check::pass(
            CheckId::SocketDir,
            format!("socket directory {} is private", dir.display()),
        ),
        Ok(m) => Check::fail(
            CheckId::SocketDir,
            format!(
                "socket directory {} is mode {:o}: other users can reach it",
                dir.display(),
                m.permissions().mode() & 0o777
            ),
            format!("chmod 700 {}", dir.display()),
        ),
    }
}

/// A clock before 2025 is certainly wrong, and TLS and token expiry would fail.
pub(super) fn clock() -> Check {
    let now = crate::supervisor::unix_now();
    if now > 1_735_689_600 {
        Check::pass(CheckId::Clock, "the system clock is plausible")
    } else {
        Check::fail(
            CheckId::Clock,
            "the system clock is before 2025",
            "enable time synchronisation (e.g. systemd-timesyncd or chrony)",
        )
    }
}
