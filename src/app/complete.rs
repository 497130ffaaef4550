//! Shell completions. Completions are clap_complete's dynamic kind: the
//! shell calls `COMPLETE=<shell> scv-bridge -- <words>` at each Tab, so account names come from
//! the configuration as it is now, not from a script generated once.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::env::Shells;

use super::args::Cli;

/// The variable the registration scripts set when they ask for candidates.
const VAR: &str = "COMPLETE";

/// Answers a shell's completion request and exits, when this process is one (`COMPLETE` set);
/// returns at once otherwise. Call before parsing the command line.
pub fn answer_shell() {
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .complete();
}

/// `scv-bridge completions SHELL`: the script a shell sources to ask this binary at each Tab.
pub fn registration(shell: &str, out: &mut dyn Write) -> Result<(), String> {
    let shells = Shells::builtins();
    let Some(completer) = shells.completer(shell) else {
        let names: Vec<&str> = shells.names().collect();
        return Err(format!(
            "no completions for the shell '{shell}'; expected one of {}",
            names.join(", ")
        ));
    };
    // The script calls this very binary, so completions match the release that wrote them.
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "scv-bridge".into());
    let written = completer.write_registration(VAR, "scv-bridge", "scv-bridge", &exe, out);
    quiet_pipe(written).map_err(|e| format!("cannot write the completions: {e}"))
}

/// A write whose reader went away (`... | head`) is done, not failed: the reader has what it
/// wanted, and a shell pipeline should not print an error for it.
pub fn quiet_pipe(written: std::io::Result<()>) -> std::io::Result<()> {
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Prints `text` on stdout, quietly done when the reader has gone (see [`quiet_pipe`]).
pub fn print_text(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    quiet_pipe(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
        .map_err(|e| format!("cannot write to stdout: {e}"))
}
