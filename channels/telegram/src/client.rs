//! The Bot API HTTP client: one request shape for every method, the `{ok, result}` envelope
//! checked once, and the inbound long poll.

use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use url::Url;

use crate::error::Error;
use crate::limits::{DEFAULT_POLL_TIMEOUT, MAX_UPDATES_PER_POLL, POLL_MARGIN};
use crate::method::Method;
use crate::token::BotToken;
use crate::types::{BotInfo, WebhookInfo};
use crate::update::{ALLOWED_UPDATES, Batch, Offset, Update};

/// The largest answer read (a full batch of 100 updates is a few MB).
pub const MAX_ANSWER_BYTES: usize = 32 << 20;

/// The public Bot API.
pub const DEFAULT_BASE_URL: &str = "https://api.telegram.org/";

/// A client for one bot token. Made by the account task from the stored token (and by
/// `login telegram` for its check); cheap to clone, clones share the connection pool.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: Url,
    token: BotToken,
    poll_timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base.as_str())
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

/// One HTTP client for every account in the process (each reqwest client carries its own TLS
/// root store); requests carry their own token in the path, so sharing the pool shares nothing.
fn shared_http() -> Result<reqwest::Client, String> {
    static SHARED: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(c) = SHARED.get() {
        return Ok(c.clone());
    }
    let built = reqwest::Client::builder()
        // A redirect would carry the token-bearing path elsewhere; the Bot API never redirects.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    Ok(SHARED.get_or_init(|| built).clone())
}

impl Client {
    /// A client for `base_url` ([`DEFAULT_BASE_URL`], the fake, or a self-hosted Bot API server;
    /// a path prefix is kept).
    pub fn new(base_url: &str, token: BotToken) -> Result<Client, Error> {
        let http = shared_http().map_err(|e| Error::InvalidBaseUrl {
            url: base_url.to_owned(),
            detail: format!("cannot build the HTTP client: {e}"),
        })?;
        Ok(Client {
            http,
            base: parse_base(base_url)?,
            token,
            poll_timeout: DEFAULT_POLL_TIMEOUT,
        })
    }

    /// The same client asking for long polls of `timeout` (whole seconds; 0 = short polling).
    pub fn with_poll_timeout(mut self, timeout: Duration) -> Client {
        self.poll_timeout = Duration::from_secs(timeout.as_secs());
        self
    }

    /// The client timeout of one long poll: the poll time plus [`POLL_MARGIN`]. A poll still
    /// unanswered then is a link that died silently: [`Error::Timeout`].
    pub fn poll_deadline(&self) -> Duration {
        self.poll_timeout + POLL_MARGIN
    }

    /// The bot token (for the credential store).
    pub fn token(&self) -> &BotToken {
        &self.token
    }

    /// `getMe`: the bot's identity. The login check and the start-up probe.
    pub async fn get_me(&self) -> Result<BotInfo, Error> {
        self.call(Method::GetMe, &json!({})).await
    }

    /// `getUpdates` from `offset`: one long poll (the server answers at once when updates are
    /// pending, else after the poll time with none). Confirms every update below `offset`.
    ///
    /// Persist [`Batch::next_offset`] only after every update of the batch is journaled: the
    /// updates stay on the server until a later call carries that offset, so a crash before
    /// it replays them and loses none.
    pub async fn get_updates(&self, offset: Offset) -> Result<Batch, Error> {
        let body = poll_body(offset, MAX_UPDATES_PER_POLL, self.poll_timeout);
        let result: Value = self
            .call_with(Method::GetUpdates, &body, self.poll_deadline())
            .await?;
        let Value::Array(items) = result else {
            return Err(Error::Malformed {
                method: Method::GetUpdates,
                detail: "result is not a list".into(),
            });
        };
        let total = items.len();
        let updates: Vec<Update> = items.into_iter().filter_map(Update::parse).collect();
        let skipped = total - updates.len();
        if skipped > 0 {
            tracing::warn!(skipped, "getUpdates: left out updates without an update_id");
        }
        Ok(Batch::new(updates, skipped))
    }

    /// Tells the server which offset was persisted, without waiting (`getUpdates` with
    /// `limit 1, timeout 0`, as teloxide does on shutdown, spec §1.2). Call after persisting
    /// the offset, before exiting; what it returns is not confirmed and is ignored.
    pub async fn confirm(&self, offset: Offset) -> Result<(), Error> {
        let body = poll_body(offset, 1, Duration::ZERO);
        self.call::<Value>(Method::GetUpdates, &body)
            .await
            .map(drop)
    }

    /// `deleteWebhook` keeping pending updates: the fix for [`crate::FatalReason::WebhookSet`]
    /// when the account is configured for polling. Call it once, and log that it was called.
    pub async fn delete_webhook(&self) -> Result<(), Error> {
        let body = json!({"drop_pending_updates": false});
        self.call::<Value>(Method::DeleteWebhook, &body)
            .await
            .map(drop)
    }

    /// `getWebhookInfo`: for `doctor` (a set `url` means polling gets 409).
    pub async fn webhook_info(&self) -> Result<WebhookInfo, Error> {
        self.call(Method::GetWebhookInfo, &json!({})).await
    }

