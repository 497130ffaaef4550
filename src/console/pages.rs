//! The console's HTML, rendered on the server with maud (escaped by default; checked when the
//! crate compiles): the page around the live part, the live part itself (accounts, agent, mail
//! counts, questions, a running login), and the two assets built into the binary.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde::Deserialize;

use super::Console;
use super::guard::{CSRF_FIELD, lang};
use super::scan::ScanView;
use crate::confirm::OpenQuestion;
use crate::daemon::console_keys::Session;
use crate::protocol::{ComponentHealth, DaemonStatus, MailCounts};
use crate::supervisor::unix_now;
use crate::words::{Console as Words, Lang, console as words};

/// The one script: the live part over server-sent events, and forms sent without leaving it.
const SCRIPT: &str = include_str!("assets/console.js");
/// The one stylesheet.
const STYLE: &str = include_str!("assets/console.css");

/// `?lang=en` / `?lang=zh-CN`: the switch between the two languages.
#[derive(Deserialize)]
pub(super) struct LangQuery {
    lang: Option<String>,
}

impl LangQuery {
    /// The language asked for, if any.
    pub(super) fn lang(&self) -> Option<&str> {
        self.lang.as_deref()
    }
}

/// `GET /`: the page, with the live part as it is now.
pub(super) async fn home(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(q): Query<LangQuery>,
    axum::Extension(session): axum::Extension<Session>,
) -> Response {
    let lang = lang(&headers, q.lang());
    let w = words(lang);
    let found = super::local::find(&console.local).await;
    let other = match lang {
        Lang::En => Lang::ZhCn,
        Lang::ZhCn => Lang::En,
    };
    let page = html! {
        (DOCTYPE)
        html lang=(lang.as_str()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (w.title) }
                link rel="stylesheet" href="/assets/console.css";
                script src="/assets/console.js" defer {}
            }
            body {
                header {
                    h1 { (w.title) }
                    a.lang href={ "/?lang=" (other.as_str()) } { (w.language) }
                }
                main #live data-events={ "/events?lang=" (lang.as_str()) } {
                    (live(&console, lang, &session))
                }
                (super::setup::pane(w, lang, &session, &found, &chat_accounts(&console)))
            }
        }
    };
    html_response(page)
}

/// The configured chat accounts (mail's are not: they have no chats of their own).
fn chat_accounts(console: &Console) -> Vec<String> {
    let status = console.core.status();
    let ids = status.components.into_iter().map(|c| c.id);
    ids.filter(|id| {
        crate::ids::AccountKey::parse(id)
            .is_some_and(|k| crate::adapters::platform(k.channel).setup().is_some())
    })
    .collect()
}

/// The live part: everything that changes, as one fragment (the page replaces it whole).
pub(super) fn live(console: &Console, lang: Lang, session: &Session) -> Markup {
    let w = words(lang);
    let status = console.core.status();
    let questions = console
        .core
        .confirm()
        .map(|c| c.open_questions())
        .unwrap_or_default();
    let scan = console.scans.view();
    html! {
        @if let Some(warning) = status.console.as_ref().and_then(|c| c.warning.as_ref()) {
            p.warning { strong { (w.warning) } " " (warning) }
        }
        (accounts(&status, w, session))
        @if let Some(s) = &scan { (scan_pane(s, w, session)) }
        (agent(&status, w))
        (mail(&status.components, w))
        (open_questions(&questions, w, session, lang))
    }
}

fn accounts(status: &DaemonStatus, w: &Words, session: &Session) -> Markup {
    let now = unix_now();
    html! {
        section #accounts {
            h2 { (w.accounts) }
            @if status.components.is_empty() {
                p { (w.no_accounts) }
            } @else {
                table {
                    tr { th { (w.account) } th { (w.state) } th { (w.since) } th { (w.note) } th { (w.fix) } }
                    @for h in &status.components { (account_row(h, w, session, now)) }
                }
            }
        }
    }
}

