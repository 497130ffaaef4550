//! `scv-bridge doctor`: checks what a running bridge depends on, each with a pass/fail line and a fix.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::adapters::feishu::ENCRYPT_KEY_FIELD;
use crate::config::{AgentBackend, Approvals, ChannelSettings, Config, FeishuMode};
use crate::secrets::CredentialStore;

/// How long one network check may take.
const NET_TIMEOUT: Duration = Duration::from_secs(5);

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub what: String,
    /// `None` when it passed; else what fixes it.
    pub fix: Option<String>,
}

impl Check {
    fn pass(what: impl Into<String>) -> Self {
        Check {
            what: what.into(),
            fix: None,
        }
    }

    fn fail(what: impl Into<String>, fix: impl Into<String>) -> Self {
        Check {
            what: what.into(),
            fix: Some(fix.into()),
        }
    }

    /// The line(s) printed for it.
    pub fn render(&self) -> String {
        match &self.fix {
            None => format!("ok    {}", self.what),
            Some(f) => format!("FAIL  {}\n      fix: {f}", self.what),
        }
    }
}

/// Runs every check for the configuration at `path`.
pub async fn run(path: &Path) -> Vec<Check> {
    let config = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            return vec![Check::fail(
                format!("configuration: {e}"),
                "correct the file; see config/example.toml",
            )];
        }
    };
    let mut checks = vec![Check::pass(format!(
        "configuration {} parses",
        path.display()
    ))];
    checks.extend(credentials(&config).await);
    checks.push(store(&config.state_dir.join("state.db")).await);
    checks.push(socket_dir(&config.socket));
    checks.push(clock());
    checks.extend(platforms(&config).await);
    checks.push(agent(&config).await);
    checks.extend(approvals(&config));
    checks
}

/// `approvals = "ask"` means something only to an agent that runs tools and asks first.
fn approvals(config: &Config) -> Vec<Check> {
    if config.agent.backend == AgentBackend::Scv {
        return Vec::new();
    }
    config
        .accounts
        .values()
        .filter(|a| a.approvals == Approvals::Ask)
        .map(|a| {
            Check::fail(
                format!(
                    "{}: approvals = \"ask\" has no effect: the openai backend runs no tools",
                    a.key
                ),
                "set [agent] backend = \"scv\", or remove approvals from the account",
            )
        })
        .collect()
}

async fn credentials(config: &Config) -> Vec<Check> {
    let (mode, dir) = (config.credentials, config.state_dir.clone());
    let ids: Vec<String> = config
        .accounts
        .values()
        .filter(|a| a.enabled)
        .map(|a| a.key.to_string())
        .collect();
    // Callback mode refuses to start without the key that signs callbacks.
    let callbacks: Vec<String> = config
        .accounts
        .values()
        .filter(|a| {
            a.enabled
                && matches!(&a.settings, ChannelSettings::Feishu(f) if f.mode == FeishuMode::Webhook)
        })
        .map(|a| a.key.to_string())
        .collect();
    let loaded = tokio::task::spawn_blocking(move || {
        let store = CredentialStore::open(mode, &dir).map_err(|e| e.to_string())?;
        Ok::<_, String>(
            ids.into_iter()
                .map(|id| (id.clone(), store.load(&id).map_err(|e| e.to_string())))
                .collect::<Vec<_>>(),
        )
    })
    .await;
    let results = match loaded {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            return vec![Check::fail(
                format!("credential store: {e}"),
                "set credentials = \"file\" in the configuration",
            )];
        }
        Err(e) => {
            return vec![Check::fail(
                format!("credential store: {e}"),
                "run doctor again",
            )];
        }
    };
    let commands = crate::config::CommandLine::for_config(&config.path);
    results
        .into_iter()
        .map(|(id, r)| {
            let (channel, account) = id.split_once(':').unwrap_or((&id, ""));
            let login = commands.command(&format!("login {channel} {account}"));
            match r {
                Ok(Some(c))
                    if callbacks.contains(&id)
                        && c.get(ENCRYPT_KEY_FIELD)
                            .is_none_or(|k| k.expose().is_empty()) =>
                {
                    Check::fail(
                        format!("{id} is in callback mode but has no Encrypt Key stored"),
                        format!("set an Encrypt Key in the Feishu console, then run `{login}`"),
                    )
                }
                Ok(Some(_)) => Check::pass(format!("{id} has credentials")),
                Ok(None) => {
                    Check::fail(format!("{id} has no credentials"), format!("run `{login}`"))
                }
                Err(e) => Check::fail(
                    format!("{id} credentials unreadable: {e}"),
                    format!("run `{login}` again"),
                ),
            }
        })
        .collect()
}

