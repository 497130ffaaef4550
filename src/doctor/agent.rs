//! The agent backend: for `openai`, the API key (a named variable that is unset fails, and so does
//! no key at all for an endpoint that is not on this machine) and the endpoint's `/models` with
//! that key (a non-2xx answer is a failure with its status); for `scv`, the server's socket or command.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Check, CheckId};
use crate::agent::key::{self, KeySource};
use crate::config::{AgentBackend, CommandLine, Config, expand_tilde};
use crate::probe::http::{http_client, request_failure, transport};
use crate::secrets::Secret;

/// The agent's checks; `stored` is the key `login agent` keeps and the keys stored under each
/// named agent's name (the console's agent form), as the daemon hands them out: a named agent
/// never gets `[agent]`'s key. With a daemon answering, its own view of the agent decides
/// whether a key is missing (a unit's `LoadCredential=` is its alone).
pub(super) async fn checks(
    config: &Config,
    (stored, named): (Option<Secret>, BTreeMap<String, Secret>),
    daemon: bool,
) -> Vec<Check> {
    let mut out = one(config, stored, daemon).await;
    // Each named agent is checked as `[agent]` is, its lines and fixes naming its own table.
    for (name, cfg) in &config.agents {
        let mut alone = config.clone();
        alone.agent = cfg.clone();
        let table = format!("[agents.{name}]");
        for mut c in one(&alone, named.get(name).cloned(), daemon).await {
            c.what = c.what.replacen("agent:", &format!("agent {name}:"), 1);
            c.fix = c.fix.map(|f| f.replace("[agent]", &table));
            out.push(c);
        }
    }
    out
}

/// The checks of the agent `config.agent` describes.
async fn one(config: &Config, stored: Option<Secret>, daemon: bool) -> Vec<Check> {
    match config.agent.backend {
        AgentBackend::Openai => openai(config, stored, daemon).await,
        AgentBackend::Scv | AgentBackend::Acp => vec![scv(config).await],
    }
}

async fn openai(config: &Config, stored: Option<Secret>, daemon: bool) -> Vec<Check> {
    let mut a = config.agent.clone();
    a.stored_api_key = stored;
    let login = CommandLine::for_config(&config.path).command("login agent");
    let mut out = Vec::new();
    let key = match key::resolve(&a) {
        Ok(Some(k)) => {
            out.push(Check::pass(
                CheckId::AgentKey,
                match &k.source {
                    KeySource::Variable(var) => format!("agent: {var} is set"),
                    KeySource::Stored => "agent: an API key is stored (login agent)".to_string(),
                    KeySource::SystemdCredential => {
                        format!(
                            "agent: the systemd credential {} is set",
                            key::SYSTEMD_CREDENTIAL
                        )
                    }
                },
            ));
            Some(k)
        }
        Ok(None) => {
            // A hosted endpoint without a key fails every chat; say so before the first one does.
            if let Some(base) = a
                .base_url
                .as_deref()
                .filter(|b| !daemon && !key::is_local(b))
            {
                out.push(Check::fail(
                    CheckId::AgentKey,
                    format!("agent: no API key for {base} (the endpoint is not on this machine)"),
                    format!(
                        "run `{login}` to store the key, or set [agent] api_key_env to the environment variable that holds it (a unit's LoadCredential={}:FILE is seen only by the service)",
                        key::SYSTEMD_CREDENTIAL
                    ),
                ));
            }
            None
        }
        Err(_) => {
            let var = a.api_key_env.clone().unwrap_or_default();
            out.push(Check::fail(
                CheckId::AgentKey,
                format!("agent: {var} (api_key_env) is not set"),
                format!(
                    "set {var} to the API key where the daemon runs (e.g. an EnvironmentFile= line in its systemd unit), or run `{login}` and remove api_key_env"
                ),
            ));
            None
        }
    };
    let Some(base) = a.base_url.clone() else {
        out.push(Check::fail(
            CheckId::AgentEndpoint,
            "agent: no base_url",
            "set [agent] base_url",
        ));
        return out;
    };
    let url = format!("{}/models", base.trim_end_matches('/'));
    let client = match http_client() {
        Ok(c) => c,
        Err(e) => {
            out.push(Check::fail(
                CheckId::AgentEndpoint,
                format!("agent: {e}"),
                "report this",
            ));
            return out;
        }
    };
    let mut req = client.get(&url);
    if let Some(k) = &key {
        req = req.bearer_auth(k.secret.expose());
    }
    out.push(match req.send().await {
        Ok(r) if r.status().is_success() => Check::pass(CheckId::AgentEndpoint, format!(
            "agent: {url} answers HTTP {} {}",
            r.status().as_u16(),
            transport(&url)
        )),
        Ok(r) => {
            let code = r.status().as_u16();
            let fix = match code {
                401 | 403 => match key.as_ref().map(|k| &k.source) {
                    Some(KeySource::Variable(var)) => format!("set {var} to a valid key"),
                    Some(s @ (KeySource::Stored | KeySource::SystemdCredential)) => s.fix(),
                    None => format!("the endpoint wants a key: run `{login}`"),
                },
                404 => "correct [agent] base_url: it ends before /chat/completions (e.g. http://127.0.0.1:11434/v1)".to_string(),
                _ => format!("check the model server: it answered HTTP {code}"),
            };
            Check::fail(
                CheckId::AgentEndpoint,
                format!("agent: {url} answered HTTP {code}"),
                fix,
            )
        }
        Err(e) => {
            let mut c = request_failure(CheckId::AgentEndpoint, "agent", &url, &e);
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
            Ok(_) => Check::pass(
                CheckId::AgentServer,
                format!("agent: {} accepts connections", path.display()),
            ),
            Err(e) => Check::fail(
                CheckId::AgentServer,
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
        Check::pass(CheckId::AgentServer, format!("agent: `{cmd}` is installed"))
    } else {
        Check::fail(
            CheckId::AgentServer,
            format!("agent: `{cmd}` is not on PATH"),
            "install the SCV agent or set [agent] command",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_named_agent_is_checked_under_its_own_name_and_table() {
        let text = "[agent]\nbackend = \"scv\"\ncommand = \"/nonexistent/scv-a\"\n\
                    [agents.second]\nbackend = \"scv\"\ncommand = \"/nonexistent/scv-b\"\n";
        let config = Config::parse(Path::new("/c.toml"), text).expect("parses");
        let checks = checks(&config, (None, BTreeMap::new()), false).await;
        let lines: Vec<(&str, Option<&str>)> = checks
            .iter()
            .map(|c| (c.what.as_str(), c.fix.as_deref()))
            .collect();
        assert_eq!(
            lines,
            [
                (
                    "agent: `/nonexistent/scv-a` is not on PATH",
                    Some("install the SCV agent or set [agent] command")
                ),
                (
                    "agent second: `/nonexistent/scv-b` is not on PATH",
                    Some("install the SCV agent or set [agents.second] command")
                ),
            ]
        );
    }
}