fn account_row(h: &ComponentHealth, w: &Words, session: &Session, now: u64) -> Markup {
    let since = h
        .since_unix_seconds
        .map(|s| crate::cli::human_duration(now.saturating_sub(s)))
        .unwrap_or_else(|| "-".into());
    html! {
        tr data-account=(h.id) {
            td { (h.id) }
            td.state data-state=(h.state.as_str()) { (h.state.as_str()) }
            td { (since) }
            td { (crate::cli::note(h, now)) }
            td {
                @if let Some(c) = &h.command { code { (c) } }
                (super::fix::button(h, w, session))
                // Every platform's login is the same walk (`Platform::login`): a code to
                // scan, questions to answer, or both. Named "log in again" when that is the fix.
                form.scan method="post" action="/scan" {
                    input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
                    input type="hidden" name="account" value=(h.id);
                    button type="submit" {
                        @if super::fix::Fix::of(h) == Some(super::fix::Fix::Login) { (w.fix_login) }
                        @else { (w.scan) }
                    }
                }
            }
        }
    }
}

fn scan_pane(s: &ScanView, w: &Words, session: &Session) -> Markup {
    html! {
        section #scan data-account=(s.account) {
            h2 { (w.scan_title) " " (s.account) }
            @if let Some(qr) = &s.qr {
                p { (w.scan_with.replace("{app}", qr.app).replace("{n}", &qr.number.to_string()).replace("{of}", &qr.of.to_string())) }
                div.qr data-number=(qr.number) { (PreEscaped(&qr.svg)) }
                p { (w.scan_open) " " a href=(qr.url) rel="noreferrer" { (qr.url) } }
            }
            ul.lines { @for l in &s.lines { li { (l) } } }
            @if let Some(q) = &s.asking {
                // The answer is never shown back: a secret goes in a password box, and the
                // page keeps only the question.
                form.answer method="post" action="/scan/answer" {
                    input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
                    label {
                        (q.prompt) " "
                        @if q.hidden {
                            input type="password" name="answer" autocomplete="off";
                        } @else {
                            input type="text" name="answer" autocomplete="off";
                        }
                    }
                    button type="submit" { (w.scan_send) }
                }
            }
            @if let Some(done) = &s.done {
                @match done {
                    Ok(()) => { p.done { (w.login_done) } }
                    Err(e) => { p.failed { (w.login_failed) " " (e) } }
                }
            }
        }
    }
}

fn agent(status: &DaemonStatus, w: &Words) -> Markup {
    let line = crate::cli::agent_line(status.agent.as_deref(), unix_now());
    html! {
        section #agent {
            h2 { (w.agent) }
            @if line.is_empty() { p { (w.agent_none) } } @else { pre { (line.trim_end()) } }
        }
    }
}

fn mail(components: &[ComponentHealth], w: &Words) -> Markup {
    let counts: Vec<(&str, &MailCounts)> = components
        .iter()
        .filter_map(|h| h.mail.as_ref().map(|m| (h.id.as_str(), m)))
        .collect();
    html! {
        @if !counts.is_empty() {
            section #mail {
                h2 { (w.mail) }
                ul { @for (id, m) in counts {
                    li { (id) ": " (m.seen_today) " " (w.mail_seen) ", " (m.reported_today) " "
                        (w.mail_reported) ", " (m.queued) " " (w.mail_queued) ", "
                        (m.tokens_today) "/" (m.token_budget) " " (w.mail_tokens) }
                } }
            }
        }
    }
}

fn open_questions(qs: &[OpenQuestion], w: &Words, session: &Session, lang: Lang) -> Markup {
    let now = unix_now();
    html! {
        section #questions {
            h2 { (w.questions) }
            @if qs.is_empty() { p { (w.no_questions) } }
            @for q in qs {
                form.question method="post" action="/answer" data-question=(q.id) {
                    p.text { (q.text) }
                    p.deadline { (q.chat) " · " (w.deadline) " "
                        (crate::confirm::deadline_in(q.deadline_unix, now, None, lang)) }
                    input type="hidden" name=(CSRF_FIELD) value=(session.csrf);
                    input type="hidden" name="id" value=(q.id);
                    button type="submit" name="answer" value="yes" { (w.yes) }
                    button type="submit" name="answer" value="no" { (w.no) }
                    @if q.offers_always { button type="submit" name="answer" value="always" { (w.always) } }
                }
            }
        }
    }
}

/// A page with its content type.
pub(super) fn html_response(markup: Markup) -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}

/// `GET /assets/console.js`.
pub(super) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

/// `GET /assets/console.css`.
pub(super) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}
