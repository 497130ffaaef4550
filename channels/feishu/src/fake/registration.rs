//! A fake accounts host for "scan to create an app" (spec A6): `POST /oauth/v1/app/registration`
//! (form-encoded only) with `init`, `begin` and `poll`, a page the QR link opens (a test "scans"
//! by fetching it, which records the link's query), and in Lark mode a second host under
//! `/lark`. Times are `tokio::time`, so a test may pause the clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::registration::{REGISTRATION_PATH, RegistrationOptions};

/// The fake's settings; every knob of A6 items 1-5 and 7.
#[derive(Debug, Clone)]
pub struct RegistrationConfig {
    /// The app ID handed out (`cli_` + 16 hex).
    pub client_id: String,
    /// The app secret handed out.
    pub client_secret: String,
    /// The scanner's open_id in `user_info` (`None`: not sent).
    pub open_id: Option<String>,
    /// `init`'s methods (without `client_secret` a client must refuse).
    pub auth_methods: Vec<String>,
    /// `expires_in` sent by `begin`; past it a poll answers `expired_token`.
    pub expires_in: Duration,
    /// `interval` sent by `begin`.
    pub interval: Duration,
    /// A poll sooner than this after the previous one answers `slow_down`.
    pub min_interval: Duration,
    /// Spell the lifetime `expire_in` (older SDKs' reading).
    pub expire_in_spelling: bool,
    /// Send `verification_uri_complete` (else the client builds the link).
    pub complete_uri: bool,
    /// Lark mode: the Feishu host answers a scan with `tenant_brand:"lark"`, the ID and no
    /// secret; the host under `/lark` gives both.
    pub lark: bool,
}

impl Default for RegistrationConfig {
    fn default() -> Self {
        Self {
            client_id: "cli_0123456789abcdef".into(),
            client_secret: "s".repeat(32),
            open_id: Some("ou_scanner".into()),
            auth_methods: vec!["client_secret".into()],
            expires_in: Duration::from_secs(600),
            interval: Duration::from_secs(5),
            min_interval: Duration::from_secs(5),
            expire_in_spelling: false,
            complete_uri: true,
            lark: false,
        }
    }
}

/// What the next poll answers instead of its normal answer (until cleared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollFault {
    /// HTTP 400 `access_denied`.
    Denied,
    /// HTTP 400 `expired_token`.
    Expired,
    /// HTTP 400 `invalid_grant`.
    InvalidGrant,
    /// HTTP 400 with an unknown `error`.
    Unknown,
    /// HTTP 500 with a JSON-less body.
    Http500,
    /// HTTP 200 with an HTML page.
    NotJson,
    /// No answer for an hour.
    Stall,
}

/// One poll as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollRecord {
    /// `feishu` or `lark`: which host was asked.
    pub host: &'static str,
    /// When, on the tokio clock.
    pub at: Instant,
}

#[derive(Debug, Default)]
struct Reg {
    begins: Vec<HashMap<String, String>>,
    begins_on_lark: usize,
    device_code: Option<String>,
    begun_at: Option<Instant>,
    polls: Vec<PollRecord>,
    scanned: Option<HashMap<String, String>>,
    handed_out: bool,
    fault: Option<PollFault>,
    bad_content_types: usize,
}

#[derive(Debug)]
struct Shared {
    config: RegistrationConfig,
    base_url: String,
    state: Mutex<Reg>,
    changed: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Reg> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }
}

