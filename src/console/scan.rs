//! A login from the console: any platform's own steps (`login::run_with`, the walk `scv-bridge
//! login` takes) with a web [`LoginUi`]: its QR codes drawn as SVG on the server, its questions
//! as a form whose answer goes straight to the waiting step (`POST /scan/answer`) and is never
//! shown back. One login runs at a time; the live part shows it as it goes.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use tokio::sync::{oneshot, watch};

use super::Console;
use super::posted::{Posted, carries_csrf};
use crate::config::Config;
use crate::ids::AccountKey;
use crate::login::LoginArgs;
use crate::port::login_flow::{Field, LoginUi, Shown};
use crate::words::console as words;

/// How long a question waits for its answer before the login gives up (a page left open must
/// not hold the one login slot for ever).
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// A question the login waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Asking {
    /// The question (the platform's prompt).
    pub prompt: String,
    /// Asked in a password box.
    pub hidden: bool,
}

/// The code to scan, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Qr {
    /// The app that scans it, as the platform's login steps name it.
    pub app: &'static str,
    /// The code drawn as SVG (no script, no text of its own).
    pub svg: String,
    /// What it encodes (also offered as a link).
    pub url: String,
    /// This code's number, from 1.
    pub number: u32,
    /// How many codes the login shows at most.
    pub of: u32,
}

/// One login as the page shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ScanView {
    /// The account logging in.
    pub account: String,
    /// The latest code, while one is shown.
    pub qr: Option<Qr>,
    /// The progress lines so far.
    pub lines: Vec<String>,
    /// The question waiting for its answer, if any.
    pub asking: Option<Asking>,
    /// How it ended, once it did (the error is for people).
    pub done: Option<Result<(), String>>,
}

/// The console's login: at most one at a time, watched by the live part.
#[derive(Default)]
pub(super) struct Scans {
    current: Mutex<Option<ScanView>>,
    /// Where the answer to the question shown goes.
    pending: Mutex<Option<oneshot::Sender<String>>>,
    /// Login answers given when a chat was added (its set-up's login questions), by account;
    /// its logins from the page start with them, as `init` hands them to its login.
    prefilled: Mutex<HashMap<String, LoginArgs>>,
    changes: watch::Sender<u64>,
}

impl Scans {
    /// The login shown now, if any.
    pub(super) fn view(&self) -> Option<ScanView> {
        self.lock().clone()
    }

    /// Keeps `args` for the logins of `account` (an empty set forgets any kept).
    pub(super) fn prefill(&self, account: &str, args: LoginArgs) {
        let mut kept = self.prefilled.lock().unwrap_or_else(|p| p.into_inner());
        if args.flags.is_empty() {
            kept.remove(account);
        } else {
            kept.insert(account.to_string(), args);
        }
    }

    /// The login answers kept for `account` (none: the login asks everything).
    fn args(&self, account: &str) -> LoginArgs {
        let kept = self.prefilled.lock().unwrap_or_else(|p| p.into_inner());
        kept.get(account).cloned().unwrap_or_default()
    }

    /// Changes whenever the login shows something.
    pub(super) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Starts showing a login of `account`; false while another one runs.
    fn begin(&self, account: &str) -> bool {
        {
            let mut current = self.lock();
            if current.as_ref().is_some_and(|s| s.done.is_none()) {
                return false;
            }
            *current = Some(ScanView {
                account: account.to_string(),
                ..ScanView::default()
            });
        }
        self.bump();
        true
    }

