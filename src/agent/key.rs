//! Where the `openai` backend's API key comes from, decided in one place for the chat backend,
//! mail triage and `doctor`: the variable `api_key_env` names (required when set), else the key
//! `scv-bridge login agent` stored, else the systemd credential [`SYSTEMD_CREDENTIAL`] (a unit's
//! `LoadCredential=`), else `OPENAI_API_KEY` when it is set. A local server needs none.

use super::health::{ConfigProblem, set_variable_fix};
use crate::config::AgentConfig;
use crate::secrets::Secret;

/// The name of the systemd credential holding the key (`LoadCredential=agent-api-key:FILE`).
pub const SYSTEMD_CREDENTIAL: &str = "agent-api-key";

/// Where a key was found; named in messages, never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// The environment variable of this name.
    Variable(String),
    /// The credential store (`scv-bridge login agent`).
    Stored,
    /// The systemd credential [`SYSTEMD_CREDENTIAL`] in `$CREDENTIALS_DIRECTORY`.
    SystemdCredential,
}

impl KeySource {
    /// How people read where the key came from ("OPENAI_API_KEY", "the key stored by ...").
    pub fn describe(&self) -> String {
        match self {
            KeySource::Variable(v) => v.clone(),
            KeySource::Stored => format!(
                "the key stored by `{}`",
                crate::config::command("login agent")
            ),
            KeySource::SystemdCredential => {
                format!("the systemd credential {SYSTEMD_CREDENTIAL} (LoadCredential=)")
            }
        }
    }

    /// The step that replaces a rejected key from this source.
    pub fn fix(&self) -> String {
        match self {
            KeySource::Variable(v) => set_variable_fix(v),
            KeySource::Stored => format!(
                "store a valid key with `{}`, then restart the daemon",
                crate::config::command("login agent")
            ),
            KeySource::SystemdCredential => format!(
                "put a valid key in the file the unit's LoadCredential={SYSTEMD_CREDENTIAL}:... names, then restart the service"
            ),
        }
    }
}

/// A key and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The key.
    pub secret: Secret,
    /// Where it was found.
    pub source: KeySource,
}

/// The key `[agent]` gets, `None` when there is none; a named variable that is unset is a problem.
pub fn resolve(cfg: &AgentConfig) -> Result<Option<ApiKey>, ConfigProblem> {
    resolve_with(
        cfg,
        |name| std::env::var(name).ok(),
        |name| {
            let dir = std::env::var_os("CREDENTIALS_DIRECTORY")?;
            std::fs::read_to_string(std::path::Path::new(&dir).join(name)).ok()
        },
    )
}

/// [`resolve`] with the environment and the systemd credentials given, for tests.
pub fn resolve_with(
    cfg: &AgentConfig,
    env: impl Fn(&str) -> Option<String>,
    systemd_credential: impl Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, ConfigProblem> {
    let from_env = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(|v| ApiKey {
                secret: Secret::new(v),
                source: KeySource::Variable(name.to_string()),
            })
    };
    if let Some(name) = &cfg.api_key_env {
        return match from_env(name) {
            Some(k) => Ok(Some(k)),
            None => Err(ConfigProblem::new(
                format!("the environment variable {name} (agent.api_key_env) is not set"),
                format!(
                    "{}; or store the key with `{}` and remove api_key_env",
                    set_variable_fix(name),
                    crate::config::command("login agent")
                ),
            )),
        };
    }
    if let Some(stored) = cfg
        .stored_api_key
        .as_ref()
        .filter(|k| !k.expose().is_empty())
    {
        return Ok(Some(ApiKey {
            secret: stored.clone(),
            source: KeySource::Stored,
        }));
    }
    if let Some(k) = systemd_credential(SYSTEMD_CREDENTIAL)
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
    {
        return Ok(Some(ApiKey {
            secret: Secret::new(k),
            source: KeySource::SystemdCredential,
        }));
    }
    Ok(from_env("OPENAI_API_KEY"))
}

/// Whether `base_url` is on this machine (loopback or `localhost`), where servers such as Ollama
/// and llama.cpp need no key; anything else usually does.
pub fn is_local(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url.trim()) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let host = host.to_ascii_lowercase();
            host == "localhost" || host.ends_with(".localhost")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(api_key_env: Option<&str>, stored: Option<&str>) -> AgentConfig {
        AgentConfig {
            api_key_env: api_key_env.map(str::to_string),
            stored_api_key: stored.map(Secret::new),
            ..AgentConfig::default()
        }
    }

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_named_variable_wins_and_is_required() {
        let both = cfg(Some("MY_KEY"), Some("stored"));
        let k = resolve_with(&both, env(&[("MY_KEY", " sk-env ")]), none)
            .expect("ok")
            .expect("a key");
        assert_eq!(k.secret.expose(), "sk-env");
        assert_eq!(k.source, KeySource::Variable("MY_KEY".into()));
        let p = resolve_with(&both, env(&[]), none).expect_err("unset variable");
        assert!(p.message.contains("MY_KEY (agent.api_key_env) is not set"));
        assert!(p.fix.contains("login agent"), "{}", p.fix);
    }

    #[test]
    fn the_stored_key_is_used_when_no_variable_is_named() {
        let k = resolve_with(
            &cfg(None, Some("sk-stored")),
            env(&[("OPENAI_API_KEY", "sk-env")]),
            |_| Some("sk-systemd".into()),
        )
        .expect("ok")
        .expect("a key");
        assert_eq!(k.secret.expose(), "sk-stored");
        assert_eq!(k.source, KeySource::Stored);
        assert!(k.source.describe().contains("login agent"));
        let k = resolve_with(
            &cfg(None, None),
            env(&[("OPENAI_API_KEY", "sk-env")]),
            |n| (n == SYSTEMD_CREDENTIAL).then(|| "sk-systemd\n".into()),
        )
        .expect("ok")
        .expect("the unit's credential");
        assert_eq!(
            (k.secret.expose(), k.source),
            ("sk-systemd", KeySource::SystemdCredential)
        );
        let k = resolve_with(&cfg(None, None), env(&[("OPENAI_API_KEY", "sk-env")]), none)
            .expect("ok")
            .expect("the usual variable");
        assert_eq!(k.source, KeySource::Variable("OPENAI_API_KEY".into()));
        assert_eq!(
            resolve_with(&cfg(None, None), env(&[]), none).expect("ok"),
            None
        );
    }

    #[test]
    fn local_means_this_machine() {
        for local in [
            "http://127.0.0.1:11434/v1",
            "http://localhost:8080/v1",
            "http://[::1]:8000/v1",
            "http://LOCALHOST/v1",
        ] {
            assert!(is_local(local), "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "http://192.168.1.10:11434/v1",
            "not a url",
            "http://localhost.example.com/v1",
        ] {
            assert!(!is_local(remote), "{remote}");
        }
    }
}
