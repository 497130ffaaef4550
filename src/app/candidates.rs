//! What a Tab offers for an argument: channels, and the account names of the configuration the
//! line names (the flags in `args.rs` point here; `complete.rs` answers the shell).

use std::ffi::OsStr;
use std::path::PathBuf;

use clap_complete::engine::CompletionCandidate;

use crate::config::{Channel, Config};

/// Candidates for a channel argument.
pub fn channels(current: &OsStr) -> Vec<CompletionCandidate> {
    let now = current.to_string_lossy();
    Channel::ALL
        .into_iter()
        .map(Channel::as_str)
        .filter(|c| c.starts_with(now.as_ref()))
        .map(CompletionCandidate::new)
        .collect()
}

/// Candidates for what `login` logs in: a channel, or `agent` (the model API key).
pub fn login_targets(current: &OsStr) -> Vec<CompletionCandidate> {
    let now = current.to_string_lossy();
    let mut out = channels(current);
    if "agent".starts_with(now.as_ref()) {
        out.push(CompletionCandidate::new("agent"));
    }
    out
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