/// A running fake accounts host; dropping it stops the server.
#[derive(Debug)]
pub struct FakeRegistration {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for FakeRegistration {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type S = State<Arc<Shared>>;

impl FakeRegistration {
    /// Binds `127.0.0.1:0` and serves.
    pub async fn start(config: RegistrationConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            config,
            base_url,
            state: Mutex::new(Reg::default()),
            changed: watch::Sender::new(0),
        });
        let app = Router::new()
            .route(REGISTRATION_PATH, post(feishu_host))
            .route(&format!("/lark{REGISTRATION_PATH}"), post(lark_host))
            .route("/page/launcher", get(page))
            .route("/page/cli", get(page))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "fake registration server stopped");
            }
        });
        Ok(Self { shared, task })
    }

    /// `http://127.0.0.1:PORT` (the Feishu accounts host).
    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// Options pointing the client at this fake (Feishu host, `/lark` host, page base).
    pub fn options(&self, app_name: &str) -> RegistrationOptions {
        RegistrationOptions {
            feishu_accounts: self.shared.base_url.clone(),
            lark_accounts: format!("{}/lark", self.shared.base_url),
            open_base: self.shared.base_url.clone(),
            ..RegistrationOptions::official(app_name)
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &RegistrationConfig {
        &self.shared.config
    }

    /// Plays the phone: opens `qr_url` (it must be this fake's page with the current user
    /// code); from then on a poll hands out the app.
    pub async fn scan(&self, qr_url: &str) -> Result<(), String> {
        let resp = reqwest::get(qr_url).await.map_err(|e| e.to_string())?;
        match resp.status().is_success() {
            true => Ok(()),
            false => Err(format!("the page answered {}", resp.status())),
        }
    }

    /// Makes every following poll answer `fault` (`None`: normal answers again).
    pub fn set_fault(&self, fault: Option<PollFault>) {
        self.shared.lock().fault = fault;
    }

    /// The query of the link that was scanned, if any.
    pub fn scanned_query(&self) -> Option<HashMap<String, String>> {
        self.shared.lock().scanned.clone()
    }

    /// The forms `begin` received (on the Feishu host).
    pub fn begins(&self) -> Vec<HashMap<String, String>> {
        self.shared.lock().begins.clone()
    }

    /// `begin` calls that went to the Lark host (a client must never make one).
    pub fn begins_on_lark(&self) -> usize {
        self.shared.lock().begins_on_lark
    }

    /// Polls received, in order.
    pub fn polls(&self) -> Vec<PollRecord> {
        self.shared.lock().polls.clone()
    }

    /// Requests refused for not being form-encoded.
    pub fn bad_content_types(&self) -> usize {
        self.shared.lock().bad_content_types
    }

    /// Waits until `cond` holds (true) or `timeout` passes (false), checking again after each
    /// request the fake answers rather than on a clock.
    pub async fn wait_until(&self, timeout: Duration, cond: impl Fn(&Self) -> bool) -> bool {
        let mut rx = self.shared.changed.subscribe();
        let deadline = Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            if cond(self) {
                return true;
            }
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep_until(deadline) => return cond(self),
            }
        }
    }
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn oauth_error(error: &str) -> Response {
    reply(
        StatusCode::BAD_REQUEST,
        json!({"error": error, "error_description": format!("fake: {error}")}),
    )
}

async fn feishu_host(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    let r = registration(&sh, "feishu", &headers, &body).await;
    sh.bump();
    r
}

async fn lark_host(State(sh): S, headers: HeaderMap, body: Bytes) -> Response {
    let r = registration(&sh, "lark", &headers, &body).await;
    sh.bump();
    r
}

async fn registration(
    sh: &Shared,
    host: &'static str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let form_encoded = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !form_encoded {
        sh.lock().bad_content_types += 1;
        return oauth_error("invalid_request");
    }
    let form: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
    match form.get("action").map(String::as_str) {
        Some("init") => reply(
            StatusCode::OK,
            json!({"supported_auth_methods": sh.config.auth_methods}),
        ),
        Some("begin") => begin(sh, host, form),
        Some("poll") => poll(sh, host, &form).await,
        _ => oauth_error("invalid_request"),
    }
}

