//! The fake's HTTP face: routing, recording, injected faults, auth, and long-poll holding.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::Shared;
use super::records::{Fault, RecordedRequest};
use super::state::State;
use crate::endpoint::Endpoint;
use crate::headers;
use crate::types::BOT_TYPE;

/// Bodies above this are refused; real requests are a few KB.
const MAX_BODY: usize = 1 << 20;

/// Serves every request (installed as the router's fallback).
pub(crate) async fn handle(AxumState(shared): AxumState<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    if let Some(cdn_path) = parts
        .uri
        .path()
        .strip_prefix(shared.prefix.as_str())
        .and_then(|p| p.strip_prefix("cdn/"))
    {
        return cdn(&shared, cdn_path, &parts, body).await;
    }
    let Some(endpoint) = route(&shared.prefix, parts.uri.path()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let is_post = parts.method == Method::POST;
    let allowed = match endpoint {
        Endpoint::GetQrcodeStatus => parts.method == Method::GET,
        // The plugin POSTs since 2.3.1; older clients GET, and the server takes both.
        Endpoint::GetBotQrcode => is_post || parts.method == Method::GET,
        _ => is_post,
    };
    if !allowed {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let Ok(bytes) = to_bytes(body, MAX_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let json: Option<Value> = if is_post {
        serde_json::from_slice(&bytes).ok()
    } else {
        None
    };
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let token_valid = {
        let mut state = shared.lock();
        let token_valid = bearer(&parts.headers).is_some_and(|t| state.tokens.contains(t));
        state.requests.push(record(
            endpoint,
            &parts.method,
            &parts.headers,
            json.as_ref(),
            parts.uri.query(),
            token_valid,
        ));
        token_valid
    };
    shared.bump();

    // Faults act like a gateway in front of the platform: before any check.
    let fault = shared.lock().next_fault(endpoint);
    let lose_answer = fault == Some(Fault::LoseAnswer);
    match fault {
        None | Some(Fault::LoseAnswer) => {}
        Some(Fault::Status(code)) => {
            return StatusCode::from_u16(code)
                .unwrap_or(StatusCode::BAD_GATEWAY)
                .into_response();
        }
        Some(Fault::Hang) => return hang(&shared).await,
        Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
        Some(Fault::Reset) => return reset(),
        Some(Fault::Body(v)) => return ok_json(&v),
    }

    if is_post && let Some(refusal) = check_auth(&parts.headers, endpoint, token_valid) {
        return ok_json(&refusal);
    }
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let answer = match (endpoint, json) {
        (Endpoint::GetBotQrcode, body) => qrcode(&shared, param("bot_type"), body.as_ref()),
        (Endpoint::GetQrcodeStatus, _) => {
            qr_status(&shared, param("qrcode").unwrap_or(""), param("verify_code")).await
        }
        (_, None) => json!({"ret": -1, "errmsg": "invalid json body"}),
        (Endpoint::GetUpdates, Some(body)) => {
            let cursor = body
                .get("get_updates_buf")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            get_updates(&shared, &cursor).await
        }
        (Endpoint::SendMessage, Some(body)) => shared.lock().send(&body),
        (Endpoint::GetUploadUrl, Some(body)) => {
            let mut state = shared.lock();
            let base = format!("{}cdn", state.base_url);
            state.cdn.get_upload_url(&body, &base)
        }
        (Endpoint::GetConfig, Some(body)) => shared.lock().get_config(&body),
        (Endpoint::SendTyping, Some(body)) => shared.lock().send_typing(&body),
        (Endpoint::NotifyStart | Endpoint::NotifyStop, Some(_)) => {
            shared.lock().notifies.push(endpoint);
            json!({"ret": 0})
        }
    };
    shared.bump();
    let delay = shared.lock().config.answer_delay;
    let distant = matches!(
        endpoint,
        Endpoint::SendMessage | Endpoint::SendTyping | Endpoint::GetConfig | Endpoint::GetUploadUrl
    );
    if distant && !delay.is_zero() {
        // Made before the call is counted as waiting, so a release the test sends on seeing
        // that count reaches it.
        let released = shared.release.notified();
        let _waiting = Waiting::new(&shared, endpoint);
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = released => {}
            // A server shutting down answers nothing more (and never holds its shutdown up).
            gone = hang(&shared) => return gone,
        }
    }
    if lose_answer {
        return hang(&shared).await;
    }
    ok_json(&answer)
}

/// One answer held back by `answer_delay`, counted while its client waits for it: dropped when
/// the answer goes, or when the client hangs up and the server drops the call.
struct Waiting<'a> {
    shared: &'a Shared,
    endpoint: Endpoint,
}

impl<'a> Waiting<'a> {
    fn new(shared: &'a Shared, endpoint: Endpoint) -> Self {
        shared.lock().answers_waiting.push(endpoint);
        shared.bump();
        Waiting { shared, endpoint }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if let Some(i) = st.answers_waiting.iter().position(|e| *e == self.endpoint) {
            st.answers_waiting.remove(i);
        }
        drop(st);
        self.shared.bump();
    }
}

/// The most the fake CDN takes in one upload (the plugin caps media at 100 MB).
const MAX_UPLOAD: usize = 128 << 20;

/// The CDN: bare requests, no iLink headers or token (media spec §1.2, §2.2).
async fn cdn(
    shared: &Shared,
    path: &str,
    parts: &axum::http::request::Parts,
    body: Body,
) -> Response {
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let response = match (path, &parts.method) {
        ("download", &Method::GET) => {
            let (status, bytes) = shared.lock().cdn.download(&param("encrypted_query_param"));
            shared.bump();
            if status == 0 {
                return hang(shared).await;
            }
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::NOT_FOUND);
            (status, bytes).into_response()
        }
        ("upload", &Method::POST) => {
            let Ok(bytes) = to_bytes(body, MAX_UPLOAD).await else {
                return StatusCode::PAYLOAD_TOO_LARGE.into_response();
            };
            let (status, dl, err) = shared.lock().cdn.upload(
                &param("encrypted_query_param"),
                &param("filekey"),
                &bytes,
            );
            shared.bump();
            if status == 0 {
                return hang(shared).await;
            }
            let mut r = StatusCode::from_u16(status)
                .unwrap_or(StatusCode::BAD_REQUEST)
                .into_response();
            let h = r.headers_mut();
            if let Some(v) = dl.and_then(|d| d.parse().ok()) {
                h.insert("x-encrypted-param", v);
            }
            if let Some(v) = err.and_then(|e| e.parse().ok()) {
                h.insert("x-error-message", v);
            }
            r
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    };
    shared.bump();
    response
}

/// Holds a request until the fake shuts down (a transfer the client dies in, an answer never
/// given), then answers 503.
async fn hang(shared: &Shared) -> Response {
    let mut shutdown = shared.shutdown.subscribe();
    let _ = shutdown.wait_for(|down| *down).await;
    StatusCode::SERVICE_UNAVAILABLE.into_response()
}

fn route(prefix: &str, path: &str) -> Option<Endpoint> {
    path.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix("ilink/bot/"))
        .and_then(Endpoint::from_path)
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn bearer(h: &HeaderMap) -> Option<&str> {
    header_str(h, header::AUTHORIZATION.as_str())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

fn record(
    endpoint: Endpoint,
    method: &Method,
    h: &HeaderMap,
    body: Option<&Value>,
    query: Option<&str>,
    token_valid: bool,
) -> RecordedRequest {
    let owned = |name: &str| header_str(h, name).map(str::to_owned);
    RecordedRequest {
        endpoint,
        method: method.to_string(),
        app_id: owned(headers::APP_ID),
        client_version: owned(headers::APP_CLIENT_VERSION),
        uin: owned(headers::WECHAT_UIN),
        authorization_type: owned(headers::AUTHORIZATION_TYPE),
        token_valid,
        has_authorization: h.contains_key(header::AUTHORIZATION),
        route_tag: owned(headers::ROUTE_TAG),
        content_type: owned(header::CONTENT_TYPE.as_str()),
        base_info: body.and_then(|b| b.get("base_info")).cloned(),
        cursor: body
            .filter(|_| endpoint == Endpoint::GetUpdates)
            .and_then(|b| b.get("get_updates_buf"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        query: query.map(str::to_owned),
    }
}

/// The platform answers every auth problem with HTTP 200 and -14 (spec §8.3).
fn check_auth(h: &HeaderMap, endpoint: Endpoint, token_valid: bool) -> Option<Value> {
    let type_ok =
        header_str(h, headers::AUTHORIZATION_TYPE) == Some(headers::AUTHORIZATION_TYPE_VALUE);
    let uin_ok = header_str(h, headers::WECHAT_UIN).is_some_and(headers::is_valid_uin);
    let token_ok = !endpoint.needs_token() || token_valid;
    (!(type_ok && uin_ok && token_ok)).then(|| json!({"errcode": -14, "errmsg": "session timeout"}))
}

fn qrcode(shared: &Shared, bot_type: Option<&str>, body: Option<&Value>) -> Value {
    if bot_type != Some(BOT_TYPE) {
        return json!({"ret": -1, "errmsg": "invalid bot_type"});
    }
    let mut state = shared.lock();
    let tokens = body
        .and_then(|b| b.get("local_token_list"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    state.qr.local_token_lists.push(tokens);
    let id = state.qr.issue();
    let image = format!("{}qr/{id}", state.base_url);
    json!({"ret": 0, "qrcode": id, "qrcode_img_content": image})
}

async fn qr_status(shared: &Shared, qrcode: &str, verify_code: Option<&str>) -> Value {
    let (hold, start) = {
        let state = shared.lock();
        (state.config.qr_hold, state.qr.phase_of(qrcode))
    };
    // Answer as soon as the phase moves (e.g. wait -> scaned), else at the end of the hold.
    hold_until(shared, hold, |s| {
        !s.qr.should_hold(qrcode) || s.qr.phase_of(qrcode) != start
    })
    .await;
    shared.lock().qr.poll(qrcode, verify_code)
}

/// Counts a running `getupdates` handler until it ends or is dropped (its client hung up).
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn new(shared: &'a Shared) -> Self {
        shared.polls_in_flight.fetch_add(1, Ordering::SeqCst);
        shared.bump();
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.polls_in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.bump();
    }
}

async fn get_updates(shared: &Shared, cursor: &str) -> Value {
    let _counted = InFlight::new(shared);
    let hold = shared.lock().config.hold;
    hold_until(shared, hold, |s| s.has_pending(cursor)).await;
    // Taking the batch happens with no await before the response is returned, so a client
    // that hung up earlier (dropping this future) loses nothing.
    shared.lock().take_updates(cursor)
}

/// Waits until `ready` holds, `hold` passes, or the fake shuts down.
async fn hold_until(shared: &Shared, hold: Duration, ready: impl Fn(&State) -> bool) {
    let mut changed = shared.changed.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let deadline = Instant::now() + hold;
    loop {
        changed.borrow_and_update();
        if ready(&shared.lock()) || *shutdown.borrow() {
            return;
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            _ = tokio::time::sleep_until(deadline) => return,
            _ = shutdown.changed() => return,
        }
    }
}

fn ok_json(v: &Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

/// HTTP 200 headers, then a body that fails: the connection is cut mid-response.
fn reset() -> Response {
    let failing = futures_util::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "injected reset",
        ))
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(failing),
    )
        .into_response()
}
