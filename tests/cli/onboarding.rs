//! From install to a working configuration, with the real binary: `config example`, the hint a
//! missing file gives, `login agent`, doctor's key check, and `init` without a terminal.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use scv_bridge::config::Config;
use scv_bridge::secrets::{AGENT_KEY_ID, API_KEY_FIELD, CredentialStore, Credentials, Secret};
use scv_bridge::testing::fake_openai::FakeOpenAi;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

/// Runs the binary with `stdin`, no key variables, and every proxy pointed at `proxy` (a
/// loopback fake), so no check can leave this machine.
fn cli(args: &[&str], stdin: &str, proxy: Option<&str>) -> Output {
    cli_env(args, stdin, proxy, &[])
}

/// [`cli`] with more environment variables.
fn cli_env(args: &[&str], stdin: &str, proxy: Option<&str>, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(BIN);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("SCV_BRIDGE_CONFIG")
        .env_remove("RUST_LOG")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(p) = proxy {
        for var in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
        ] {
            cmd.env(var, p);
        }
    }
    let mut child = cmd.spawn().expect("run the binary");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `http://127.0.0.1:PORT` of a fake, as a proxy address.
fn proxy_of(fake: &FakeOpenAi) -> String {
    fake.base_url().trim_end_matches("/v1").to_string()
}

fn write_config(dir: &Path, agent: &str) -> PathBuf {
    let state = dir.join("state");
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[agent]\n{agent}",
        state.display(),
        dir.join("run/daemon.sock").display()
    );
    std::fs::write(&path, text).expect("config");
    path
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("meta").permissions().mode() & 0o777
}

#[test]
fn config_example_prints_the_shipped_example_and_it_parses() {
    let out = cli(&["config", "example"], "", None);
    assert!(out.status.success(), "{}", text(&out));
    let printed = String::from_utf8(out.stdout).expect("utf-8");
    // The binary prints its platforms' parts put together; with only the released platforms
    // that is `config/example.toml` (the library's unit test pins the file to it).
    let assembled = scv_bridge::app::example::example(&scv_bridge::config::Channel::ALL);
    assert_eq!(printed, assembled);
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
            .expect("example");
    for table in shipped.lines().filter(|l| l.starts_with('[')) {
        assert!(
            printed.lines().any(|l| l == table),
            "{table} is not printed"
        );
    }
    let cfg = Config::parse(Path::new("/x/config.toml"), &printed).expect("parses");
    // A local model needs no key, so the example names no key variable beside its local URL.
    assert!(scv_bridge::agent::key::is_local(
        cfg.agent.base_url.as_deref().expect("base_url")
    ));
    assert_eq!(cfg.agent.api_key_env, None);
}

#[test]
fn a_missing_configuration_says_how_to_get_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nowhere.toml");
    let out = cli(
        &[
            "--config",
            path.to_str().expect("utf-8"),
            "login",
            "wechat",
            "phone",
        ],
        "",
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out);
    assert!(
        err.contains(&format!(
            "run `scv-bridge --config {} init` to write one, or `scv-bridge config example` for every key",
            path.display()
        )),
        "{err}"
    );
    assert!(!err.contains("config/example.toml"), "{err}");
}

/// `run` with no file is a first run: the daemon runs on the built-in defaults (no accounts, the
/// console on this machine) and says where to set it up; off a terminal it prints the command
/// that makes a login link, never a link itself (its output may be a log). Nothing is written.
#[test]
fn a_first_run_without_configuration_runs_on_defaults_and_says_where_to_set_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nowhere.toml");
    let env = |c: &mut Command| {
        c.arg("--config")
            .arg(&path)
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("XDG_RUNTIME_DIR", dir.path().join("run"))
            .env_remove("SCV_BRIDGE_CONFIG");
    };
    let mut run = Command::new(BIN);
    env(&mut run);
    let mut daemon = run
        .arg("run")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut out = std::io::BufReader::new(daemon.stdout.take().expect("stdout"));
    let mut said = String::new();
    while !said.contains("Set it up in the console") {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut out, &mut line).expect("read");
        assert!(n > 0, "the daemon ended: {said}");
        said.push_str(&line);
    }
    assert!(
        said.contains(&format!("No configuration at {} yet", path.display())),
        "{said}"
    );
    let console = format!("scv-bridge --config {} console", path.display());
    assert!(said.contains(&console), "{said}");
    assert!(!said.contains("token="), "a link off a terminal: {said}");
    let mut status = Command::new(BIN);
    env(&mut status);
    let status = status.args(["status", "--json"]).output().expect("status");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(v["components"].as_array().map(Vec::len), Some(0), "{v}");
    // SAFETY: the child's pid; SIGTERM is its documented stop.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    assert!(daemon.wait().expect("wait").success());
    assert!(!path.exists(), "nothing is written without the owner");
}

