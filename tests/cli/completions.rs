//! Shell completions and the manual page through the real binary: each shell's script asks the
//! binary at each Tab, which offers the subcommands and the account names of the configuration.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

/// What the shell would offer for `line` (its words; the last one is being typed), as fish asks.
fn offered(line: &[&str], env: &[(&str, &Path)]) -> Vec<String> {
    let mut cmd = Command::new(BIN);
    cmd.env("COMPLETE", "fish")
        .env_remove("SCV_BRIDGE_CONFIG")
        .arg("--")
        .args(line);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect()
}

/// The candidates that are values, not flags (an empty word is offered the flags too).
fn values(all: Vec<String>) -> Vec<String> {
    all.into_iter().filter(|c| !c.starts_with('-')).collect()
}

fn config(dir: &Path) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\n[wechat.phone]\n[wechat.home]\n[feishu.work]\n\
         [mail.box]\nimap_host = \"imap.example.com\"\nusername = \"me\"\n",
        dir.join("state").display()
    );
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn every_shell_gets_a_script_that_asks_this_binary() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .expect("run");
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("COMPLETE") && text.contains("scv-bridge"),
            "{shell}: {text}"
        );
    }
}

#[test]
fn the_subcommands_complete() {
    let subs = offered(&["scv-bridge", ""], &[]);
    for s in [
        "run",
        "status",
        "doctor",
        "login",
        "channel",
        "init",
        "man",
        "completions",
    ] {
        assert!(subs.iter().any(|x| x == s), "{s} missing from {subs:?}");
    }
    assert_eq!(offered(&["scv-bridge", "do"], &[]), ["doctor"]);
}

#[test]
fn account_names_come_from_the_configuration_the_line_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = config(dir.path());
    let p = path.to_str().expect("utf-8");
    let with = |words: &[&str]| {
        let mut line = vec!["scv-bridge", "--config", p];
        line.extend_from_slice(words);
        values(offered(&line, &[]))
    };
    assert_eq!(with(&["login", "wechat", ""]), ["home", "phone"]);
    assert_eq!(with(&["login", "wechat", "p"]), ["phone"]);
    assert_eq!(with(&["channel", "disable", "feishu", ""]), ["work"]);
    assert_eq!(with(&["channel", "enable", "m"]), ["mail"]);
    let keys = with(&["confirm", "q", "--chat", ""]);
    assert!(
        keys.contains(&"feishu:work".to_string()) && keys.contains(&"wechat:phone".to_string()),
        "{keys:?}"
    );
    // Without --config on the line, the file $SCV_BRIDGE_CONFIG names.
    assert_eq!(
        values(offered(
            &["scv-bridge", "login", "mail", ""],
            &[("SCV_BRIDGE_CONFIG", &path)]
        )),
        ["box"]
    );
    // A missing file offers nothing, and says nothing.
    let none = dir.path().join("none.toml");
    let n = none.to_str().expect("utf-8");
    assert!(
        values(offered(
            &["scv-bridge", "--config", n, "login", "wechat", ""],
            &[]
        ))
        .is_empty()
    );
}

#[test]
fn the_manual_page_renders_with_every_subcommand() {
    let out = Command::new(BIN).arg("man").output().expect("run");
    assert!(out.status.success());
    let roff = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(roff.contains(".TH scv-bridge 1"), "{roff}");
    assert!(roff.contains(".SH COMMANDS"), "{roff}");
    // No pointer at a page nobody installs (`scv-bridge-run(1)`).
    assert!(!roff.contains("(1)"), "{roff}");
    // groff (what `man` uses) formats it without a warning, where it is installed.
    let Ok(mut groff) = Command::new("groff")
        // -P-cbou: plain characters, no overstriking for bold and underline.
        .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        println!("groff is not installed here: the page was not formatted");
        return;
    };
    groff
        .stdin
        .take()
        .expect("stdin")
        .write_all(roff.as_bytes())
        .expect("write");
    let shown = groff.wait_with_output().expect("groff");
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(shown.status.success() && stderr.is_empty(), "{stderr}");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("NAME") && text.contains("COMMANDS"), "{text}");
    // Every subcommand, nested ones included, has its subsection with its synopsis and flags.
    let help = Command::new(BIN).arg("--help").output().expect("help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let listed: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .expect("help lists commands")
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        // clap's own `help` only prints what the page says.
        .filter(|s| *s != "help")
        .collect();
    assert!(listed.len() >= 12, "{listed:?}");
    for s in listed {
        assert!(
            text.contains(&format!("\n   scv-bridge {s}\n")),
            "{s} missing: {text}"
        );
    }
    // Each platform's login options, from its login steps.
    assert!(
        text.contains("login feishu ACCOUNT  --app-id APP_ID"),
        "{text}"
    );
    assert!(text.contains("login mail ACCOUNT  (none"), "{text}");
    for nested in ["scv-bridge channel set", "scv-bridge config example"] {
        assert!(
            text.contains(&format!("\n   {nested}\n")),
            "{nested}: {text}"
        );
    }
    assert!(text.contains("--timeout"), "{text}");
    assert!(text.contains("--watch"), "{text}");
}
