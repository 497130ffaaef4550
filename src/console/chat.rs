//! "Add a chat": a form per chat platform with its set-up questions (`Platform::setup`, the
//! questions `init` asks: Feishu's domain, WeChat's address, ...), answered on the page and
//! taken by the same `ChatPlan` `init` fills. Table answers are written to the file; answers
//! for the login (Feishu's app ID) are kept for the account's first login from its row.
//! Each form sits in its own `details`, so no script is needed to show one platform's questions.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};

use super::Console;
use super::guard::CSRF_FIELD;
use super::posted::Posted;
use crate::config::{Channel, Config, valid_account_name};
use crate::daemon::console_keys::Session;
use crate::login::LoginArgs;
use crate::port::setup::{Question, Setup};
use crate::setup::{ChatPlan, Plan};
use crate::words::{Console as Words, Lang, console as words};

/// The form field of a set-up question's answer.
fn field_name(q: &Question) -> String {
    format!("q_{}", q.key)
}

/// One form per chat platform the registry knows.
pub(super) fn forms(w: &Words, lang: Lang, session: &Session) -> Markup {
    let chats = Channel::ALL
        .into_iter()
        .filter_map(|c| Some((c, crate::adapters::platform(c).setup()?)));
    html! {
        h3 { (w.setup_add_chat) }
        @for (c, s) in chats {
            details.chat data-channel=(c.as_str()) {
                summary { (crate::adapters::platform(c).label()) }
                form.chat method="post" action="/setup/chat" {
                    input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
                    input type="hidden" name="channel" value=(c.as_str());
                    label { (s.name.get(lang)) " "
                        input type="text" name="name" value=(s.default_name) required;
                    }
                    @for q in s.questions { (question(q, lang)) }
                    button type="submit" { (w.setup_add) }
                }
            }
        }
    }
}

/// A question: its choices to pick from (the first the default), or a box whose empty answer
/// keeps the platform's default.
fn question(q: &Question, lang: Lang) -> Markup {
    html! {
        label { (q.prompt.get(lang)) " "
            @if q.choices.is_empty() {
                input type="text" name=(field_name(q)) placeholder=(q.default.unwrap_or_default()) autocomplete="off";
            } @else {
                select name=(field_name(q)) {
                    @for c in q.choices { option value=(c.value) { (c.label.get(lang)) } }
                }
            }
        }
    }
}

/// `POST /setup/chat`: adds `[<channel>.<name>]` with the answers its platform's set-up took
/// (the first chat also becomes `notify`), then reloads, so its row appears with its login.
pub(super) async fn chat(
    State(console): State<Console>,
    Posted { lang, form: fields }: Posted<Vec<(String, String)>>,
) -> Response {
    let field = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.trim());
    let w = words(lang);
    let (given, name) = (
        field("channel").unwrap_or_default(),
        field("name").unwrap_or_default(),
    );
    let platform = Channel::parse(given)
        .and_then(|c| Some((c, crate::adapters::platform(c).setup()?)))
        .filter(|_| valid_account_name(name));
    let Some((channel, setup)) = platform else {
        let msg = format!("{} {given}:{name}", w.setup_bad_chat);
        return (StatusCode::BAD_REQUEST, msg).into_response();
    };
    let current = Config::load(&console.config_path).ok();
    let mut chat = ChatPlan::new(channel, name);
    if current
        .as_ref()
        .is_some_and(|c| c.accounts.keys().any(|k| k.to_string() == chat.key()))
    {
        let msg = format!("{} {}", w.setup_exists, chat.key());
        return (StatusCode::CONFLICT, msg).into_response();
    }
    if let Err(key) = take_answers(&mut chat, setup, &field) {
        let msg = format!("{} {key}", w.setup_bad_answer);
        return (StatusCode::BAD_REQUEST, msg).into_response();
    }
    let login = chat
        .login
        .iter()
        .fold(LoginArgs::default(), |args, (flag, value)| {
            args.with_flag(flag, value.clone())
        });
    let account = chat.key();
    let mut plan = Plan {
        chats: vec![chat],
        ..Plan::default()
    };
    plan.default_to_new_chat(current.is_some_and(|c| c.notify.is_some()));
    if let Err(e) = super::config_file::write(&console, &plan) {
        return (StatusCode::CONFLICT, e).into_response();
    }
    console.scans.prefill(&account, login);
    match console.core.reload().await {
        Ok(_) => Redirect::to("/").into_response(),
        Err(e) => (StatusCode::CONFLICT, e.message).into_response(),
    }
}

/// Takes each answered question of `setup` into `chat`: a choice must be one offered, a typed
/// answer equal to the platform's default is not written. The error names the bad answer's key.
fn take_answers<'a>(
    chat: &mut ChatPlan,
    setup: &Setup,
    field: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(), &'static str> {
    for q in setup.questions {
        let Some(answer) = field(&field_name(q)).filter(|a| !a.is_empty()) else {
            continue;
        };
        if !q.choices.is_empty() && !q.choices.iter().any(|c| c.value == answer) {
            return Err(q.key);
        }
        if q.default == Some(answer) {
            continue;
        }
        chat.answer(q.key, answer.to_string());
    }
    Ok(())
}
