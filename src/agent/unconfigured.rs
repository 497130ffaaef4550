//! The stand-in when `[agent]` cannot work: accounts still connect, every turn reports why nobody
//! answers (messages are kept for when it is fixed), and status says "not configured" from the start.

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::health::{AgentInfo, ConfigProblem};
use super::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use crate::config::{AgentBackend, AgentConfig};

/// Answers every turn `Unavailable` with the configuration problem.
pub struct Unconfigured {
    info: AgentInfo,
}

impl Unconfigured {
    /// The stand-in for `cfg`, which has `problem`.
    pub fn new(cfg: &AgentConfig, problem: ConfigProblem) -> Self {
        let mut info = AgentInfo::new(match cfg.backend {
            AgentBackend::Openai => "openai",
            AgentBackend::Scv => "scv",
            AgentBackend::Acp => "acp",
        });
        info.model = cfg.model.clone().filter(|m| !m.trim().is_empty());
        info.max_message_bytes = super::health::max_message_bytes(cfg);
        info.problem = Some(problem);
        Unconfigured { info }
    }
}

impl Agent for Unconfigured {
    fn turn(
        &self,
        _req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        let message = match &self.info.problem {
            Some(p) => format!("the agent is not configured: {}", p.message),
            None => "the agent is not configured".to_string(),
        };
        Box::pin(async move { Err(AgentError::new(AgentErrorKind::Unavailable, message)) })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }

    fn describe(&self) -> AgentInfo {
        self.info.clone()
    }
}
