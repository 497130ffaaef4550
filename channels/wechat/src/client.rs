//! The iLink HTTP client: one method per endpoint, every body checked for `ret`/`errcode`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use crate::endpoint::Endpoint;
use crate::error::Error;
use crate::headers::{self, ClientIdentity};
use crate::message::WeixinMessage;
use crate::token::BotToken;
use crate::types::{
    ApiStatus, BOT_TYPE, DEFAULT_POLL_HOLD, GetBotQrcodeRequest, GetConfigBody, GetConfigRequest,
    GetUpdatesBody, GetUpdatesRequest, NotifyRequest, QrCodeTicket, QrStatus, SendMessageRequest,
    SendTypingRequest, TypingStatus, TypingTicket, Updates,
};

/// What the client adds to the server's suggested hold before it gives up on a long poll,
/// so the server (not the client) normally ends an idle poll (spec §3.1 recommends 5–10 s).
pub const DEFAULT_POLL_MARGIN: Duration = Duration::from_secs(10);

/// A client for one bot account (or for QR login, without a token). Cheap to clone; clones
/// share the connection pool and the learned long-poll hold.
#[derive(Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    base: Url,
    token: Option<BotToken>,
    pub(crate) identity: ClientIdentity,
    poll_margin: Duration,
    /// The last `longpolling_timeout_ms` the server suggested; 0 = none yet.
    suggested_hold_ms: Arc<AtomicU64>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base.as_str())
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

/// One HTTP client for every account in the process: each reqwest client carries its own TLS
/// configuration and root store (~150 KiB), which a daemon with hundreds of accounts should not
/// repeat. Requests carry their own token, so sharing the pool shares nothing private.
fn shared_http() -> Result<reqwest::Client, String> {
    static SHARED: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(c) = SHARED.get() {
        return Ok(c.clone());
    }
    let built = reqwest::Client::builder()
        .build()
        .map_err(|e| e.to_string())?;
    Ok(SHARED.get_or_init(|| built).clone())
}

