//! SIGHUP reloads the configuration, as the convention for daemons has it, instead of ending
//! the process (the signal's default): a supervisor's `reload` or a `kill -HUP` after editing
//! the file does what `scv-bridge reload` does over the socket.

use std::sync::Arc;

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::daemon::Core;

/// Takes SIGHUP away from its default action. Called before the daemon starts, so a hangup
/// while it opens the store and starts accounts is kept for later, never fatal.
pub(super) fn listen() -> Option<Signal> {
    match signal(SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; reload with `scv-bridge reload`");
            None
        }
    }
}

/// Reloads on every SIGHUP until the process ends. A refused reload keeps the configuration the
/// daemon runs with and says why, as `scv-bridge reload` would print it.
pub(super) async fn reload_on_hangup(mut hangups: Signal, core: Arc<Core>) {
    while hangups.recv().await.is_some() {
        tracing::info!("SIGHUP received: reloading the configuration");
        if let Err(e) = core.reload().await {
            tracing::warn!(error = %e.message, "the reload SIGHUP asked for was refused; the daemon keeps running with its configuration");
        }
    }
}
