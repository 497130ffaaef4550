//! The `Component` trait every account implements, and the failure it reports.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::health::HealthHandle;
use crate::config::AccountSpec;

/// What a failed component reports: the daemon's one failure type, whose class the lifecycle
/// acts on (`Fatal` ends in `failed`, `SlowDown` waits exactly, anything else backs off).
pub type ComponentError = crate::failure::Failure;

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
    /// Shows a spoken answer (Ogg Opus the bridge made) as a voice bubble; without it no answer
    /// is spoken at all and `/voice` says so.
    pub voice_bubbles: bool,
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
