//! What keeps the console the owner's: the login link's exchange for a session cookie, the
//! session check on every owner page, the CSRF token and same-origin check on every request
//! that changes something, and the headers on every response (a strict Content-Security-Policy,
//! no framing, no referrer, no caching).

use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::Console;
use crate::daemon::console_keys::{Refused, Session, same_token};
use crate::words::{Lang, accept_language, console as words};

/// The session cookie's name.
pub(super) const COOKIE: &str = "scv_console";
/// The form field (or header) a state-changing request carries its CSRF token in.
pub(super) const CSRF_FIELD: &str = "csrf";

/// Nothing from anywhere else: scripts and styles only from the console's own files.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
                   frame-ancestors 'none'";

/// The headers every response carries.
pub(super) async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The page's language: `?lang=` when given, else the browser's `Accept-Language`.
pub(super) fn lang(headers: &HeaderMap, asked: Option<&str>) -> Lang {
    if let Some(l) = asked.and_then(Lang::parse) {
        return l;
    }
    headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .map_or(Lang::En, accept_language)
}

/// `?token=` of a login link.
#[derive(Deserialize)]
pub(super) struct LinkQuery {
    token: Option<String>,
}

/// `GET /login?token=`: a valid, unused link becomes a session cookie and goes to the page.
pub(super) async fn login(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(q): Query<LinkQuery>,
) -> Response {
    let w = words(lang(&headers, None));
    let token = q.token.unwrap_or_default();
    match console.core.console_keys().redeem(&token) {
        Ok(session) => {
            let cookie = format!(
                "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
                session.cookie
            );
            let mut response = Redirect::to("/").into_response();
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, v);
            }
            tracing::info!("console: a login link was used");
            response
        }
        Err(Refused::Invalid) => {
            tracing::warn!("console: a login link was refused (unknown, used or expired)");
            (StatusCode::UNAUTHORIZED, w.link_refused).into_response()
        }
        Err(Refused::TooMany) => (StatusCode::TOO_MANY_REQUESTS, w.too_many).into_response(),
    }
}

/// The session a request's cookie opens, if any.
fn session_of(console: &Console, headers: &HeaderMap) -> Option<Session> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .find_map(|(_, value)| console.core.console_keys().session(value))
}

/// Owner pages: a session is required (401 otherwise, naming only the command that gives a
/// link); a request that changes something must come from the console's own page.
pub(super) async fn owner_only(
    State(console): State<Console>,
    mut request: Request,
    next: Next,
) -> Response {
    let w = words(lang(request.headers(), None));
    let Some(session) = session_of(&console, request.headers()) else {
        return (StatusCode::UNAUTHORIZED, w.signed_out).into_response();
    };
    if request.method() != Method::GET && !same_origin(request.headers()) {
        tracing::warn!("console: a cross-origin request was refused");
        return (StatusCode::FORBIDDEN, w.refused).into_response();
    }
    request.extensions_mut().insert(session);
    next.run(request).await
}

/// Whether a request comes from a page of this origin: `Sec-Fetch-Site` (when the browser
/// sends it) says `same-origin`, and `Origin` names the host the request was sent to. A
/// request with neither is refused (browsers send `Origin` with every POST).
fn same_origin(headers: &HeaderMap) -> bool {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = get("sec-fetch-site")
        && site != "same-origin"
    {
        return false;
    }
    match (get("origin"), get("host")) {
        (Some(origin), Some(host)) => origin == format!("http://{host}"),
        (None, Some(_)) => get("sec-fetch-site").is_some(),
        _ => false,
    }
}

/// Whether `given` is the session's CSRF token.
pub(super) fn csrf_ok(session: &Session, given: Option<&str>) -> bool {
    given.is_some_and(|g| same_token(g, &session.csrf))
}

/// The answer to a request whose CSRF token is missing or wrong.
pub(super) fn csrf_refused(lang: Lang) -> Response {
    tracing::warn!("console: a request without its CSRF token was refused");
    (StatusCode::FORBIDDEN, words(lang).refused).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_the_console_s_own_origin_passes() {
        let ok = [
            ("host", "127.0.0.1:7860"),
            ("origin", "http://127.0.0.1:7860"),
        ];
        assert!(same_origin(&headers(&ok)));
        let evil = [
            ("host", "127.0.0.1:7860"),
            ("origin", "http://evil.example"),
        ];
        assert!(!same_origin(&headers(&evil)));
        let cross = [
            ("host", "127.0.0.1:7860"),
            ("origin", "http://127.0.0.1:7860"),
            ("sec-fetch-site", "cross-site"),
        ];
        assert!(!same_origin(&headers(&cross)));
        assert!(!same_origin(&headers(&[("host", "127.0.0.1:7860")])));
    }
}
