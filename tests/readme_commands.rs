//! The README's commands stay true: every `scv-bridge ...` line in its shell blocks parses,
//! and the ones that run offline without a daemon succeed.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");
const README: &str = include_str!("../README.md");
const DEPLOY: &str = include_str!("../deploy/README.md");

/// Every `scv-bridge ...` invocation in ```sh blocks, as argument lists (without the program name).
fn invocations(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = t == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        // The command may follow `sudo -u x`, `docker exec ... scv-bridge`, or a path.
        let words = shell_words(t);
        // The last bare `scv-bridge` word that is not an option's value (`-t scv-bridge`, a user,
        // a container or an image name) is the command.
        // `cargo run [--release] -- ARGS` runs the binary with ARGS.
        if words.first().map(String::as_str) == Some("cargo")
            && words.get(1).map(String::as_str) == Some("run")
            && let Some(dd) = words.iter().position(|w| w == "--")
        {
            out.push(words[dd + 1..].to_vec());
            continue;
        }
        let Some(pos) = (0..words.len())
            .rev()
            .find(|&i| words[i] == "scv-bridge" && (i == 0 || !words[i - 1].starts_with('-')))
        else {
            continue;
        };
        let mut args: Vec<String> = Vec::new();
        for w in &words[pos + 1..] {
            if matches!(w.as_str(), "&&" | "|" | ";") || w.starts_with('#') {
                break;
            }
            args.push(w.clone());
        }
        if !args.is_empty() {
            out.push(args);
        }
    }
    out
}

/// Splits a shell line into words, honouring single and double quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[test]
fn every_readme_command_parses() {
    let all: Vec<Vec<String>> = invocations(README)
        .into_iter()
        .chain(invocations(DEPLOY))
        .collect();
    assert!(all.len() >= 4, "found {all:?}");
    for args in all {
        // `--help` after the words makes clap check the subcommand and flags without running them.
        let out = Command::new(BIN)
            .args(&args)
            .arg("--help")
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "`scv-bridge {}` does not parse: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn offline_readme_commands_run() {
    let out = Command::new(BIN)
        .args(["completions", "bash"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let out = Command::new(BIN).arg("--help").output().expect("run");
    let help = String::from_utf8_lossy(&out.stdout);
    for sub in [
        "run",
        "status",
        "doctor",
        "reload",
        "login",
        "channel",
        "confirm",
        "completions",
    ] {
        assert!(help.contains(sub), "`{sub}` missing from --help");
        assert!(
            README.contains(&format!("scv-bridge {sub}")) || README.contains(&format!("`{sub}`")),
            "README omits {sub}"
        );
    }
}
