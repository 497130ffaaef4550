//! Protocol evidence (a completed poll, a pong, an event, an IDLE response, a NOOP) moves the
//! account's `last_success`, and costs at most one health write a second however fast it comes.

use crate::protocol::ComponentState;
use crate::supervisor::{HealthHandle, unix_now};

/// The platform just answered: connected, with `last_success` now.
///
/// `last_success` counts whole seconds, so a second write within the same second would change
/// nothing people can see: it is skipped while the account already shows connected this second.
pub(crate) fn heard(health: &HealthHandle) {
    let h = health.get();
    if h.state == ComponentState::Connected && h.last_success_unix_seconds == Some(unix_now()) {
        return;
    }
    health.connected();
}