#[tokio::test]
async fn login_agent_checks_the_key_and_keeps_it_in_the_credential_store() {
    let fake = FakeOpenAi::start().await.expect("fake");
    fake.require_key("sk-right");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!("base_url = \"{}\"\nmodel = \"m\"\n", fake.base_url()),
    );
    let c = config.to_str().expect("utf-8").to_string();
    let store = CredentialStore::Files(dir.path().join("state/credentials"));

    let wrong = {
        let c = c.clone();
        tokio::task::spawn_blocking(move || {
            cli(&["--config", &c, "login", "agent"], "sk-wrong\n", None)
        })
        .await
        .expect("join")
    };
    assert_eq!(wrong.status.code(), Some(1), "{}", text(&wrong));
    assert!(
        text(&wrong).contains("rejected the key (HTTP 401)"),
        "{}",
        text(&wrong)
    );
    assert_eq!(
        store.agent_key().expect("load"),
        None,
        "a rejected key is not stored"
    );

    let right = tokio::task::spawn_blocking(move || {
        cli(&["--config", &c, "login", "agent"], "sk-right\n", None)
    })
    .await
    .expect("join");
    assert!(right.status.success(), "{}", text(&right));
    assert!(!text(&right).contains("sk-right"), "{}", text(&right));
    assert_eq!(
        store.agent_key().expect("load"),
        Some(Secret::new("sk-right"))
    );
    assert_eq!(
        mode(&dir.path().join("state/credentials/agent-openai.json")),
        0o600
    );
}

#[tokio::test]
async fn doctor_fails_a_remote_endpoint_without_a_key_and_passes_with_the_stored_one() {
    let fake = FakeOpenAi::start().await.expect("fake");
    fake.require_key("sk-stored");
    let dir = tempfile::tempdir().expect("tempdir");
    // A host that is not this machine; the proxy (the fake, on loopback) answers for it.
    let remote = "http://models.example.net/v1";
    let config = write_config(
        dir.path(),
        &format!("base_url = \"{remote}\"\nmodel = \"m\"\n"),
    );
    let c = config.to_str().expect("utf-8").to_string();
    let proxy = proxy_of(&fake);
    let doctor = |c: String, p: String| {
        tokio::task::spawn_blocking(move || cli(&["--config", &c, "doctor"], "", Some(&p)))
    };

    let out = doctor(c.clone(), proxy.clone()).await.expect("join");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "FAIL  agent: no API key for {remote} (the endpoint is not on this machine)\n      fix: run `scv-bridge --config {c} login agent` to store the key"
        )),
        "{said}"
    );

    CredentialStore::Files(dir.path().join("state/credentials"))
        .save(
            AGENT_KEY_ID,
            &Credentials::default().with(API_KEY_FIELD, "sk-stored"),
        )
        .expect("store the key");
    let out = doctor(c, proxy).await.expect("join");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("ok    agent: an API key is stored (login agent)"),
        "{said}"
    );
    assert!(
        said.contains(&format!("ok    agent: {remote}/models answers HTTP 200")),
        "{said}"
    );
    assert!(!said.contains("sk-stored"), "{said}");
}

