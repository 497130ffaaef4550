//! What status says about the agent: which backend and model, whether `[agent]` can work at all
//! (known at start), whether the last turn failed, and the step that fixes it.

use std::sync::Mutex;

use super::{AgentError, AgentErrorKind};
use crate::config::AgentConfig;
use crate::protocol::{AgentHealth, AgentState};

/// The most bytes of one chat message handed to the agent unless `[agent] max_message_bytes` says
/// otherwise: a 10 MB paste must not reach the model whole.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 32 * 1024;

/// `[agent] max_message_bytes`, or the default (the configuration checked its range at load).
pub fn max_message_bytes(cfg: &AgentConfig) -> usize {
    cfg.max_message_bytes
        .map_or(DEFAULT_MAX_MESSAGE_BYTES, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        })
}

/// Why `[agent]` cannot work as written, and the step that fixes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// What is wrong, naming the key or variable.
    pub message: String,
    /// What a person does about it.
    pub fix: String,
}

impl ConfigProblem {
    /// A problem and its fix.
    pub fn new(message: impl Into<String>, fix: impl Into<String>) -> Self {
        ConfigProblem {
            message: message.into(),
            fix: fix.into(),
        }
    }
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The step that fixes each kind of failed turn, as the backend knows it (`None`: no advice).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixes {
    /// For [`AgentErrorKind::Unavailable`]: bring the endpoint back.
    pub unavailable: Option<String>,
    /// For [`AgentErrorKind::Auth`]: give it a key it accepts.
    pub auth: Option<String>,
    /// For [`AgentErrorKind::Failed`]: correct what it refused.
    pub failed: Option<String>,
}

/// What a backend says about itself: for status and for what the pipeline hands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentInfo {
    /// `openai`, `scv`, or what a test's agent calls itself.
    pub backend: String,
    /// The model name, when the backend has one.
    pub model: Option<String>,
    /// Set when `[agent]` cannot work: nothing will be answered until it is fixed.
    pub problem: Option<ConfigProblem>,
    /// The fixes for failed turns.
    pub fixes: Fixes,
    /// The most bytes of one chat message the pipeline hands to this agent.
    pub max_message_bytes: usize,
}

impl AgentInfo {
    /// A configured backend with no model, no advice and the default message cap.
    pub fn new(backend: impl Into<String>) -> Self {
        AgentInfo {
            backend: backend.into(),
            model: None,
            problem: None,
            fixes: Fixes::default(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// Runtime outcomes of the agent's turns, read by status.
pub struct AgentMonitor {
    info: AgentInfo,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    last_success: Option<u64>,
    failure: Option<(AgentErrorKind, String)>,
}

impl AgentMonitor {
    /// Watches an agent that describes itself as `info`.
    pub fn new(info: AgentInfo) -> Self {
        AgentMonitor {
            info,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// What the agent said about itself.
    pub fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// Records how a turn ended: an answer clears the failure; a cancelled turn says nothing.
    pub fn record(&self, outcome: Result<(), &AgentError>) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Ok(()) => {
                seen.last_success = Some(unix_now());
                seen.failure = None;
            }
            Err(e) if e.kind == AgentErrorKind::Cancelled => {}
            Err(e) => seen.failure = Some((e.kind, e.message.clone())),
        }
    }

    /// The `agent` object of the status.
    pub fn health(&self) -> AgentHealth {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let (state, error, action) = match (&self.info.problem, &seen.failure) {
            // A configuration problem outranks the failures it causes.
            (Some(p), _) => (
                AgentState::NotConfigured,
                Some(p.message.clone()),
                Some(p.fix.clone()),
            ),
            (None, Some((kind, message))) => {
                let fix = match kind {
                    AgentErrorKind::Unavailable | AgentErrorKind::Ended => {
                        &self.info.fixes.unavailable
                    }
                    AgentErrorKind::Auth => &self.info.fixes.auth,
                    _ => &self.info.fixes.failed,
                };
                (AgentState::Failing, Some(message.clone()), fix.clone())
            }
            (None, None) => (AgentState::Ok, None, None),
        };
        AgentHealth {
            backend: self.info.backend.clone(),
            model: self.info.model.clone(),
            state,
            last_success_unix_seconds: seen.last_success,
            error,
            action,
            processes: None,
        }
    }
}

fn unix_now() -> u64 {
    crate::clock::wall_ms() / 1000
}

/// The step for a variable the daemon needs in its environment: it is read once, at start.
pub(crate) fn set_variable_fix(var: &str) -> String {
    format!(
        "start the daemon with {var} set to a valid API key (systemd: `systemctl --user edit \
         scv-bridge`, add `Environment={var}=...` under [Service], then `systemctl --user restart \
         scv-bridge`)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> AgentInfo {
        let mut i = AgentInfo::new("openai");
        i.fixes.unavailable = Some("start it".into());
        i.fixes.auth = Some("fix the key".into());
        i
    }

    #[test]
    fn failing_until_the_next_answer_with_the_fix_for_the_kind() {
        let m = AgentMonitor::new(info());
        let h = m.health();
        assert_eq!((h.state, h.error, h.action), (AgentState::Ok, None, None));
        m.record(Err(&AgentError::new(AgentErrorKind::Auth, "rejected")));
        let h = m.health();
        assert_eq!(h.state, AgentState::Failing);
        assert_eq!(h.error.as_deref(), Some("rejected"));
        assert_eq!(h.action.as_deref(), Some("fix the key"));
        m.record(Err(&AgentError::new(AgentErrorKind::Cancelled, "stop")));
        assert_eq!(
            m.health().state,
            AgentState::Failing,
            "a /stop says nothing"
        );
        m.record(Ok(()));
        let h = m.health();
        assert_eq!((h.state, h.error), (AgentState::Ok, None));
        assert!(h.last_success_unix_seconds.is_some());
    }

    #[test]
    fn a_configuration_problem_outranks_failures() {
        let mut i = info();
        i.problem = Some(ConfigProblem::new("no model", "set agent.model"));
        let m = AgentMonitor::new(i);
        m.record(Err(&AgentError::new(AgentErrorKind::Unavailable, "down")));
        let h = m.health();
        assert_eq!(h.state, AgentState::NotConfigured);
        assert_eq!(h.error.as_deref(), Some("no model"));
        assert_eq!(h.action.as_deref(), Some("set agent.model"));
    }
}
