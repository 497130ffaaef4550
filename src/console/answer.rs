//! `POST /answer`: the owner's Yes, No or Always on an open question, recorded by the confirm
//! service under a chat answer's rules and marked as answered from the console.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::Console;
use super::posted::{Posted, carries_csrf};
use crate::confirm::{AnswerOutcome, ConfirmError};
use crate::words::console as words;

/// The answer form.
#[derive(Deserialize)]
pub(super) struct AnswerForm {
    csrf: Option<String>,
    id: String,
    answer: String,
}
carries_csrf!(AnswerForm);

/// Records the answer, then back to the page (which shows the question gone).
pub(super) async fn answer(
    State(console): State<Console>,
    Posted { lang, form }: Posted<AnswerForm>,
) -> Response {
    let w = words(lang);
    let (yes, always) = match form.answer.as_str() {
        "yes" => (true, false),
        "no" => (false, false),
        "always" => (true, true),
        _ => return (StatusCode::BAD_REQUEST, w.not_answered).into_response(),
    };
    let Some(confirm) = console.core.confirm() else {
        return (StatusCode::NOT_FOUND, w.no_questions).into_response();
    };
    match confirm.answer_from_console(&form.id, yes, always).await {
        Ok(AnswerOutcome::Recorded(_)) => Redirect::to("/").into_response(),
        Ok(AnswerOutcome::AlreadyClosed(s)) => (
            StatusCode::CONFLICT,
            format!(
                "{} {}: {}",
                w.not_answered,
                form.id,
                crate::words::answer_word(s, lang)
            ),
        )
            .into_response(),
        Err(ConfirmError::NotFound(_)) => (StatusCode::NOT_FOUND, w.no_questions).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, format!("{} {e}", w.not_answered)).into_response(),
    }
}
