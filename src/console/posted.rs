//! The one way a console form reaches its handler: [`Posted`] reads the form, checks its CSRF
//! token against the session's and yields the page's language with the form. Every `POST`
//! handler takes it, so none can forget the check.
//!
//! Stable: the order of the refusals (no session extension: 500, a form that does not parse:
//! axum's `Form` rejection, a missing or wrong token: 403 in the page's language) is the one
//! the handlers had when each did this itself (`tests/console/security.rs`).

use axum::extract::{Extension, Form, FromRequest, FromRequestParts, Request};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::Console;
use super::guard::{CSRF_FIELD, csrf_ok, csrf_refused, lang};
use crate::daemon::console_keys::Session;
use crate::words::Lang;

/// A form whose CSRF token was the session's, and the language to answer in.
pub(super) struct Posted<F> {
    /// The page's language (`Accept-Language`).
    pub lang: Lang,
    /// The form's fields.
    pub form: F,
}

/// A form that carries the CSRF token (field [`CSRF_FIELD`]).
pub(super) trait CarriesCsrf {
    /// The token as sent, if any.
    fn csrf(&self) -> Option<&str>;
}

/// A form read as its fields in order (`/setup/chat`, whose fields depend on the platform).
impl CarriesCsrf for Vec<(String, String)> {
    fn csrf(&self) -> Option<&str> {
        self.iter()
            .find(|(n, _)| n == CSRF_FIELD)
            .map(|(_, v)| v.trim())
    }
}

impl<F> FromRequest<Console> for Posted<F>
where
    F: DeserializeOwned + CarriesCsrf + Send,
{
    type Rejection = Response;

    async fn from_request(request: Request, console: &Console) -> Result<Self, Response> {
        let lang = lang(request.headers(), None);
        let (mut parts, body) = request.into_parts();
        let Extension(session) = Extension::<Session>::from_request_parts(&mut parts, console)
            .await
            .map_err(IntoResponse::into_response)?;
        let request = Request::from_parts(parts, body);
        let Form(form) = Form::<F>::from_request(request, console)
            .await
            .map_err(IntoResponse::into_response)?;
        if !csrf_ok(&session, form.csrf()) {
            return Err(csrf_refused(lang));
        }
        Ok(Posted { lang, form })
    }
}

/// `impl CarriesCsrf` for a form struct with a `csrf: Option<String>` field.
macro_rules! carries_csrf {
    ($($form:ty),+ $(,)?) => {
        $(impl $crate::console::posted::CarriesCsrf for $form {
            fn csrf(&self) -> Option<&str> {
                self.csrf.as_deref()
            }
        })+
    };
}
pub(super) use carries_csrf;