    /// One JSON call with the method's own timeout.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        body: &impl Serialize,
    ) -> Result<T, Error> {
        self.call_with(method, body, method.timeout()).await
    }

    pub(crate) async fn call_with<T: DeserializeOwned>(
        &self,
        method: Method,
        body: &impl Serialize,
        timeout: Duration,
    ) -> Result<T, Error> {
        let json = serde_json::to_vec(body).map_err(|e| Error::Malformed {
            method,
            detail: format!("cannot encode the request: {e}"),
        })?;
        let request = self
            .http
            .post(self.method_url(method)?)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(json);
        let (status, bytes) = self.send(method, request, timeout).await?;
        envelope(method, status, &bytes)
    }

    /// Sends a request and reads its whole body under one deadline.
    pub(crate) async fn send(
        &self,
        method: Method,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<(u16, Bytes), Error> {
        let call = async {
            let response = request.send().await.map_err(|e| network(method, e))?;
            let status = response.status().as_u16();
            let bytes = read_capped(method, response).await?;
            Ok((status, bytes))
        };
        // No "last look" after the deadline (as the WeChat client has): an answer lost here is
        // not lost on the platform, whose updates stay until a later offset confirms them.
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or(Err(Error::Timeout {
                method,
                after: timeout,
            }))
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// `<base>bot<token>/<method>`. Never logged: it holds the token.
    pub(crate) fn method_url(&self, method: Method) -> Result<Url, Error> {
        // `./`: a relative reference starting `123:abc` would parse as a URL with scheme `123`.
        self.join(&format!("./bot{}/{}", self.token.expose(), method.name()))
    }

    /// `<base>file/bot<token>/<path>`; the path comes from `getFile` and is joined as segments,
    /// so a `..` in it cannot leave the file area.
    pub(crate) fn file_url(&self, path: &str) -> Result<Url, Error> {
        let mut url = self.join(&format!("./file/bot{}/", self.token.expose()))?;
        {
            let mut segments = url
                .path_segments_mut()
                .map_err(|()| Error::InvalidBaseUrl {
                    url: self.base.to_string(),
                    detail: "cannot hold a path".into(),
                })?;
            segments.pop_if_empty();
            for s in path
                .split('/')
                .filter(|s| !s.is_empty() && *s != "." && *s != "..")
            {
                segments.push(s);
            }
        }
        Ok(url)
    }

    fn join(&self, tail: &str) -> Result<Url, Error> {
        self.base.join(tail).map_err(|e| Error::InvalidBaseUrl {
            url: self.base.to_string(),
            detail: e.to_string(),
        })
    }
}

/// Reads a whole answer, refusing one over [`MAX_ANSWER_BYTES`] (a broken proxy or a hostile
/// server must not make us buffer without end).
async fn read_capped(method: Method, mut response: reqwest::Response) -> Result<Bytes, Error> {
    let mut buf = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| network(method, e))? {
        if buf.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Error::Malformed {
                method,
                detail: format!("answer over {MAX_ANSWER_BYTES} bytes"),
            });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

fn poll_body(offset: Offset, limit: u8, timeout: Duration) -> Value {
    let mut body = json!({
        "limit": limit,
        "timeout": timeout.as_secs(),
        "allowed_updates": ALLOWED_UPDATES,
    });
    if offset.get() > 0 {
        body["offset"] = json!(offset.get());
    }
    body
}

/// The platform's error body (spec §1.1).
#[derive(serde::Deserialize)]
struct Failure {
    #[serde(default)]
    error_code: Option<i64>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<Parameters>,
}

#[derive(serde::Deserialize)]
struct Parameters {
    #[serde(default)]
    retry_after: Option<u64>,
    #[serde(default)]
    migrate_to_chat_id: Option<i64>,
}

/// Checks `{ok, result}` and decodes `result`. The body is read as lossy UTF-8 first: one bad
/// byte in one caption must not fail a whole batch.
pub(crate) fn envelope<T: DeserializeOwned>(
    method: Method,
    status: u16,
    bytes: &[u8],
) -> Result<T, Error> {
    let text = String::from_utf8_lossy(bytes);
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) if !(200..300).contains(&status) => return Err(Error::Http { method, status }),
        Err(e) => {
            return Err(Error::Malformed {
                method,
                detail: format!("not JSON ({} bytes): {}", bytes.len(), e.classify_name()),
            });
        }
    };
    if value.get("ok").and_then(Value::as_bool) == Some(true) {
        let result = value.get("result").cloned().unwrap_or(Value::Null);
        return serde_json::from_value(result).map_err(|e| Error::Malformed {
            method,
            detail: crate::update::shape_of(&e),
        });
    }
    let Ok(failure) = serde_json::from_value::<Failure>(value) else {
        return Err(Error::Http { method, status });
    };
    let code = failure
        .error_code
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(status);
    let params = failure.parameters;
    Err(Error::Api {
        method,
        code,
        description: failure.description,
        retry_after: params.as_ref().and_then(|p| p.retry_after),
        migrate_to: params.and_then(|p| p.migrate_to_chat_id),
    })
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "read error",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "unexpected shape",
            serde_json::error::Category::Eof => "truncated",
        }
    }
}

fn parse_base(base_url: &str) -> Result<Url, Error> {
    let invalid = |detail: String| Error::InvalidBaseUrl {
        url: base_url.to_owned(),
        detail,
    };
    let mut url = Url::parse(base_url.trim()).map_err(|e| invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid("need an http(s) URL with a host".into()));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("a base URL has no query or fragment".into()));
    }
    // `Url::join` replaces the last path segment unless the path ends with `/`.
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// A transport error without its URL, which holds the token.
pub(crate) fn network(method: Method, e: reqwest::Error) -> Error {
    Error::Network {
        method,
        source: e.without_url(),
    }
}
