//! `init` through the real binary, without a terminal: what a real set-up needs comes from
//! flags (the mail server's port, TLS and CA, the Feishu domain, the WeChat endpoint, the
//! workspace, notify, the timezone, an ACP agent), the digests and `notify` default to the chat
//! set up now; a failed service install exits non-zero; with a daemon already running, the last
//! line says to reload, not to start another.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use scv_bridge::adapters::feishu::FeishuSettings;
use scv_bridge::adapters::wechat::WechatSettings;
use scv_bridge::config::{AccountKey, AgentBackend, ChannelSettings, Config, MailTls};

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

fn init(config: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--config")
        .arg(config)
        .args(["init", "--non-interactive", "--skip-doctor"])
        .args(args)
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env_remove("SCV_BRIDGE_CONFIG")
        .stdin(Stdio::null())
        .output()
        .expect("run init")
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn key(s: &str) -> AccountKey {
    AccountKey::parse(s).expect("key")
}

#[test]
fn flags_give_everything_a_real_setup_needs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    let ws = dir.path().join("ws");
    let out = init(
        &config,
        dir.path(),
        &[
            "--agent",
            "acp",
            "--acp-command",
            "claude-agent-acp",
            "--api-key-env",
            "ANTHROPIC_API_KEY",
            "--wechat",
            "phone",
            "--wechat-base-url",
            "https://ilink.example.com",
            "--feishu",
            "work",
            "--feishu-domain",
            "lark",
            "--workspace",
            ws.to_str().expect("utf-8"),
            "--timezone",
            "Europe/Berlin",
            "--speech-url",
            "http://127.0.0.1:8000/v1",
            "--mail",
            "box",
            "--imap-host",
            "mail.example.com",
            "--imap-port",
            "1143",
            "--tls",
            "starttls",
            "--tls-ca",
            "/etc/ssl/private-ca.pem",
            "--username",
            "me",
            "--credentials",
            "file",
        ],
    );
    assert!(out.status.success(), "{}", said(&out));
    let cfg = Config::load(&config).expect("the written file loads");
    assert_eq!(cfg.agent.backend, AgentBackend::Acp);
    assert_eq!(cfg.agent.command.as_deref(), Some("claude-agent-acp"));
    assert_eq!(cfg.agent.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
    assert_eq!(cfg.timezone, Some(chrono_tz::Europe::Berlin));
    assert_eq!(
        cfg.speech.base_url.as_deref(),
        Some("http://127.0.0.1:8000/v1")
    );
    // Without --notify and --mail-chat, both are the chat set up now.
    assert_eq!(cfg.notify, Some(key("wechat:phone")));
    for chat in ["wechat:phone", "feishu:work"] {
        assert_eq!(
            cfg.accounts[&key(chat)].workspace.as_deref(),
            Some(ws.as_path())
        );
    }
    let w = WechatSettings::of(&cfg.accounts[&key("wechat:phone")].settings);
    assert_eq!(w.base_url.as_deref(), Some("https://ilink.example.com"));
    let f = FeishuSettings::of(&cfg.accounts[&key("feishu:work")].settings);
    assert_eq!(f.domain.as_deref(), Some("lark"));
    let ChannelSettings::Mail(m) = &cfg.accounts[&key("mail:box")].settings else {
        panic!("mail settings")
    };
    assert_eq!(
        (m.imap_port, m.tls, m.tls_ca.as_deref()),
        (
            Some(1143),
            MailTls::Starttls,
            Some("/etc/ssl/private-ca.pem")
        )
    );
    assert_eq!(m.report_to, Some(key("wechat:phone")));
    let text = said(&out);
    assert!(text.contains("agent: acp"), "{text}");
    assert!(
        text.trim_end()
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("next: `") && l.ends_with(" run`")),
        "{text}"
    );
}

