//! What the running daemon reports: an account it calls `failed`, or holds in a long backoff,
//! fails here too, with the fix the daemon prints.

use std::path::Path;
use std::time::Duration;

use super::{Check, CheckId};
use crate::cli::human_duration;
use crate::config::CommandLine;
use crate::protocol::{
    AgentHealth, AgentState, ComponentHealth, ComponentState, DaemonCommand, DaemonStatus,
};
use crate::supervisor::unix_now;

/// A retry at least this far away is a long backoff: the account is out of service for a while.
pub const LONG_BACKOFF_SECS: u64 = 60;

/// How long to wait for a daemon's answer before treating it as not running.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

/// The daemon's status, when one answers on `socket`.
pub(super) async fn ask(socket: &Path) -> Option<DaemonStatus> {
    tokio::time::timeout(
        ASK_TIMEOUT,
        crate::client::request(socket, DaemonCommand::Status),
    )
    .await
    .ok()?
    .ok()
}

/// The daemon line, then one check per account it runs.
pub(super) fn accounts(status: &DaemonStatus, socket: &Path, commands: &CommandLine) -> Vec<Check> {
    let now = unix_now();
    let mut out = vec![Check::pass(
        CheckId::Daemon,
        format!(
            "daemon pid {} ({}) answers on {}; its accounts as it reports them (platforms not contacted again)",
            status.pid,
            status.version,
            socket.display()
        ),
    )];
    out.extend(status.components.iter().map(|h| account(h, now, commands)));
    out.extend(status.agent.as_deref().map(agent));
    out
}

/// The agent as the daemon sees it: not configured or failing fails here, with the daemon's fix.
fn agent(a: &AgentHealth) -> Check {
    let name = match &a.model {
        Some(m) => format!("agent {} ({m})", a.backend),
        None => format!("agent {}", a.backend),
    };
    let error = a.error.as_deref().unwrap_or("no reason given");
    let fix = || {
        a.action
            .clone()
            .unwrap_or_else(|| "fix what the error names, then restart the daemon".to_string())
    };
    match a.state {
        // Never "answering": the endpoint check beside this one may find it unreachable now.
        AgentState::Ok => Check::pass(
            CheckId::DaemonAgent,
            match a.last_success_unix_seconds {
                Some(_) => format!("{name}: the daemon reports its last turn answered"),
                None => format!("{name}: untested (the daemon has had no answer from it yet)"),
            },
        ),
        AgentState::NotConfigured => Check::fail(
            CheckId::DaemonAgent,
            format!("{name}: the daemon reports it not configured: {error}"),
            fix(),
        ),
        AgentState::Failing => Check::fail(
            CheckId::DaemonAgent,
            format!("{name}: the daemon reports its last turn failed: {error}"),
            fix(),
        ),
        _ => Check::pass(
            CheckId::DaemonAgent,
            format!("{name}: state unknown to this version"),
        ),
    }
}

fn account(h: &ComponentHealth, now: u64, commands: &CommandLine) -> Check {
    let error = h.error.as_deref().unwrap_or("no reason given");
    let wait = h
        .next_retry_unix_seconds
        .map(|t| t.saturating_sub(now))
        .unwrap_or(0);
    let check = match h.state {
        ComponentState::Failed => Check::fail(
            CheckId::DaemonAccount,
            format!("{}: the daemon reports it failed: {error}", h.id),
            h.action
                .clone()
                .unwrap_or_else(|| format!("see `{}`", commands.command("status"))),
        ),
        ComponentState::Backoff if wait >= LONG_BACKOFF_SECS => Check::fail(
            CheckId::DaemonAccount,
            format!(
                "{}: the daemon holds it in backoff, next try in {}: {error}",
                h.id,
                human_duration(wait)
            ),
            h.action.clone().unwrap_or_else(|| {
                "fix what the error names (network, DNS, proxy, the platform's own status); the account retries by itself"
                    .to_string()
            }),
        ),
        ComponentState::Disabled => {
            Check::pass(CheckId::DaemonAccount, format!("{}: disabled", h.id))
        }
        state => {
            let mut line = format!("{}: the daemon reports it {}", h.id, state.as_str());
            if let Some(e) = &h.error {
                line.push_str(&format!(" ({e})"));
            }
            Check::pass(CheckId::DaemonAccount, line)
        }
    };
    check.of(&h.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_that_never_answered_is_untested_and_none_is_called_answering() {
        let mut a = AgentHealth {
            backend: "openai".into(),
            model: None,
            state: AgentState::Ok,
            last_success_unix_seconds: None,
            error: None,
            action: None,
            processes: None,
        };
        let c = agent(&a);
        assert!(c.fix.is_none() && c.what.contains("untested"), "{c:?}");
        a.last_success_unix_seconds = Some(1);
        for c in [c, agent(&a)] {
            assert!(!c.what.contains("answering"), "{c:?}");
        }
    }

    #[test]
    fn failed_and_long_backoff_fail_with_the_daemons_fix() {
        let commands = CommandLine::default();
        let mut h = ComponentHealth::new("wechat", "phone", true);
        h.state = ComponentState::Failed;
        h.error = Some("session expired".into());
        h.action = Some("run `scv-bridge login wechat phone`".into());
        let c = account(&h, 100, &commands);
        assert_eq!(
            c.fix.as_deref(),
            Some("run `scv-bridge login wechat phone`")
        );
        h.state = ComponentState::Backoff;
        h.action = None;
        h.next_retry_unix_seconds = Some(100 + LONG_BACKOFF_SECS - 1);
        assert!(
            account(&h, 100, &commands).fix.is_none(),
            "a short backoff is not a failure"
        );
        h.next_retry_unix_seconds = Some(100 + 300);
        let c = account(&h, 100, &commands);
        assert!(
            c.fix.is_some() && c.what.contains("next try in 5 min"),
            "{c:?}"
        );
    }

    #[test]
    fn an_agent_not_configured_or_failing_fails_with_the_daemons_fix() {
        let mut a = AgentHealth {
            backend: "openai".into(),
            model: Some("m".into()),
            state: AgentState::Ok,
            last_success_unix_seconds: None,
            error: None,
            action: None,
            processes: None,
        };
        assert!(agent(&a).fix.is_none());
        a.state = AgentState::NotConfigured;
        a.error = Some("OPENAI_API_KEY is not set".into());
        a.action = Some("set OPENAI_API_KEY in the daemon's environment".into());
        let c = agent(&a);
        assert_eq!(
            c.fix.as_deref(),
            Some("set OPENAI_API_KEY in the daemon's environment")
        );
        assert!(
            c.what.contains("not configured: OPENAI_API_KEY is not set"),
            "{c:?}"
        );
        a.state = AgentState::Failing;
        assert!(agent(&a).what.contains("last turn failed"));
    }
}
