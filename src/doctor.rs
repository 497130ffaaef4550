//! `scv-bridge doctor`: checks what a running bridge depends on, each with a pass/fail line and a fix.
//!
//! When a daemon answers on the socket, its live view of each account decides (a `failed` account or
//! a long backoff fails, with the daemon's own fix) and no platform is contacted. Without one, each
//! enabled account's endpoints are checked for real, without spending platform quota: a TLS handshake
//! with certificate verification, the IMAP/SMTP login, the Feishu token, the model's `/models`.

mod agent;
mod daemon_view;
#[cfg(test)]
mod ids_tests;
mod local;
mod speech;

use std::path::{Path, PathBuf};

pub use crate::probe::{Check, CheckId};

use crate::config::{CommandLine, Config, client_socket};

/// The daemon that answered on the control socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonInfo {
    /// Its process id.
    pub pid: u32,
    /// Its release.
    pub version: String,
    /// The socket it answered on.
    pub socket: PathBuf,
}

/// Everything doctor found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The running daemon, when one answered.
    pub daemon: Option<DaemonInfo>,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
}

impl Report {
    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| c.fix.is_some()).count()
    }

    /// The text for people: one line per check, then the count.
    pub fn render(&self) -> String {
        let mut out: String = self
            .checks
            .iter()
            .map(|c| format!("{}\n", c.render()))
            .collect();
        match self.failed() {
            0 => out.push_str(&format!("all {} checks passed\n", self.checks.len())),
            n => out.push_str(&format!("{n} of {} checks failed\n", self.checks.len())),
        }
        out
    }

    /// `doctor --json`: `{"ok", "failed", "daemon": {"running", "pid", "version", "socket"},
    /// "checks": [{"id", "account", "what", "ok", "fix"}]}` (ids: [`CheckId`]).
    pub fn to_json(&self) -> serde_json::Value {
        let daemon = match &self.daemon {
            Some(d) => serde_json::json!({
                "running": true,
                "pid": d.pid,
                "version": d.version,
                "socket": d.socket.display().to_string(),
            }),
            None => serde_json::json!({"running": false}),
        };
        let checks: Vec<serde_json::Value> = self.checks.iter().map(Check::to_json).collect();
        serde_json::json!({
            "ok": self.failed() == 0,
            "failed": self.failed(),
            "daemon": daemon,
            "checks": checks,
        })
    }
}

/// Runs every check for the configuration at `path`.
pub async fn run(path: &Path) -> Report {
    let commands = CommandLine::for_config(path);
    let loaded = Config::load(path);
    let socket = match &loaded {
        Ok(c) => c.socket.clone(),
        Err(_) => client_socket(path).path,
    };
    let status = daemon_view::ask(&socket).await;
    let daemon = status.as_ref().map(|s| DaemonInfo {
        pid: s.pid,
        version: s.version.clone(),
        socket: socket.clone(),
    });
    let mut checks = Vec::new();
    let config = match loaded {
        Ok(c) => c,
        Err(e) => {
            checks.push(Check::fail(
                CheckId::Config,
                format!("configuration: {e}"),
                format!(
                    "correct the file; `{}` prints every key, documented",
                    crate::config::EXAMPLE_COMMAND
                ),
            ));
            if let Some(s) = &status {
                checks.extend(daemon_view::accounts(s, &socket, &commands));
            }
            return Report { daemon, checks };
        }
    };
    checks.push(Check::pass(
        CheckId::Config,
        format!("configuration {} parses", path.display()),
    ));
    if let Some(s) = &status {
        checks.extend(daemon_view::accounts(s, &socket, &commands));
    }
    let credentials = match local::load_credentials(&config).await {
        Ok(l) => {
            checks.extend(local::credentials(&config, &l));
            checks.extend(local::same_bot(&config, &l));
            l
        }
        Err(c) => {
            checks.push(c);
            Default::default()
        }
    };
    checks.push(local::store(&config.state_dir.join("state.db")).await);
    checks.push(local::socket_dir(&config.socket));
    checks.push(local::clock());
    if status.is_none() {
        checks.extend(platforms(&config, &credentials, &commands).await);
    }
    let keys = (
        local::agent_key(&credentials),
        local::named_agent_keys(&config, &credentials),
    );
    checks.extend(agent::checks(&config, keys, status.is_some()).await);
    checks.extend(local::approvals(&config));
    checks.extend(local::console(&config));
    checks.extend(speech::check(&config).await);
    Report { daemon, checks }
}

/// Each enabled account's platform probes, run for real (only when no daemon answers).
async fn platforms(
    config: &Config,
    credentials: &local::Loaded,
    commands: &CommandLine,
) -> Vec<Check> {
    let mut out = Vec::new();
    for a in config.accounts.values().filter(|a| a.enabled) {
        let id = a.key.to_string();
        let stored = credentials
            .get(&id)
            .and_then(|r| r.as_ref().ok())
            .and_then(Option::as_ref);
        let login = commands.command(&format!("login {} {}", a.key.channel, a.key.account));
        let input = crate::probe::ProbeInput {
            spec: a,
            stored,
            login: &login,
        };
        let checks = crate::adapters::platform(a.key.channel).probe(input).await;
        out.extend(checks.into_iter().map(|c| c.of(&id)));
    }
    out
}