#[tokio::test]
async fn init_without_a_terminal_writes_a_private_file_that_a_rerun_only_extends() {
    let fake = FakeOpenAi::start().await.expect("fake");
    fake.require_key("sk-init");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("conf/config.toml");
    let p = path.to_str().expect("utf-8").to_string();
    let state = dir.path().join("state");
    let base = fake.base_url();
    let proxy = proxy_of(&fake);
    let init = |extra: Vec<String>, stdin: &'static str| {
        let (p, proxy) = (p.clone(), proxy.clone());
        tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "--config".to_string(),
                p,
                "init".into(),
                "--non-interactive".into(),
            ];
            args.extend(extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cli(&args, stdin, Some(&proxy))
        })
    };
    let first_flags = |key: bool| {
        let mut f = vec![
            "--agent".to_string(),
            "openai".into(),
            "--base-url".into(),
            base.clone(),
            "--model".into(),
            "m".into(),
            "--wechat".into(),
            "phone".into(),
            "--state-dir".into(),
            state.display().to_string(),
            "--credentials".into(),
            "file".into(),
        ];
        if key {
            f.push("--api-key-stdin".into());
        }
        f
    };

    // No key: the endpoint refuses, and nothing is written.
    let out = init(first_flags(false), "").await.expect("join");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("nothing was written"), "{}", text(&out));
    assert!(!path.exists());

    let out = init(first_flags(true), "sk-init\n").await.expect("join");
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("written (mode 0600)") && said.contains("== doctor =="),
        "{said}"
    );
    assert!(
        said.contains("ok    agent: an API key is stored (login agent)"),
        "{said}"
    );
    assert!(!said.contains("sk-init"), "{said}");
    assert_eq!(mode(&path), 0o600);
    let first = std::fs::read_to_string(&path).expect("written");
    assert!(!first.contains("sk-init"), "{first}");
    let cfg = Config::load(&path).expect("the written file loads");
    assert_eq!(cfg.agent.base_url.as_deref(), Some(base.as_str()));
    assert_eq!(cfg.agent.api_key_env, None);
    assert_eq!(
        cfg.accounts
            .keys()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        ["wechat:phone"]
    );
    assert_eq!(
        CredentialStore::Files(state.join("credentials"))
            .agent_key()
            .expect("load"),
        Some(Secret::new("sk-init"))
    );

    // A re-run that adds Feishu keeps every byte that was there (the key is stored already).
    let out = init(
        vec!["--feishu".into(), "work".into(), "--skip-doctor".into()],
        "",
    )
    .await
    .expect("join");
    assert!(out.status.success(), "{}", text(&out));
    let second = std::fs::read_to_string(&path).expect("read");
    assert!(second.starts_with(&first), "{first}\n---\n{second}");
    assert!(second[first.len()..].contains("[feishu.work]"), "{second}");
    assert_eq!(mode(&path), 0o600);

    // Changing the model changes that one line.
    let out = init(
        vec!["--model".into(), "m2".into(), "--skip-doctor".into()],
        "",
    )
    .await
    .expect("join");
    assert!(out.status.success(), "{}", text(&out));
    let third = std::fs::read_to_string(&path).expect("read");
    let changed: Vec<(&str, &str)> = second
        .lines()
        .zip(third.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(changed, [("model = \"m\"", "model = \"m2\"")]);
    assert_eq!(second.lines().count(), third.lines().count());
}

#[test]
fn init_on_a_pipe_without_non_interactive_says_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.toml");
    let out = cli(
        &["--config", path.to_str().expect("utf-8"), "init"],
        "",
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("--non-interactive"), "{}", text(&out));
    assert!(!path.exists());
}

#[tokio::test]
async fn the_state_directory_follows_xdg_state_home() {
    let fake = FakeOpenAi::start().await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        format!(
            "[agent]\nbase_url = \"{}\"\nmodel = \"m\"\n",
            fake.base_url()
        ),
    )
    .expect("config");
    let (xdg, run) = (dir.path().join("xdg"), dir.path().join("run"));
    let p = path.clone();
    let out = tokio::task::spawn_blocking(move || {
        cli_env(
            &["--config", p.to_str().expect("utf-8"), "doctor"],
            "",
            None,
            &[("XDG_STATE_HOME", &xdg), ("XDG_RUNTIME_DIR", &run)],
        )
    })
    .await
    .expect("join");
    let said = text(&out);
    assert!(
        said.contains(&format!(
            "store {} not created yet",
            dir.path().join("xdg/scv-bridge/state.db").display()
        )),
        "{said}"
    );
}

