//! `scv-bridge login agent`: read the model API key (prompted without echo on a terminal, or one
//! line from stdin), check it against the endpoint's `/models` when `[agent]` names one, and keep
//! it in the credential store, so no unit file or shell profile has to hold it.

use std::time::Duration;

use crate::config::{AgentBackend, AgentConfig, Config};
use crate::secrets::{AGENT_KEY_ID, API_KEY_FIELD, CredentialStore, Credentials, Secret};

/// How long the key check may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the endpoint said to a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// `/models` answered 2xx.
    Accepted,
    /// 401 or 403: the key is wrong.
    Rejected(u16),
    /// Another HTTP status.
    Status(u16),
    /// No answer (the reason, for people).
    Unreachable(String),
}

/// Asks `{base_url}/models` with `key` (none: no header); never logs the key.
pub async fn probe(base_url: &str, key: Option<&Secret>) -> Probe {
    let url = format!("{}/models", base_url.trim().trim_end_matches('/'));
    let client = match reqwest::Client::builder().timeout(PROBE_TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => return Probe::Unreachable(e.to_string()),
    };
    let mut req = client.get(&url);
    if let Some(k) = key {
        req = req.bearer_auth(k.expose());
    }
    match req.send().await {
        Ok(r) if r.status().is_success() => Probe::Accepted,
        Ok(r) if matches!(r.status().as_u16(), 401 | 403) => Probe::Rejected(r.status().as_u16()),
        Ok(r) => Probe::Status(r.status().as_u16()),
        Err(e) => Probe::Unreachable(e.without_url().to_string()),
    }
}

/// Runs `login agent` for `config`; the error is for people.
pub async fn run(config: &Config) -> Result<(), String> {
    let key = tokio::task::spawn_blocking(|| super::prompt::secret("Model API key"))
        .await
        .map_err(|e| e.to_string())??;
    let key = Secret::new(key);
    check(&config.agent, &key, &config.path).await?;
    let store = super::credential_store(config).await?;
    save(&store, &key).await?;
    println!("agent: API key stored; {}", restart_note(config).await);
    if let Some(var) = &config.agent.api_key_env {
        println!(
            "note: [agent] api_key_env = \"{var}\" is set, and a named variable wins over the stored key; remove that line to use the stored key"
        );
    }
    Ok(())
}

/// Refuses a key the configured endpoint rejects; anything else only warns (the endpoint may be
/// down now, the key stays useful).
pub async fn check(
    agent: &AgentConfig,
    key: &Secret,
    config_path: &std::path::Path,
) -> Result<(), String> {
    let base = match (&agent.backend, agent.base_url.as_deref()) {
        (AgentBackend::Openai, Some(b)) if !b.trim().is_empty() => b,
        _ => {
            eprintln!("note: [agent] has no base_url yet; storing the key unchecked");
            return Ok(());
        }
    };
    match probe(base, Some(key)).await {
        Probe::Accepted => Ok(()),
        Probe::Rejected(code) => Err(format!(
            "agent: {base} rejected the key (HTTP {code}); check it and run `{}` again",
            crate::config::CommandLine::for_config(config_path).command("login agent")
        )),
        Probe::Status(code) => {
            eprintln!("warning: {base}/models answered HTTP {code}; storing the key anyway");
            Ok(())
        }
        Probe::Unreachable(why) => {
            eprintln!("warning: could not check the key now ({why}); storing it anyway");
            Ok(())
        }
    }
}

/// Replaces the stored agent key.
pub async fn save(store: &CredentialStore, key: &Secret) -> Result<(), String> {
    let creds = Credentials::default().with(API_KEY_FIELD, key.expose());
    let store = store.clone();
    tokio::task::spawn_blocking(move || store.save(AGENT_KEY_ID, &creds))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot store the key: {e}"))
}

/// The agent reads its key once, at start: say how to get a running daemon to use the new one.
async fn restart_note(config: &Config) -> String {
    let commands = crate::config::CommandLine::for_config(&config.path);
    match crate::client::request(&config.socket, crate::protocol::DaemonCommand::Status).await {
        Ok(_) => "the running daemon reads it at start: restart it (`systemctl --user restart scv-bridge` under systemd)".to_string(),
        Err(_) => format!("start the daemon with `{}`", commands.command("run")),
    }
}