async fn store(path: &Path) -> Check {
    if !path.exists() {
        return Check::pass(format!(
            "store {} not created yet (the daemon creates it)",
            path.display()
        ));
    }
    let p = path.to_path_buf();
    let result = tokio::task::spawn_blocking(move || {
        let conn =
            rusqlite::Connection::open_with_flags(&p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
    })
    .await;
    match result {
        Ok(Ok(s)) if s == "ok" => Check::pass(format!(
            "store {} passes the integrity check",
            path.display()
        )),
        Ok(Ok(s)) => Check::fail(
            format!("store {} is damaged: {s}", path.display()),
            "stop the daemon, move the file aside and start again (accounts re-baseline; credentials are kept)",
        ),
        Ok(Err(e)) => Check::fail(
            format!("store {} cannot be opened: {e}", path.display()),
            "check the file's owner and permissions",
        ),
        Err(e) => Check::fail(format!("store check failed: {e}"), "run doctor again"),
    }
}

fn socket_dir(socket: &Path) -> Check {
    let Some(dir) = socket.parent() else {
        return Check::fail(
            "the socket path has no directory",
            "set `socket` to a path in a private directory",
        );
    };
    match std::fs::metadata(dir) {
        Err(_) => Check::pass(format!(
            "socket directory {} will be created 0700",
            dir.display()
        )),
        Ok(m) if m.permissions().mode() & 0o077 == 0 => {
            Check::pass(format!("socket directory {} is private", dir.display()))
        }
        Ok(m) => Check::fail(
            format!(
                "socket directory {} is mode {:o}: other users can reach it",
                dir.display(),
                m.permissions().mode() & 0o777
            ),
            format!("chmod 700 {}", dir.display()),
        ),
    }
}

fn clock() -> Check {
    // 2025-01-01: a clock before it is certainly wrong, and TLS and token expiry would fail.
    let now = crate::supervisor::unix_now();
    if now > 1_735_689_600 {
        Check::pass("the system clock is plausible")
    } else {
        Check::fail(
            "the system clock is before 2025",
            "enable time synchronisation (e.g. systemd-timesyncd or chrony)",
        )
    }
}

/// Each enabled account's platform host: resolves and answers (TLS for HTTPS hosts) within 5 s.
async fn platforms(config: &Config) -> Vec<Check> {
    let mut out = Vec::new();
    for a in config.accounts.values().filter(|a| a.enabled) {
        let check = match &a.settings {
            ChannelSettings::Wechat(s) => {
                let url = s
                    .base_url
                    .clone()
                    .unwrap_or_else(|| "https://ilinkai.weixin.qq.com".into());
                https(&a.key.to_string(), &url).await
            }
            ChannelSettings::Feishu(s) => {
                let url = match s.domain.as_deref() {
                    None | Some("feishu") => "https://open.feishu.cn".to_string(),
                    Some("lark") => "https://open.larksuite.com".to_string(),
                    Some(u) => u.to_string(),
                };
                https(&a.key.to_string(), &url).await
            }
            ChannelSettings::Mail(m) => {
                let port = m
                    .imap_port
                    .unwrap_or(if m.tls == crate::config::MailTls::Implicit {
                        993
                    } else {
                        143
                    });
                tcp(&a.key.to_string(), &m.imap_host, port).await
            }
        };
        out.push(check);
    }
    out
}

async fn https(id: &str, url: &str) -> Check {
    let client = match reqwest::Client::builder().timeout(NET_TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => {
            return Check::fail(
                format!("{id}: cannot build an HTTP client: {e}"),
                "report this",
            );
        }
    };
    match client.get(url).send().await {
        Ok(_) => Check::pass(format!("{id}: {url} answers over TLS")),
        Err(e) => Check::fail(
            format!("{id}: {url} does not answer within 5 s ({})", short(&e)),
            "check DNS, the network and any proxy; the account backs off and retries meanwhile",
        ),
    }
}

async fn tcp(id: &str, host: &str, port: u16) -> Check {
    match tokio::time::timeout(NET_TIMEOUT, tokio::net::TcpStream::connect((host, port))).await {
        Ok(Ok(_)) => Check::pass(format!("{id}: {host}:{port} accepts connections")),
        Ok(Err(e)) => Check::fail(
            format!("{id}: {host}:{port} refused: {e}"),
            "check imap_host, imap_port and the network",
        ),
        Err(_) => Check::fail(
            format!("{id}: {host}:{port} did not answer within 5 s"),
            "check imap_host, imap_port and the network",
        ),
    }
}

async fn agent(config: &Config) -> Check {
    let a = &config.agent;
    match a.backend {
        AgentBackend::Openai => {
            let Some(base) = a.base_url.clone() else {
                return Check::fail("agent: no base_url", "set [agent] base_url");
            };
            let url = format!("{}/models", base.trim_end_matches('/'));
            let client = match reqwest::Client::builder().timeout(NET_TIMEOUT).build() {
                Ok(c) => c,
                Err(e) => return Check::fail(format!("agent: {e}"), "report this"),
            };
            let mut req = client.get(&url);
            if let Some(var) = &a.api_key_env
                && let Ok(key) = std::env::var(var)
            {
                req = req.bearer_auth(key);
            }
            match req.send().await {
                Ok(r) if r.status() == 401 || r.status() == 403 => Check::fail(
                    format!(
                        "agent: {base} rejects the API key ({})",
                        r.status().as_u16()
                    ),
                    format!(
                        "set {} to a valid key",
                        a.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY")
                    ),
                ),
                Ok(_) => Check::pass(format!("agent: {base} answers")),
                Err(e) => Check::fail(
                    format!("agent: {base} does not answer ({})", short(&e)),
                    "start the model server or correct [agent] base_url",
                ),
            }
        }
        AgentBackend::Scv => {
            if let Some(sock) = &a.socket {
                let path = crate::config::expand_tilde(sock);
                return match tokio::net::UnixStream::connect(&path).await {
                    Ok(_) => Check::pass(format!("agent: {} accepts connections", path.display())),
                    Err(e) => Check::fail(
                        format!("agent: {}: {e}", path.display()),
                        "start the SCV agent server or correct [agent] socket",
                    ),
                };
            }
            let cmd = a.command.clone().unwrap_or_else(|| "scv".into());
            let found = std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).any(|d| d.join(&cmd).is_file()))
                .unwrap_or(false)
                || Path::new(&cmd).is_file();
            if found {
                Check::pass(format!("agent: `{cmd}` is installed"))
            } else {
                Check::fail(
                    format!("agent: `{cmd}` is not on PATH"),
                    "install the SCV agent or set [agent] command",
                )
            }
        }
    }
}

/// The innermost cause of a request error, short.
fn short(e: &reqwest::Error) -> String {
    let mut s: &dyn std::error::Error = e;
    while let Some(next) = s.source() {
        s = next;
    }
    s.to_string().chars().take(120).collect()
}