#[test]
fn status_quiet_without_a_daemon_exits_1_and_prints_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_config(dir.path(), "model = \"m\"\n");
    let out = cli(
        &[
            "--config",
            path.to_str().expect("utf-8"),
            "status",
            "--quiet",
        ],
        "",
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{}",
        text(&out)
    );
}

#[test]
fn the_guide_login_feishu_points_to_is_built_in_in_both_languages() {
    let line = scv_bridge::adapters::feishu::login::guide_line();
    assert!(line.contains("`scv-bridge guide`"), "{line}");
    for (args, file) in [
        (&["guide", "--lang", "en"][..], "docs/setup.md"),
        (&["guide", "--lang", "zh-CN"][..], "docs/setup.zh-CN.md"),
    ] {
        let out = cli(args, "", None);
        assert!(out.status.success(), "{}", text(&out));
        let shipped = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
            .expect("guide");
        let printed = String::from_utf8(out.stdout).expect("utf-8");
        // Rendered for a terminal: every heading of the file, without its marks.
        for heading in shipped.lines().filter(|l| l.starts_with('#')) {
            let title = heading.trim_start_matches('#').trim().replace("**", "");
            assert!(printed.contains(&format!("{title}\n")), "{file}: {title}");
        }
        // What a Feishu app needs, in either language.
        for must in [
            "im:message.p2p_msg:readonly",
            "im:message:send_as_bot",
            "cardkit:card:write",
            "im:resource",
            "im:message.reactions:write_only",
            "im.message.receive_v1",
            "card.action.trigger",
            "scv-bridge login wechat phone",
            "scv-bridge login agent",
        ] {
            assert!(printed.contains(must), "{file} lacks {must}");
        }
    }
}

/// The fallback line of `credentials = "auto"` where no keyring works.
const FALLBACK: &str = "no Secret Service on D-Bus";

#[test]
fn the_keyring_fallback_line_is_for_the_daemon_once_never_for_commands_and_plain_when_piped() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"auto\"\n[agent]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            state.display(),
            dir.path().join("run/d.sock").display()
        ),
    )
    .expect("config");
    let p = path.to_str().expect("utf-8");
    let mut cmd = Command::new(BIN);
    cmd.args(["--config", p, "doctor"]).env("RUST_LOG", "info");
    let out = cmd.output().expect("doctor");
    assert!(!text(&out).contains(FALLBACK), "{}", text(&out));

    let mut daemon = Command::new(BIN)
        .args(["--config", p, "run"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let mut log = BufReader::new(daemon.stderr.take().expect("stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            log.read_line(&mut line).expect("read") > 0,
            "exited: {seen}"
        );
        seen.push_str(&line);
        if line.contains("scv-bridge is running") {
            break;
        }
    }
    // The line comes before "running"; how the daemon stops is not under test here.
    let _ = daemon.kill();
    let _ = daemon.wait();
    // stderr is a pipe here, as under systemd or docker: no colour escapes.
    assert!(
        !seen.contains('\x1b'),
        "ANSI escapes in a piped log: {seen:?}"
    );
    // Whether this machine has a working keyring, asked the same way without the line.
    let probe = tempfile::tempdir().expect("tempdir");
    let fell_back = matches!(
        CredentialStore::open_quietly(scv_bridge::config::CredentialsMode::Auto, probe.path()),
        Ok(CredentialStore::Files(_))
    );
    assert_eq!(
        seen.matches(FALLBACK).count(),
        usize::from(fell_back),
        "{seen}"
    );
}

#[test]
fn version_names_the_commit() {
    let out = cli(&["--version"], "", None);
    assert!(out.status.success());
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(ROOT_DIR)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let commit = std::env::var("SCV_BRIDGE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or(head)
        .unwrap_or_else(|| "unknown".into());
    assert_eq!(
        line,
        format!("scv-bridge {} ({commit})", env!("CARGO_PKG_VERSION"))
    );
}

const ROOT_DIR: &str = env!("CARGO_MANIFEST_DIR");
