//! The console's set-up section: the model (tested against its endpoint before anything is
//! saved, then swapped in without a restart; model servers on this machine offered, `local.rs`)
//! another agent by name (`agents.rs`) and "add a chat" (`chat.rs`). All write the file `init` writes (`crate::setup`: comments
//! kept, checked as the daemon reads it, 0600) through [`super::config_file::write`].

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::Console;
use super::guard::CSRF_FIELD;
use super::local::Found;
use super::posted::{Posted, carries_csrf};
use crate::daemon::console_keys::Session;
use crate::login::agent::Probe;
use crate::secrets::Secret;
use crate::setup::{AgentChoice, AgentPlan, Plan};
use crate::words::{Console as Words, Lang, console as words};

/// Where a local model server (Ollama) answers by default: offered as the model's address.
const LOCAL_MODEL: &str = "http://127.0.0.1:11434/v1";

/// The set-up section (not live: what the person types is never replaced under them).
/// `chats` are the configured chat accounts, offered to the named agent's form.
pub(super) fn pane(
    w: &Words,
    lang: Lang,
    session: &Session,
    found: &[Found],
    chats: &[String],
) -> Markup {
    html! {
        section #setup {
            h2 { (w.setup_title) }
            h3 { (w.setup_model) }
            @for f in found { (local_form(w, session, f)) }
            form.agent method="post" action="/setup/agent" {
                input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
                label { (w.setup_base_url) " " input type="url" name="base_url" value=(LOCAL_MODEL) required; }
                label { (w.setup_model_name) " " input type="text" name="model" required; }
                label { (w.setup_key) " " input type="password" name="key" autocomplete="off"; }
                button type="submit" { (w.setup_test_save) }
            }
            h3 { (w.setup_speech) }
            form.speech method="post" action="/setup/speech" {
                input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
                label { (w.setup_speech_url) " " input type="url" name="base_url" required; }
                label { (w.setup_model_name) " " input type="text" name="model" value="whisper-1"; }
                button type="submit" { (w.setup_test_save) }
            }
            (super::agents::form(w, session, chats))
            (super::chat::forms(w, lang, session))
        }
    }
}

/// A model server found on this machine, offered with its models: the same test-then-save as
/// the form below, with the address filled in and no key.
fn local_form(w: &Words, session: &Session, found: &Found) -> Markup {
    html! {
        form.local method="post" action="/setup/agent" data-server=(found.name) {
            input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
            input type="hidden" name="base_url" value=(found.base_url);
            p { (w.setup_local_found.replace("{name}", found.name)) " " code { (found.base_url) } }
            @if found.models.is_empty() {
                label { (w.setup_model_name) " " input type="text" name="model" required; }
            } @else {
                label { (w.setup_model_name) " "
                    select name="model" { @for m in &found.models { option value=(m) { (m) } } }
                }
            }
            button type="submit" { (w.setup_local_use.replace("{name}", found.name)) }
        }
    }
}

/// The model form.
#[derive(Deserialize)]
pub(super) struct AgentForm {
    csrf: Option<String>,
    base_url: String,
    model: String,
    #[serde(default)]
    key: String,
}
carries_csrf!(AgentForm);

/// `POST /setup/agent`: tests the endpoint with the key, then writes `[agent]` and stores the
/// key where `login agent` keeps it. A refused key or an endpoint that cannot be reached saves
/// nothing.
pub(super) async fn agent(
    State(console): State<Console>,
    Posted { lang, form }: Posted<AgentForm>,
) -> Response {
    let w = words(lang);
    let (base, model) = (form.base_url.trim(), form.model.trim());
    let key = Some(form.key.trim())
        .filter(|k| !k.is_empty())
        .map(Secret::new);
    match crate::login::agent::probe(base, key.as_ref()).await {
        Probe::Accepted | Probe::Status(_) => {}
        Probe::Rejected(code) => {
            let msg = format!("{} (HTTP {code}): {base}", w.setup_key_refused);
            return (StatusCode::BAD_REQUEST, msg).into_response();
        }
        Probe::Unreachable(why) => {
            let msg = format!("{} {base}: {why}", w.setup_unreachable);
            return (StatusCode::BAD_REQUEST, msg).into_response();
        }
    }
    let plan = Plan {
        agent: AgentPlan {
            backend: Some(AgentChoice::Openai),
            base_url: Some(base.to_string()),
            model: Some(model.to_string()),
            key,
            ..AgentPlan::default()
        },
        ..Plan::default()
    };
    let config = match super::config_file::write(&console, &plan) {
        Ok(c) => c,
        Err(e) => return (StatusCode::CONFLICT, e).into_response(),
    };
    if let Some(key) = &plan.agent.key {
        let stored = match crate::login::credential_store(&config).await {
            Ok(store) => crate::login::agent::save(&store, key).await,
            Err(e) => Err(e),
        };
        if let Err(e) = stored {
            return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response();
        }
    }
    // The pipeline swaps to the new agent: the next message is answered by this model (a turn
    // under way finishes on the old one).
    match console.core.reload_with_agent().await {
        Ok(_) => (StatusCode::OK, w.setup_model_saved).into_response(),
        Err(e) => (StatusCode::CONFLICT, e.message).into_response(),
    }
}

/// The speech form.
#[derive(Deserialize)]
pub(super) struct SpeechForm {
    csrf: Option<String>,
    base_url: String,
    #[serde(default)]
    model: String,
}
carries_csrf!(SpeechForm);

/// `POST /setup/speech`: a test sound transcribed by the server first (a server that cannot
/// saves nothing), then `[speech] base_url` and `model` written and the file reloaded, so the
/// next voice note is transcribed there. A key is set in the file (`api_key_env`), not here.
pub(super) async fn speech(
    State(console): State<Console>,
    Posted { lang, form }: Posted<SpeechForm>,
) -> Response {
    let w = words(lang);
    let (base, model) = (form.base_url.trim(), form.model.trim());
    let cfg = crate::config::SpeechConfig {
        base_url: Some(base.to_string()),
        model: Some(model.to_string()).filter(|m| !m.is_empty()),
        ..Default::default()
    };
    let Some(speech) = crate::speech::Speech::from_config(&cfg) else {
        return (StatusCode::BAD_REQUEST, w.setup_speech_failed).into_response();
    };
    if let Err(e) = speech.probe(std::time::Duration::from_secs(10)).await {
        let msg = format!("{} {base}: {e}", w.setup_speech_failed);
        return (StatusCode::BAD_REQUEST, msg).into_response();
    }
    let plan = Plan {
        speech_url: Some(base.to_string()),
        speech_model: cfg.model.clone(),
        ..Plan::default()
    };
    if let Err(e) = super::config_file::write(&console, &plan) {
        return (StatusCode::CONFLICT, e).into_response();
    }
    match console.core.reload().await {
        Ok(_) => (StatusCode::OK, w.setup_speech_saved).into_response(),
        Err(e) => (StatusCode::CONFLICT, e.message).into_response(),
    }
}
