//! The `Component` trait every account implements, and the errors it reports.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::health::HealthHandle;
use crate::config::AccountSpec;

/// How the supervisor should treat a failure; decided once, at the adapter's edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Network, 5xx, timeouts: restart with backoff.
    Transient,
    /// Credentials expired or rejected, app revoked: `failed`, no restart until config or credentials change.
    Fatal,
    /// The platform asked us to wait exactly this long; the attempt count does not grow.
    SlowDown(Duration),
}

/// What a failed component reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentError {
    /// How to react.
    pub class: ErrorClass,
    /// For people: what failed (never a secret, never message text).
    pub message: String,
    /// For `failed` accounts: the one thing a person can do ("run `scv-bridge login wechat phone`").
    pub action: Option<String>,
}

impl ComponentError {
    /// A transient failure.
    pub fn transient(message: impl Into<String>) -> Self {
        ComponentError {
            class: ErrorClass::Transient,
            message: message.into(),
            action: None,
        }
    }

    /// A fatal failure with the action that fixes it.
    pub fn fatal(message: impl Into<String>, action: impl Into<String>) -> Self {
        ComponentError {
            class: ErrorClass::Fatal,
            message: message.into(),
            action: Some(action.into()),
        }
    }

    /// The platform asked to wait `delay`.
    pub fn slow_down(message: impl Into<String>, delay: Duration) -> Self {
        ComponentError {
            class: ErrorClass::SlowDown(delay),
            message: message.into(),
            action: None,
        }
    }
}

impl std::fmt::Display for ComponentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(a) = &self.action {
            write!(f, "; {a}")?;
        }
        Ok(())
    }
}

/// What an account can do beyond plain text; declared, not discovered at runtime.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Shows a typing indicator while the agent works.
    pub typing: bool,
    /// Sends yes/no buttons (a question is answered by a click as well as by text).
    pub buttons: bool,
    /// Edits a message after sending it (a question shows how it ended in place).
    pub edit: bool,
    /// Is a chat where the owner reads and answers questions (not a mail account).
    pub questions: bool,
    /// Sends only within a window after the peer last wrote (WeChat); outside it messages wait.
    pub send_window: bool,
}

/// One account's connection to its platform, run and restarted by the supervisor.
pub trait Component: Send + Sync + 'static {
    /// What the account can do. Pure: no IO, no locks.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Runs until `cancel` fires (then returns `Ok(())` promptly) or a failure it cannot handle.
    ///
    /// Reports `connected` through `health` only on protocol evidence (a completed poll, a pong,
    /// an event). Called again for every restart; keep per-run state inside the future.
    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>>;
}

/// Builds the component for an account; the daemon's adapters implement it, tests inject fakes.
pub trait ComponentFactory: Send + Sync + 'static {
    /// A component for `spec`. Must not block; a component that cannot work fails in `run`.
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component>;
}
