//! The agent backend: for `openai`, the API key variable and the endpoint's `/models` with that key
//! (a non-2xx answer is a failure with its status); for `scv`, the server's socket or command.

use std::path::Path;

use super::Check;
use super::endpoints::{http_client, request_failure, transport};
use crate::config::{AgentBackend, Config, expand_tilde};

/// The agent's checks.
pub(super) async fn checks(config: &Config) -> Vec<Check> {
    match config.agent.backend {
        AgentBackend::Openai => openai(config).await,
        AgentBackend::Scv => vec![scv(config).await],
    }
}

async fn openai(config: &Config) -> Vec<Check> {
    let a = &config.agent;
    let mut out = Vec::new();
    let key = match &a.api_key_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => {
                out.push(Check::pass(format!("agent: {var} is set")));
                Some(k)
            }
            _ => {
                out.push(Check::fail(
                    format!("agent: {var} (api_key_env) is not set"),
                    format!(
                        "set {var} to the API key where the daemon runs (e.g. an EnvironmentFile= line in its systemd unit), or remove api_key_env when the endpoint needs no key"
                    ),
                ));
                None
            }
        },
    };
    let Some(base) = a.base_url.clone() else {
        out.push(Check::fail("agent: no base_url", "set [agent] base_url"));
        return out;
    };
    let url = format!("{}/models", base.trim_end_matches('/'));
    let client = match http_client() {
        Ok(c) => c,
        Err(e) => {
            out.push(Check::fail(format!("agent: {e}"), "report this"));
            return out;
        }
    };
    let mut req = client.get(&url);
    if let Some(k) = &key {
        req = req.bearer_auth(k);
    }
    let var = a.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
    out.push(match req.send().await {
        Ok(r) if r.status().is_success() => Check::pass(format!(
            "agent: {url} answers HTTP {} {}",
            r.status().as_u16(),
            transport(&url)
        )),
        Ok(r) => {
            let code = r.status().as_u16();
            let fix = match code {
                401 | 403 if a.api_key_env.is_some() => format!("set {var} to a valid key"),
                401 | 403 => {
                    "set [agent] api_key_env to the environment variable that holds the API key"
                        .to_string()
                }
                404 => "correct [agent] base_url: it ends before /chat/completions (e.g. http://127.0.0.1:11434/v1)".to_string(),
                _ => format!("check the model server: it answered HTTP {code}"),
            };
            Check::fail(format!("agent: {url} answered HTTP {code}"), fix)
        }
        Err(e) => {
            let mut c = request_failure("agent", &url, &e);
            if c.what.contains("cannot be reached") || c.what.contains("does not answer") {
                c.fix = Some("start the model server or correct [agent] base_url".into());
            }
            c
        }
    });
    out
}

async fn scv(config: &Config) -> Check {
    let a = &config.agent;
    if let Some(sock) = &a.socket {
        let path = expand_tilde(sock);
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
