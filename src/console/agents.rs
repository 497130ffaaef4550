//! "Another agent, by name": a named agent (`[agents.NAME]`) of any backend added from the
//! set-up page. It is checked before anything is saved (openai: its `/models` with the key, as
//! the model form does; scv and acp: the command is a program on this machine), written through
//! [`super::config_file::write`] (the file `init` writes), its key kept in the credential store
//! under the agent's own entry (`secrets::named_agent_key_id`: never in the file, never shown
//! back), and optionally made an account's agent (`agent = "NAME"`). The running daemon takes
//! it by reload (`Core::reload_with_named_agent`); an acp agent starts at the next restart.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::Console;
use super::guard::CSRF_FIELD;
use super::posted::{Posted, carries_csrf};
use crate::config::{AccountKey, Config, DEFAULT_AGENT, valid_account_name};
use crate::daemon::console_keys::Session;
use crate::login::agent::Probe;
use crate::secrets::{API_KEY_FIELD, Credentials, Secret};
use crate::setup::{AgentChoice, AgentPlan, ChatPlan, Plan};
use crate::words::{Console as Words, Lang};

/// The form: every backend's fields, the ones a backend does not use left empty.
pub(super) fn form(w: &Words, session: &Session, accounts: &[String]) -> Markup {
    let kinds = [
        (AgentChoice::Openai, w.setup_backend_openai),
        (AgentChoice::Acp, w.setup_backend_acp),
        (AgentChoice::Scv, w.setup_backend_scv),
    ];
    html! {
        h3 { (w.setup_agents) }
        form.named method="post" action="/setup/agents" {
            input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
            label { (w.setup_agent_name) " " input type="text" name="name" required; }
            label { (w.setup_backend) " "
                select name="backend" {
                    @for (k, label) in kinds { option value=(k.as_str()) { (label) } }
                }
            }
            label { (w.setup_base_url) " " input type="url" name="base_url"; }
            label { (w.setup_model_name) " " input type="text" name="model"; }
            label { (w.setup_command) " " input type="text" name="command" autocomplete="off"; }
            label { (w.setup_key) " " input type="password" name="key" autocomplete="off"; }
            label { (w.setup_key_env) " " input type="text" name="key_env" autocomplete="off"; }
            label { (w.setup_timeout) " " input type="number" name="timeout_seconds" min="1"; }
            label { (w.setup_for_account) " "
                select name="account" {
                    option value="" { (w.setup_no_account) }
                    @for a in accounts { option value=(a) { (a) } }
                }
            }
            button type="submit" { (w.setup_test_save) }
        }
    }
}

/// The form's fields as sent.
#[derive(Deserialize)]
pub(super) struct NamedForm {
    csrf: Option<String>,
    name: String,
    backend: String,
    #[serde(default)]
    base_url: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    key_env: String,
    #[serde(default)]
    timeout_seconds: String,
    #[serde(default)]
    account: String,
}
carries_csrf!(NamedForm);

/// A refusal: the status and what the page says.
type Refusal = (StatusCode, String);

/// `POST /setup/agents`: checks the agent, writes `[agents.NAME]` (and the account's `agent`),
/// stores its key under its name, then reloads, so the next turn of the chats that talk to it
/// uses it. Whatever is refused saves nothing.
pub(super) async fn add(
    State(console): State<Console>,
    Posted { lang, form }: Posted<NamedForm>,
) -> Response {
    match save(&console, lang, &form).await {
        Ok(said) => (StatusCode::OK, said).into_response(),
        Err(refusal) => refusal.into_response(),
    }
}

async fn save(console: &Console, lang: Lang, form: &NamedForm) -> Result<String, Refusal> {
    let w = crate::words::console(lang);
    let (name, agent) = read(w, form)?;
    let current = Config::load(&console.config_path).ok();
    let exists = current
        .as_ref()
        .is_some_and(|c| c.agents.contains_key(&name));
    if exists || name == DEFAULT_AGENT {
        return Err((
            StatusCode::CONFLICT,
            format!("{} [agents.{name}]", w.setup_exists),
        ));
    }
    let account = form.account.trim();
    let mut chats = Vec::new();
    if !account.is_empty() {
        let key = AccountKey::parse(account).filter(|k| {
            let chat = crate::adapters::platform(k.channel).setup().is_some();
            chat && current.as_ref().is_some_and(|c| c.accounts.contains_key(k))
        });
        let Some(key) = key else {
            return Err((
                StatusCode::BAD_REQUEST,
                format!("{} {account}", w.scan_unknown),
            ));
        };
        let mut chat = ChatPlan::new(key.channel, &key.account);
        chat.table.push(("agent".to_string(), name.clone()));
        chats.push(chat);
    }
    check(w, &agent).await?;
    let backend = agent.backend;
    let key = agent.key.clone();
    let plan = Plan {
        named: vec![(name.clone(), AgentPlan { key: None, ..agent })],
        chats,
        ..Plan::default()
    };
    let config =
        super::config_file::write(console, &plan).map_err(|e| (StatusCode::CONFLICT, e))?;
    if let Some(key) = key {
        store_key(&config, &name, key).await?;
    }
    if backend == Some(AgentChoice::Acp) {
        // Building an acp agent reaps the recorded agent groups (see
        // `Config::unreloadable_changes`): the reload would refuse, so say what to do instead.
        return Ok(w.setup_agent_restart.replace("{name}", &name));
    }
    match console.core.reload_with_named_agent(&name).await {
        Ok(_) => Ok(w.setup_agent_saved.replace("{name}", &name)),
        Err(e) => Err((StatusCode::CONFLICT, e.message)),
    }
}