impl Client {
    /// A client for `base_url` (e.g. the `baseurl` login returned; a path prefix is kept).
    /// Without a token only the QR login calls work.
    pub fn new(base_url: &str, token: Option<BotToken>) -> Result<Client, Error> {
        let http = shared_http().map_err(|e| Error::InvalidBaseUrl {
            url: base_url.to_owned(),
            detail: format!("cannot build the HTTP client: {e}"),
        })?;
        Ok(Client {
            http,
            base: parse_base(base_url)?,
            token,
            identity: ClientIdentity::default(),
            poll_margin: DEFAULT_POLL_MARGIN,
            suggested_hold_ms: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Replaces how the client describes itself (headers and `base_info`).
    pub fn with_identity(mut self, identity: ClientIdentity) -> Client {
        self.identity = identity;
        self
    }

    /// Replaces the margin added to the server's hold for the long-poll timeout.
    pub fn with_poll_margin(mut self, margin: Duration) -> Client {
        self.poll_margin = margin;
        self
    }

    /// The same client with a bot token (after login).
    pub fn with_token(&self, token: BotToken) -> Client {
        Client {
            token: Some(token),
            ..self.clone()
        }
    }

    /// The same client talking to another base URL (e.g. the `baseurl` login returned).
    pub fn with_base_url(&self, base_url: &str) -> Result<Client, Error> {
        Ok(Client {
            base: parse_base(base_url)?,
            ..self.clone()
        })
    }

    /// The client to keep polling a QR code with after `scaned_but_redirect`: the host (and
    /// port) replaced, scheme and path kept. The real server is HTTPS, so this is the spec's
    /// `https://<redirect_host>`; keeping the scheme lets a plain-HTTP fake redirect too.
    pub fn redirected(&self, host: &str) -> Result<Client, Error> {
        let invalid = |detail: &str| Error::InvalidBaseUrl {
            url: host.to_owned(),
            detail: detail.to_owned(),
        };
        let probe = Url::parse(&format!("{}://{}", self.base.scheme(), host.trim()))
            .map_err(|e| invalid(&e.to_string()))?;
        if probe.path() != "/" || probe.query().is_some() || !probe.username().is_empty() {
            return Err(invalid("a redirect host must be a bare host[:port]"));
        }
        let mut base = self.base.clone();
        base.set_host(probe.host_str())
            .map_err(|e| invalid(&e.to_string()))?;
        base.set_port(probe.port())
            .map_err(|()| invalid("cannot set the port"))?;
        Ok(Client {
            base,
            ..self.clone()
        })
    }

    /// The base URL in use (with a trailing `/`).
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    /// The timeout of the next long poll: the server's suggested hold (or the spec's 35 s
    /// default) plus the margin.
    pub fn poll_timeout(&self) -> Duration {
        let ms = self.suggested_hold_ms.load(Ordering::Relaxed);
        let hold = if ms == 0 {
            DEFAULT_POLL_HOLD
        } else {
            Duration::from_millis(ms)
        };
        hold + self.poll_margin
    }

    /// `get_bot_qrcode`: a new login QR code. `recent_tokens` (newest first, at most 10 sent)
    /// lets the server recognise a bot that is already bound.
    pub async fn get_qrcode(&self, recent_tokens: &[BotToken]) -> Result<QrCodeTicket, Error> {
        let endpoint = Endpoint::GetBotQrcode;
        let body = GetBotQrcodeRequest {
            local_token_list: recent_tokens
                .iter()
                .take(10)
                .map(|t| t.expose().to_owned())
                .collect(),
        };
        let bytes = self
            .post(
                endpoint,
                &[("bot_type", BOT_TYPE)],
                &body,
                endpoint.timeout(),
            )
            .await?;
        let ticket: QrCodeTicket = decode(endpoint, &bytes)?;
        if ticket.qrcode.is_empty() || ticket.qrcode_img_content.is_empty() {
            return Err(Error::Malformed {
                endpoint,
                detail: "no qrcode or qrcode_img_content".into(),
            });
        }
        Ok(ticket)
    }

    /// `get_qrcode_status`: one status poll (the server holds it briefly). A timeout, a
    /// network error or a gateway 5xx comes back as [`QrStatus::Wait`], as the spec says.
    pub async fn qrcode_status(
        &self,
        qrcode: &str,
        verify_code: Option<&str>,
    ) -> Result<QrStatus, Error> {
        let endpoint = Endpoint::GetQrcodeStatus;
        let mut query = vec![("qrcode", qrcode)];
        if let Some(code) = verify_code {
            query.push(("verify_code", code));
        }
        let bytes = match self.get(endpoint, &query, endpoint.timeout()).await {
            Ok(bytes) => bytes,
            Err(e @ (Error::Timeout { .. } | Error::Network { .. })) => {
                tracing::debug!(error = %e, "qr status poll failed; treated as wait");
                return Ok(QrStatus::Wait);
            }
            Err(Error::Http { status, .. }) if status >= 500 => {
                tracing::debug!(
                    status,
                    "qr status poll got a gateway error; treated as wait"
                );
                return Ok(QrStatus::Wait);
            }
            Err(e) => return Err(e),
        };
        crate::qr_status::parse_qr_status(decode(endpoint, &bytes)?)
    }

    /// `getupdates`: one long poll from cursor `buf` (`""` at first). A client timeout is an
    /// empty result with the same cursor and `timed_out` set, not an error.
    pub async fn get_updates(&self, buf: &str) -> Result<Updates, Error> {
        let endpoint = Endpoint::GetUpdates;
        let body = GetUpdatesRequest {
            get_updates_buf: buf.to_owned(),
            base_info: self.identity.base_info(),
        };
        let timeout = self.poll_timeout();
        let bytes = match self.post(endpoint, &[], &body, timeout).await {
            Ok(bytes) => bytes,
            Err(Error::Timeout { .. }) => {
                return Ok(Updates {
                    cursor: buf.to_owned(),
                    timed_out: true,
                    ..Updates::default()
                });
            }
            Err(e) => return Err(e),
        };
        let received = std::time::Instant::now();
        let body: GetUpdatesBody = decode(endpoint, &bytes)?;
        let suggested_hold = body.longpolling_timeout_ms.filter(|ms| *ms > 0).map(|ms| {
            self.suggested_hold_ms.store(ms, Ordering::Relaxed);
            Duration::from_millis(ms)
        });
        let mut updates = Updates {
            cursor: body
                .get_updates_buf
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| buf.to_owned()),
            suggested_hold,
            received: Some(received),
            ..Updates::default()
        };
        for raw in body.msgs.unwrap_or_default() {
            match serde_json::from_value::<WeixinMessage>(raw) {
                Ok(m) => updates.messages.push(m),
                Err(e) => {
                    updates.undecodable += 1;
                    tracing::warn!(error = %e, "getupdates: skipped a message that does not decode");
                }
            }
        }
        Ok(updates)
    }

    /// `sendmessage` with one TEXT item. `client_id` must be unique per call (see
    /// [`new_client_id`]); reusing one makes the platform refuse later sends. Pass the
    /// user's latest `context_token`; `None` leaves the field out (delivery then unconfirmed).
    pub async fn send_text(
        &self,
        to_user: &str,
        context_token: Option<&str>,
        text: &str,
        client_id: &str,
    ) -> Result<(), Error> {
        self.send_message(WeixinMessage::outbound_text(
            to_user,
            context_token,
            text,
            client_id,
        ))
        .await
    }

    /// `sendmessage` with a message built by the caller (exactly one item per call).
    pub async fn send_message(&self, msg: WeixinMessage) -> Result<(), Error> {
        let endpoint = Endpoint::SendMessage;
        let body = SendMessageRequest {
            msg,
            base_info: self.identity.base_info(),
        };
        self.post(endpoint, &[], &body, endpoint.timeout())
            .await
            .map(drop)
    }

    /// `getconfig`: the typing ticket for `user_id`, or `None` when the server gave none.
    pub async fn get_config(
        &self,
        user_id: &str,
        context_token: Option<&str>,
    ) -> Result<Option<TypingTicket>, Error> {
        let endpoint = Endpoint::GetConfig;
        let body = GetConfigRequest {
            ilink_user_id: user_id.to_owned(),
            context_token: context_token.map(str::to_owned),
            base_info: self.identity.base_info(),
        };
        let bytes = self.post(endpoint, &[], &body, endpoint.timeout()).await?;
        let body: GetConfigBody = decode(endpoint, &bytes)?;
        Ok(body
            .typing_ticket
            .filter(|t| !t.is_empty())
            .map(TypingTicket))
    }

    /// `sendtyping`: show or cancel "typing" for `user_id`.
    pub async fn send_typing(
        &self,
        user_id: &str,
        ticket: &TypingTicket,
        status: TypingStatus,
    ) -> Result<(), Error> {
        let endpoint = Endpoint::SendTyping;
        let body = SendTypingRequest {
            ilink_user_id: user_id.to_owned(),
            typing_ticket: ticket.0.clone(),
            status: status.code(),
            base_info: self.identity.base_info(),
        };
        self.post(endpoint, &[], &body, endpoint.timeout())
            .await
            .map(drop)
    }

    /// `msg/notifystart`: once before the first long poll.
    pub async fn notify_start(&self) -> Result<(), Error> {
        self.notify(Endpoint::NotifyStart).await
    }

    /// `msg/notifystop`: once on shutdown.
    pub async fn notify_stop(&self) -> Result<(), Error> {
        self.notify(Endpoint::NotifyStop).await
    }

    async fn notify(&self, endpoint: Endpoint) -> Result<(), Error> {
        let body = NotifyRequest {
            base_info: self.identity.base_info(),
        };
        self.post(endpoint, &[], &body, endpoint.timeout())
            .await
            .map(drop)
    }

    fn url(&self, endpoint: Endpoint, query: &[(&str, &str)]) -> Result<Url, Error> {
        let mut url = self
            .base
            .join(&format!("ilink/bot/{}", endpoint.path()))
            .map_err(|e| Error::InvalidBaseUrl {
                url: self.base.to_string(),
                detail: e.to_string(),
            })?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    fn common_headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        insert(&mut h, headers::APP_ID, &self.identity.app_id);
        insert(
            &mut h,
            headers::APP_CLIENT_VERSION,
            &self.identity.client_version_header(),
        );
        if let Some(tag) = &self.identity.route_tag {
            insert(&mut h, headers::ROUTE_TAG, tag);
        }
        h
    }

    async fn get(
        &self,
        endpoint: Endpoint,
        query: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Bytes, Error> {
        let request = self
            .http
            .get(self.url(endpoint, query)?)
            .headers(self.common_headers());
        self.execute(endpoint, request, timeout).await
    }

    pub(crate) async fn post<B: Serialize>(
        &self,
        endpoint: Endpoint,
        query: &[(&str, &str)],
        body: &B,
        timeout: Duration,
    ) -> Result<Bytes, Error> {
        let mut h = self.common_headers();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(
            headers::AUTHORIZATION_TYPE,
            HeaderValue::from_static(headers::AUTHORIZATION_TYPE_VALUE),
        );
        insert(&mut h, headers::WECHAT_UIN, &headers::random_uin());
        if endpoint.needs_token() {
            let token = self.token.as_ref().ok_or(Error::NoToken { endpoint })?;
            let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                .map_err(|_| Error::NoToken { endpoint })?;
            value.set_sensitive(true);
            h.insert(reqwest::header::AUTHORIZATION, value);
        }
        let json = serde_json::to_vec(body).map_err(|e| Error::Malformed {
            endpoint,
            detail: format!("cannot encode the request: {e}"),
        })?;
        let request = self
            .http
            .post(self.url(endpoint, query)?)
            .headers(h)
            .body(json);
        self.execute(endpoint, request, timeout).await
    }

    /// Sends, reads the whole body under one timeout, and checks status and `ret`/`errcode`.
    async fn execute(
        &self,
        endpoint: Endpoint,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<Bytes, Error> {
        let call = async {
            let response = request.send().await.map_err(|e| network(endpoint, e))?;
            let status = response.status();
            if !status.is_success() {
                return Err(Error::Http {
                    endpoint,
                    status: status.as_u16(),
                });
            }
            response.bytes().await.map_err(|e| network(endpoint, e))
        };
        let mut call = std::pin::pin!(call);
        let bytes = match tokio::time::timeout(timeout, call.as_mut()).await {
            Ok(done) => done?,
            // The deadline passed, but an answer may already be in the socket, unread: after a
            // suspension (SIGSTOP, a laptop lid) the timer and the socket become ready together,
            // and the timer can win. The server counts a poll's messages as delivered once it
            // wrote them, so giving up now would lose them. The call gets a last look, timed from
            // now (the process is running again): only if nothing completes in it is the request
            // unanswered.
            Err(_) => match tokio::time::timeout(last_look(timeout), call.as_mut()).await {
                Ok(done) => {
                    tracing::debug!(%endpoint, "the answer came as the deadline passed; kept");
                    done?
                }
                Err(_) => {
                    return Err(Error::Timeout {
                        endpoint,
                        after: timeout,
                    });
                }
            },
        };
        let status: ApiStatus = decode(endpoint, &bytes)?;
        if !status.is_ok() {
            return Err(Error::Api {
                endpoint,
                ret: status.ret,
                errcode: status.errcode,
                errmsg: status.errmsg.unwrap_or_default(),
            });
        }
        tracing::trace!(%endpoint, "ilink call ok");
        Ok(bytes)
    }
}

/// The longest last look at a call whose deadline passed.
const LAST_LOOK: Duration = Duration::from_secs(2);

/// How long a call whose deadline passed may still complete: long enough for an answer already
/// received to be read and parsed, short beside the deadline itself.
fn last_look(timeout: Duration) -> Duration {
    LAST_LOOK.min(timeout / 4)
}

/// A fresh, unique `client_id` for one send: `scv-wechat:<epoch ms>-<8 hex>`, the plugin's
/// shape. Unique per call with overwhelming probability; the caller stores it with the
/// outbox entry so a retry after a crash reuses the same id for the same chunk.
pub fn new_client_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("scv-wechat:{ms}-{:08x}", rand::random::<u32>())
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

fn insert(h: &mut HeaderMap, name: &'static str, value: &str) {
    // Every value we send is ASCII we built; a configured value that is not a valid header
    // (e.g. a route tag with a newline) is left out rather than failing every call.
    match HeaderValue::from_str(value) {
        Ok(v) => {
            h.insert(name, v);
        }
        Err(_) => tracing::warn!(header = name, "header value is not valid; not sent"),
    }
}

fn network(endpoint: Endpoint, e: reqwest::Error) -> Error {
    // Our timeouts are tokio's (see `execute`), so a reqwest error is never one of ours.
    Error::Network {
        endpoint,
        source: e.without_url(),
    }
}

fn decode<T: DeserializeOwned>(endpoint: Endpoint, bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Malformed {
        endpoint,
        detail: e.to_string(),
    })
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
