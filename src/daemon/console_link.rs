//! The console as the daemon knows it: where it is served (once it listens), the `console`
//! object of the status (with its warning when it listens beyond this machine), and
//! `console_link`, which makes a one-time login link.

use super::{CommandError, ConsoleKeys, Core};
use crate::protocol::{DaemonStatus, ErrorCode};

impl Core {
    /// The `console` object of the status (with a one-time `link` when asked for one).
    pub(super) fn console_status(
        &self,
        link: Option<String>,
    ) -> Option<Box<crate::protocol::ConsoleStatus>> {
        let addr = *self.console_listen.get()?;
        let warning = (!addr.ip().is_loopback()).then(|| {
            format!(
                "the console listens on {addr}, beyond this machine: anyone who can reach it may try to log in, and it is plain HTTP; set console_listen = \"127.0.0.1:{}\" and use `ssh -L {}:127.0.0.1:{} HOST`",
                addr.port(),
                addr.port(),
                addr.port()
            )
        });
        Some(Box::new(crate::protocol::ConsoleStatus {
            listen: addr.to_string(),
            warning,
            link: link.map(|token| format!("http://{}/login?token={token}", link_host(addr))),
        }))
    }

    /// Says the console now listens on `addr` (its server, once bound), so status shows it.
    pub fn console_served(&self, addr: std::net::SocketAddr) {
        let _ = self.console_listen.set(addr);
    }

    /// The console's links and sessions.
    pub fn console_keys(&self) -> &ConsoleKeys {
        &self.console_keys
    }

    /// A new one-time login link, for the process that serves the console to show its owner
    /// at start; `None` when no console is served.
    pub fn one_time_link(&self) -> Option<String> {
        self.console_listen.get()?;
        self.console_status(Some(self.console_keys.make_link()))?
            .link
    }

    /// Answers `console_link`: the status's `console` with a new one-time link.
    pub(super) fn console_link(&self) -> Result<DaemonStatus, CommandError> {
        if self.console_listen.get().is_none() {
            return Err(CommandError::new(
                ErrorCode::Unavailable,
                "this daemon serves no console: console_listen is \"off\", or its address could not be bound (the daemon's log says why); fix console_listen and restart the daemon",
            ));
        }
        let mut status = self.status_with(Vec::new());
        status.console = self.console_status(Some(self.console_keys.make_link()));
        Ok(status)
    }
}

/// The host a link names: an unspecified address (`0.0.0.0`) is reached on this machine.
fn link_host(addr: std::net::SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        format!("127.0.0.1:{}", addr.port())
    } else {
        addr.to_string()
    }
}
