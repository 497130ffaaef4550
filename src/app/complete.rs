//! Shell completions and the manual page. Completions are clap_complete's dynamic kind: the
//! shell calls `COMPLETE=<shell> scv-bridge -- <words>` at each Tab, so account names come from
//! the configuration as it is now, not from a script generated once.

use std::ffi::OsStr;
use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;
use clap_complete::env::Shells;

use super::args::Cli;
use crate::config::{Channel, Config};

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
    completer
        .write_registration(VAR, "scv-bridge", "scv-bridge", &exe, out)
        .map_err(|e| format!("cannot write the completions: {e}"))
}

/// `scv-bridge man`: the manual page (roff), built from the same flags as `--help`.
pub fn man_page(out: &mut dyn Write) -> Result<(), String> {
    clap_mangen::Man::new(Cli::command())
        .render(out)
        .map_err(|e| format!("cannot write the manual page: {e}"))
}

/// Candidates for a channel argument.
pub fn channels(current: &OsStr) -> Vec<CompletionCandidate> {
    let now = current.to_string_lossy();
    ["wechat", "feishu", "mail"]
        .into_iter()
        .filter(|c| c.starts_with(now.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}

/// Candidates for an account name: the configured accounts, of the channel named on the line
/// when one is (`login wechat <Tab>`, `channel enable mail <Tab>`).
pub fn accounts(current: &OsStr) -> Vec<CompletionCandidate> {
    let words = words();
    let channel = words.iter().rev().skip(1).find_map(|w| Channel::parse(w));
    let now = current.to_string_lossy();
    let mut names: Vec<String> = configured(&words)
        .into_iter()
        .filter(|(c, _)| channel.is_none_or(|ch| ch == *c))
        .map(|(_, a)| a)
        .filter(|a| a.starts_with(now.as_ref()))
        .collect();
    names.sort();
    names.dedup();
    names.into_iter().map(CompletionCandidate::new).collect()
}

/// Candidates for `CHANNEL:ACCOUNT` (`confirm --chat`).
pub fn account_keys(current: &OsStr) -> Vec<CompletionCandidate> {
    let now = current.to_string_lossy();
    configured(&words())
        .into_iter()
        .map(|(c, a)| format!("{c}:{a}"))
        .filter(|k| k.starts_with(now.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}

/// The words of the line being completed (after the `--` the registration script passes).
fn words() -> Vec<String> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--") {
        Some(i) => args[i + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// The accounts of the configuration the line names (`--config FILE`), else the default one.
/// A missing or broken file offers nothing: completion must never print an error.
fn configured(words: &[String]) -> Vec<(Channel, String)> {
    let explicit = words.iter().enumerate().find_map(|(i, w)| {
        if let Some(p) = w.strip_prefix("--config=") {
            return Some(PathBuf::from(p));
        }
        (w == "--config").then(|| words.get(i + 1).map(PathBuf::from))?
    });
    let path = Config::default_path(explicit.as_deref());
    match Config::load(&path) {
        Ok(c) => c
            .accounts
            .keys()
            .map(|k| (k.channel, k.account.clone()))
            .collect(),
        Err(_) => Vec::new(),
    }
}