fn begin(sh: &Shared, host: &'static str, form: HashMap<String, String>) -> Response {
    if form.get("archetype").map(String::as_str) != Some("PersonalAgent")
        || form.get("auth_method").map(String::as_str) != Some("client_secret")
    {
        return oauth_error("invalid_request");
    }
    let c = &sh.config;
    let mut st = sh.lock();
    if host == "lark" {
        st.begins_on_lark += 1;
    }
    st.begins.push(form);
    let n = st.begins.len();
    let device_code = format!("dc-secret-{n}");
    st.device_code = Some(device_code.clone());
    st.begun_at = Some(Instant::now());
    st.scanned = None;
    st.handed_out = false;
    let user_code = format!("ABCD-{n:04}");
    let mut body = json!({
        "device_code": device_code,
        "user_code": user_code,
        "verification_uri": format!("{}/page/launcher", sh.base_url),
        "interval": c.interval.as_secs(),
    });
    let life = if c.expire_in_spelling {
        "expire_in"
    } else {
        "expires_in"
    };
    body[life] = json!(c.expires_in.as_secs());
    if c.complete_uri {
        body["verification_uri_complete"] = json!(format!(
            "{}/page/launcher?user_code={user_code}",
            sh.base_url
        ));
    }
    reply(StatusCode::OK, body)
}

async fn poll(sh: &Shared, host: &'static str, form: &HashMap<String, String>) -> Response {
    let fault = {
        let mut st = sh.lock();
        let now = Instant::now();
        // The pace is per host: the switch to the Lark host polls at once, rightly.
        let last = st.polls.iter().rev().find(|p| p.host == host).map(|p| p.at);
        st.polls.push(PollRecord { host, at: now });
        if st.device_code.is_none() || form.get("device_code") != st.device_code.as_ref() {
            return oauth_error("invalid_grant");
        }
        if st.begun_at.is_some_and(|b| now >= b + sh.config.expires_in) || st.handed_out {
            // After the credentials were handed out once: unconfirmed, answered as expired.
            return oauth_error("expired_token");
        }
        if last.is_some_and(|l| now < l + sh.config.min_interval) {
            return oauth_error("slow_down");
        }
        st.fault
    };
    match fault {
        Some(PollFault::Denied) => return oauth_error("access_denied"),
        Some(PollFault::Expired) => return oauth_error("expired_token"),
        Some(PollFault::InvalidGrant) => return oauth_error("invalid_grant"),
        Some(PollFault::Unknown) => return oauth_error("server_exploded"),
        Some(PollFault::Http500) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response();
        }
        Some(PollFault::NotJson) => return (StatusCode::OK, "<html>proxy</html>").into_response(),
        // No answer at all: the client's own timeout ends the wait, and the connection closes.
        Some(PollFault::Stall) => return std::future::pending::<Response>().await,
        None => {}
    }
    created(sh, host)
}

/// The answer to a poll once no fault applies: pending, or the app.
fn created(sh: &Shared, host: &'static str) -> Response {
    let c = &sh.config;
    let mut st = sh.lock();
    if st.scanned.is_none() {
        return oauth_error("authorization_pending");
    }
    let brand = if c.lark { "lark" } else { "feishu" };
    let mut user_info = json!({"tenant_brand": brand});
    if let Some(o) = &c.open_id {
        user_info["open_id"] = json!(o);
    }
    if c.lark && host == "feishu" {
        // The Feishu host knows the app but not the Lark tenant's secret.
        return reply(
            StatusCode::OK,
            json!({"client_id": c.client_id, "client_secret": "", "user_info": user_info}),
        );
    }
    st.handed_out = true;
    reply(
        StatusCode::OK,
        json!({"client_id": c.client_id, "client_secret": c.client_secret, "user_info": user_info}),
    )
}

/// The page the QR opens: a scan, when it carries the current user code.
async fn page(State(sh): S, Query(q): Query<HashMap<String, String>>) -> Response {
    let current = format!("ABCD-{:04}", sh.lock().begins.len());
    let r = if q.get("user_code") == Some(&current) {
        sh.lock().scanned = Some(q);
        (StatusCode::OK, "scanned").into_response()
    } else {
        (StatusCode::NOT_FOUND, "no such code").into_response()
    };
    sh.bump();
    r
}
