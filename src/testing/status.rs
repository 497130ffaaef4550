//! A running daemon read the way `scv-bridge status` reads it, for tests and benches.

use crate::daemon::RunningDaemon;
use crate::protocol::{DaemonCommand, DaemonStatus};

/// The daemon's status over its real control socket (what `scv-bridge status --json` prints).
pub async fn daemon_status(d: &RunningDaemon) -> DaemonStatus {
    crate::client::request(&d.socket, DaemonCommand::Status)
        .await
        .expect("the daemon answers status on its control socket")
}
