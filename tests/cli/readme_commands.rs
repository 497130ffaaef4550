//! The README's commands stay true: every `scv-bridge ...` line in its shell blocks parses,
//! and the ones that run offline without a daemon succeed.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");
const README: &str = include_str!("../../README.md");
const DEPLOY: &str = include_str!("../../deploy/README.md");
const README_ZH: &str = include_str!("../../README.zh-CN.md");

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
        .chain(invocations(README_ZH))
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

/// The Markdown headings of `text` (outside fenced blocks), with their level.
fn headings(text: &str) -> Vec<usize> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(line.chars().take_while(|c| *c == '#').count());
        }
    }
    out
}

/// Every fenced block of `text`, fence line included.
fn fenced_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut cur, fence) {
            (None, true) => cur = Some(format!("{line}\n")),
            (Some(b), true) => {
                b.push_str(line);
                out.push(std::mem::take(b));
                cur = None;
            }
            (Some(b), false) => {
                b.push_str(line);
                b.push('\n');
            }
            (None, false) => {}
        }
    }
    out
}

#[test]
fn the_chinese_readme_keeps_in_step() {
    assert_eq!(
        headings(README),
        headings(README_ZH),
        "README.md and README.zh-CN.md have the same sections"
    );
    assert_eq!(
        fenced_blocks(README),
        fenced_blocks(README_ZH),
        "the same commands (and the same status sample) in both"
    );
    assert_eq!(invocations(README), invocations(README_ZH));
    for must in ["scv-bridge guide --lang zh-CN", "language", "README.md"] {
        assert!(README_ZH.contains(must), "README.zh-CN.md lacks {must}");
    }
    assert!(README.contains("README.zh-CN.md"), "README.md points to it");
}