    /// Hands `answer` to the question the login waits on; false when none waits.
    fn answer(&self, answer: String) -> bool {
        let waiting = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        waiting.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// Shows `field` and waits for its answer (or gives up after [`ANSWER_WAIT`]).
    async fn ask(&self, field: &Field) -> Result<String, String> {
        let (tx, rx) = oneshot::channel();
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        let asking = Asking {
            prompt: field.prompt.unwrap_or(field.name).to_string(),
            hidden: field.hidden,
        };
        self.update(|v| v.asking = Some(asking));
        let answer = tokio::time::timeout(ANSWER_WAIT, rx).await;
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.update(|v| v.asking = None);
        match answer {
            Ok(Ok(a)) => Ok(a),
            Ok(Err(_)) => Err("the question was withdrawn".into()),
            Err(_) => Err(format!(
                "no answer in {} minutes; start the login again",
                ANSWER_WAIT.as_secs() / 60
            )),
        }
    }

    fn update(&self, f: impl FnOnce(&mut ScanView)) {
        if let Some(view) = self.lock().as_mut() {
            f(view);
        }
        self.bump();
    }

    fn bump(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<ScanView>> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The page as a login's UI: codes and lines go to [`Scans`].
struct WebUi {
    scans: std::sync::Arc<Scans>,
}

impl LoginUi for WebUi {
    fn show(&mut self, shown: Shown) {
        match shown {
            Shown::Line(line) => self.scans.update(|v| v.lines.push(line)),
            Shown::Qr {
                app,
                url,
                number,
                of,
            } => {
                let Some(svg) = svg(&url) else {
                    return self.scans.update(|v| v.lines.push(url));
                };
                self.scans.update(|v| {
                    v.qr = Some(Qr {
                        app,
                        svg,
                        url,
                        number,
                        of,
                    })
                });
            }
        }
    }

    fn ask<'a>(&'a mut self, field: &'a Field) -> BoxFuture<'a, Result<String, String>> {
        async move { self.scans.ask(field).await }.boxed()
    }
}

/// `url` as an SVG QR code, without the XML prolog (it goes inside the page).
fn svg(url: &str) -> Option<String> {
    let code = qrcode::QrCode::new(url.as_bytes()).ok()?;
    let image = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(240, 240)
        .build();
    Some(match image.find("?>") {
        Some(at) if image.starts_with("<?xml") => image[at + 2..].to_string(),
        _ => image,
    })
}

/// The form that starts a login.
#[derive(Deserialize)]
pub(super) struct ScanForm {
    csrf: Option<String>,
    account: String,
}

/// The answer form.
#[derive(Deserialize)]
pub(super) struct AnswerForm {
    csrf: Option<String>,
    answer: String,
}
carries_csrf!(ScanForm, AnswerForm);

/// `POST /scan/answer`: the answer to the question the running login shows.
pub(super) async fn answer(
    State(console): State<Console>,
    Posted { form, .. }: Posted<AnswerForm>,
) -> Response {
    if console.scans.answer(form.answer) {
        Redirect::to("/").into_response()
    } else {
        (StatusCode::CONFLICT, "no login question is waiting").into_response()
    }
}

/// `POST /scan`: starts the login of a configured account (`CHANNEL:ACCOUNT`), whatever its
/// platform; the live part shows it.
pub(super) async fn start(
    State(console): State<Console>,
    Posted { lang, form }: Posted<ScanForm>,
) -> Response {
    let w = words(lang);
    let config = match Config::load(&console.config_path) {
        Ok(c) => c,
        Err(e) => return (StatusCode::CONFLICT, e.to_string()).into_response(),
    };
    let Some(key) = AccountKey::parse(&form.account).filter(|k| config.accounts.contains_key(k))
    else {
        let msg = format!("{} {}", w.scan_unknown, form.account);
        return (StatusCode::NOT_FOUND, msg).into_response();
    };
    if !console.scans.begin(&form.account) {
        return (StatusCode::CONFLICT, w.scan_busy).into_response();
    }
    let scans = console.scans.clone();
    tokio::spawn(async move {
        let mut ui = WebUi {
            scans: scans.clone(),
        };
        let args = scans.args(&key.to_string());
        let outcome =
            crate::login::run_with(key.channel, &config, &key.account, &args, &mut ui).await;
        if let Err(e) = &outcome {
            tracing::warn!(error = %e, "console: a login failed");
        }
        scans.update(|v| {
            v.qr = None;
            v.done = Some(outcome.map(drop));
        });
    });
    Redirect::to("/").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_an_svg_element_without_prolog_or_style() {
        let svg = svg("https://example.invalid/qr?code=abc").expect("drawn");
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>"));
        assert!(!svg.contains("style") && !svg.contains("script"));
    }
}