/// Any chat platform is set up the same way: `--chat CHANNEL:ACCOUNT`, its set-up answers with
/// `--setup KEY=VALUE`; an answer no new account asks, or a channel that is no chat platform, is
/// refused before anything is written.
#[test]
fn any_chat_platform_is_set_up_by_the_same_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    let chats = ["--chat", "telegram:bot", "--chat", "feishu:work"];
    let out = init(
        &config,
        dir.path(),
        &[&chats[..], &["--setup", "domain=lark"]].concat(),
    );
    assert!(out.status.success(), "{}", said(&out));
    let cfg = Config::load(&config).expect("the written file loads");
    assert!(cfg.accounts.contains_key(&key("telegram:bot")));
    let f = FeishuSettings::of(&cfg.accounts[&key("feishu:work")].settings);
    assert_eq!(f.domain.as_deref(), Some("lark"));
    assert_eq!(
        cfg.notify,
        Some(key("telegram:bot")),
        "the first chat given"
    );
    for (args, says) in [
        (
            &["--chat", "telegram:two", "--setup", "domain=lark"][..],
            "no new chat account asks domain",
        ),
        (
            &["--chat", "mail:box"][..],
            "--chat takes CHANNEL:ACCOUNT of a chat platform",
        ),
        (
            &["--chat", "telegram:bot", "--setup", "domain"][..],
            "--setup takes KEY=VALUE",
        ),
    ] {
        let before = std::fs::read_to_string(&config).expect("written");
        let out = init(&config, dir.path(), args);
        assert!(!out.status.success(), "{args:?}");
        assert!(said(&out).contains(says), "{args:?}: {}", said(&out));
        assert_eq!(std::fs::read_to_string(&config).expect("kept"), before);
    }
}

#[test]
fn a_service_that_cannot_be_installed_fails_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    // The unit's directory cannot be made: its parent is a file.
    let blocked = dir.path().join("not-a-dir");
    std::fs::write(&blocked, "").expect("file");
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .args([
            "init",
            "--non-interactive",
            "--skip-doctor",
            "--install-service",
        ])
        .args([
            "--agent",
            "scv",
            "--scv-command",
            "scv",
            "--credentials",
            "file",
        ])
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .env("XDG_CONFIG_HOME", &blocked)
        .env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .stdin(Stdio::null())
        .output()
        .expect("run init");
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the user service was not installed: cannot create "),
        "{text}"
    );
}

#[test]
fn with_a_daemon_running_the_last_line_says_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.toml");
    let first = init(
        &config,
        dir.path(),
        &[
            "--agent",
            "scv",
            "--scv-command",
            "scv",
            "--credentials",
            "file",
        ],
    );
    assert!(first.status.success(), "{}", said(&first));
    let mut daemon = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .arg("run")
        .env("RUST_LOG", "info")
        .env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn daemon");
    let mut log = BufReader::new(daemon.stderr.take().expect("stderr"));
    let mut seen = String::new();
    while !seen.contains("scv-bridge is running") {
        let mut line = String::new();
        assert!(
            log.read_line(&mut line).expect("log") > 0,
            "daemon ended: {seen}"
        );
        seen.push_str(&line);
    }
    // A re-run that changes nothing, with flags every release had.
    let out = init(&config, dir.path(), &["--credentials", "file"]);
    // SAFETY: a plain kill(2) of the child this test started.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    let _ = daemon.wait();
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    let last = text
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.starts_with(&format!("a daemon already runs (pid {})", daemon.id()))
            && last.ends_with(" reload` to apply the file"),
        "{text}"
    );
}

#[test]
fn a_mail_login_that_cannot_reach_its_server_names_it_and_what_to_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let config = dir.path().join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n\
         [mail.box]\nimap_host = \"127.0.0.1\"\nimap_port = {closed}\ntls = \"none\"\nusername = \"me\"\n",
        dir.path().join("state").display(),
        dir.path().join("run/daemon.sock").display(),
    );
    std::fs::write(&config, text).expect("config");
    let mut login = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .args(["login", "mail", "box"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn login");
    std::io::Write::write_all(&mut login.stdin.take().expect("stdin"), b"secret\n").expect("write");
    let out = login.wait_with_output().expect("login");
    let text = said(&out);
    assert!(
        text.contains(&format!(
            "cannot check the password at IMAP 127.0.0.1:{closed} now"
        )) && text.contains("Check imap_host, imap_port, tls and tls_ca under [mail.box]"),
        "{text}"
    );
}
