//! The terminal as a login's UI: lines on stdout, QR codes as half blocks with their link,
//! questions through `prompt` (echo off for secrets; one line of stdin when piped).

use std::io::Write;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::port::login_flow::{Field, LoginUi, Shown};

/// Shows a login on this process's terminal.
pub(super) struct Terminal;

impl LoginUi for Terminal {
    fn show(&mut self, shown: Shown) {
        let mut out = std::io::stdout().lock();
        // A closed stdout cannot be told anything; the login's result still says what happened.
        let _ = match shown {
            Shown::Line(line) => writeln!(out, "{line}"),
            Shown::Qr {
                app,
                url,
                number,
                of,
            } => {
                let art = scv_net::qr::render_qr_terminal(&url, true).unwrap_or_default();
                writeln!(
                    out,
                    "\nScan with {app} (code {number} of {of}):\n{art}\nor open: {url}"
                )
            }
        };
        let _ = out.flush();
    }

    fn ask<'a>(&'a mut self, field: &'a Field) -> BoxFuture<'a, Result<String, String>> {
        let (label, hidden) = (field.prompt.unwrap_or(field.name), field.hidden);
        tokio::task::spawn_blocking(move || super::prompt::line(label, hidden))
            .map(|r| r.map_err(|e| e.to_string()).and_then(|r| r))
            .boxed()
    }
}