/// The agent the form describes, with its name; a field that cannot be right refuses it.
fn read(w: &Words, form: &NamedForm) -> Result<(String, AgentPlan), Refusal> {
    let name = form.name.trim();
    let backend = [AgentChoice::Openai, AgentChoice::Scv, AgentChoice::Acp]
        .into_iter()
        .find(|b| b.as_str() == form.backend.trim());
    let timeout = match form.timeout_seconds.trim() {
        "" => Ok(None),
        t => t.parse::<u64>().map(Some),
    };
    let bad = || {
        let found = format!("{name} {} {}", form.backend, form.timeout_seconds);
        (
            StatusCode::BAD_REQUEST,
            format!("{} {}", w.setup_bad_agent, found.trim()),
        )
    };
    let (Some(backend), Ok(timeout_seconds)) = (backend, timeout) else {
        return Err(bad());
    };
    if !valid_account_name(name) || name == DEFAULT_AGENT {
        return Err(bad());
    }
    let given = |v: &str| Some(v.trim().to_string()).filter(|v| !v.is_empty());
    let mut agent = AgentPlan {
        backend: Some(backend),
        timeout_seconds,
        key: given(&form.key).map(Secret::new),
        ..AgentPlan::default()
    };
    match backend {
        AgentChoice::Openai => {
            agent.base_url = given(&form.base_url);
            agent.model = given(&form.model);
        }
        AgentChoice::Scv => agent.command = given(&form.command),
        AgentChoice::Acp => {
            agent.command = given(&form.command);
            // The stored key reaches an acp agent only as this variable.
            agent.api_key_env = given(&form.key_env);
        }
    }
    Ok((name.to_string(), agent))
}

/// Whether the agent can work, asked before anything is saved: an openai endpoint answers
/// `/models` and takes the key; an scv or acp command is a program here (scv's default `scv`
/// when none is given).
async fn check(w: &Words, agent: &AgentPlan) -> Result<(), Refusal> {
    let refuse = |msg: String| Err((StatusCode::BAD_REQUEST, msg));
    match agent.backend {
        Some(AgentChoice::Openai) => {
            let (Some(base), Some(_)) = (&agent.base_url, &agent.model) else {
                return refuse(w.setup_agent_incomplete.to_string());
            };
            match crate::login::agent::probe(base, agent.key.as_ref()).await {
                Probe::Accepted | Probe::Status(_) => Ok(()),
                Probe::Rejected(code) => {
                    refuse(format!("{} (HTTP {code}): {base}", w.setup_key_refused))
                }
                Probe::Unreachable(why) => refuse(format!("{} {base}: {why}", w.setup_unreachable)),
            }
        }
        Some(AgentChoice::Scv | AgentChoice::Acp) => {
            let scv = agent.backend == Some(AgentChoice::Scv);
            let command = match (&agent.command, scv) {
                (Some(c), _) => c.clone(),
                (None, true) => "scv".to_string(),
                (None, false) => return refuse(w.setup_agent_incomplete.to_string()),
            };
            if is_program(&command) {
                Ok(())
            } else {
                refuse(format!("{} {command}", w.setup_no_command))
            }
        }
        None => refuse(w.setup_agent_incomplete.to_string()),
    }
}

/// Whether `command` names an executable file: a path as given, else a name on `PATH`.
fn is_program(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runs = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        return runs(std::path::Path::new(command));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| runs(&d.join(command))))
}

/// Keeps `key` under the agent's own entry of the credential store `config` names.
async fn store_key(config: &Config, name: &str, key: Secret) -> Result<(), Refusal> {
    let fail = |e: String| (StatusCode::INTERNAL_SERVER_ERROR, e);
    let store = crate::login::credential_store(config).await.map_err(fail)?;
    let id = crate::secrets::named_agent_key_id(name);
    let creds = Credentials::default().with(API_KEY_FIELD, key.expose());
    tokio::task::spawn_blocking(move || store.save(&id, &creds))
        .await
        .map_err(|e| fail(e.to_string()))?
        .map_err(|e| fail(format!("cannot store the key: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(name: &str, backend: &str, timeout: &str) -> NamedForm {
        NamedForm {
            csrf: None,
            name: name.into(),
            backend: backend.into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "m".into(),
            command: "codex-acp".into(),
            key: String::new(),
            key_env: "ANTHROPIC_API_KEY".into(),
            timeout_seconds: timeout.into(),
            account: String::new(),
        }
    }

    #[test]
    fn a_form_is_read_for_its_backend_alone() {
        let w = crate::words::console(Lang::En);
        let (name, a) = read(w, &form("claude", "acp", "600")).expect("reads");
        assert_eq!(name, "claude");
        assert_eq!(a.command.as_deref(), Some("codex-acp"));
        assert_eq!(a.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!((a.base_url, a.timeout_seconds), (None, Some(600)));
        let (_, a) = read(w, &form("cheap", "openai", "")).expect("reads");
        assert_eq!((a.command, a.api_key_env), (None, None));
        assert_eq!(a.model.as_deref(), Some("m"));
        for (name, backend, timeout) in [
            ("default", "openai", ""),
            ("no spaces", "openai", ""),
            ("x", "claude", ""),
            ("x", "openai", "soon"),
        ] {
            let refused = read(w, &form(name, backend, timeout));
            assert!(refused.is_err(), "{name} {backend} {timeout}");
        }
    }

    #[test]
    fn a_command_must_be_a_program_here() {
        assert!(is_program("sh"), "sh is on PATH");
        assert!(is_program("/bin/sh"));
        assert!(!is_program("/nonexistent/codex-acp"));
        assert!(!is_program("surely-not-a-program-here-7f3a"));
    }
}
