//! The OpenAPI client: messages, card patches, bot info and app owner, over a shared token cache.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::classify::TOKEN_INVALID_CODES;
use crate::domain::Domain;
use crate::error::Error;
use crate::response::read_json;
use crate::secret::{Credentials, Secret};
use crate::token::{DEFAULT_MARGIN, TokenCache};

/// How to build a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Feishu, Lark or a base URL.
    pub domain: Domain,
    /// App id and secret.
    pub credentials: Credentials,
    /// A token is refreshed this long before the server's expiry.
    pub token_margin: Duration,
    /// Timeout of one HTTP request.
    pub request_timeout: Duration,
}

impl ClientOptions {
    /// Options with SDK-like defaults (3 min token margin, 30 s request timeout).
    pub fn new(domain: Domain, credentials: Credentials) -> Self {
        Self {
            domain,
            credentials,
            token_margin: DEFAULT_MARGIN,
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// A cheap-to-clone client for one app.
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    base: String,
    creds: Credentials,
    tokens: TokenCache,
}

/// Who receives a new message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiveId {
    /// A user by `ou_…` open_id (a DM).
    OpenId(String),
    /// A chat by `oc_…` chat_id (group or p2p chat).
    ChatId(String),
    /// A user by `on_…` union_id.
    UnionId(String),
}

impl ReceiveId {
    fn parts(&self) -> (&'static str, &str) {
        match self {
            ReceiveId::OpenId(id) => ("open_id", id),
            ReceiveId::ChatId(id) => ("chat_id", id),
            ReceiveId::UnionId(id) => ("union_id", id),
        }
    }
}

/// A message body to send.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageContent {
    /// Plain text (`<at user_id="ou_x">Name</at>` mentions allowed).
    Text(String),
    /// A rich-text post: the `{"zh_cn":{title,content}}` object.
    Post(Value),
    /// An interactive card: the card JSON itself.
    Card(Value),
}

impl MessageContent {
    /// A post whose paragraphs are markdown (`md` elements).
    pub fn post_markdown(title: &str, markdown: &str) -> Self {
        MessageContent::Post(json!({
            "zh_cn": {"title": title, "content": [[{"tag": "md", "text": markdown}]]}
        }))
    }

    /// The `msg_type` field.
    pub fn msg_type(&self) -> &'static str {
        match self {
            MessageContent::Text(_) => "text",
            MessageContent::Post(_) => "post",
            MessageContent::Card(_) => "interactive",
        }
    }

    /// The `content` field: JSON serialised into a string.
    pub fn content_string(&self) -> String {
        match self {
            MessageContent::Text(t) => json!({ "text": t }).to_string(),
            MessageContent::Post(v) | MessageContent::Card(v) => v.to_string(),
        }
    }

    /// The platform's request-size limit for this type (150 KB text, 30 KB post and card).
    pub fn size_limit(&self) -> usize {
        match self {
            MessageContent::Text(_) => 150 * 1024,
            _ => 30 * 1024,
        }
    }
}

/// What the platform returned for a sent message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    /// `om_…` id of the new message.
    pub message_id: String,
    /// `oc_…` chat it went to.
    pub chat_id: Option<String>,
    /// Thread (topic) id, when replied in thread.
    pub thread_id: Option<String>,
}

/// The bot's own identity (`GET /open-apis/bot/v3/info`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BotInfo {
    /// The bot's `ou_…` open_id: for mention detection and self-echo filtering.
    pub open_id: String,
    /// App name.
    #[serde(default)]
    pub app_name: String,
    /// 2 = enabled.
    #[serde(default)]
    pub activate_status: i64,
}

/// The app's owner and creator (`GET /open-apis/application/v6/applications/{app_id}`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AppOwner {
    /// `owner.owner_id`.
    pub owner_id: Option<String>,
    /// `owner.owner_type` (2 = internal member).
    pub owner_type: Option<i64>,
    /// `creator_id`.
    pub creator_id: Option<String>,
}

impl AppOwner {
    /// The owner's id: `owner_id` for an internal-member owner, else the creator.
    pub fn open_id(&self) -> Option<&str> {
        match (self.owner_type, &self.owner_id) {
            (Some(2), Some(id)) if !id.is_empty() => Some(id),
            _ => self.creator_id.as_deref().filter(|s| !s.is_empty()),
        }
    }
}

impl Client {
    /// Builds a client; does no IO.
    pub fn new(options: ClientOptions) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .timeout(options.request_timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Error::Network(e.to_string()))?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                base: options.domain.base_url().to_string(),
                creds: options.credentials,
                tokens: TokenCache::new(options.token_margin),
            }),
        })
    }

    /// The base URL (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// The app id.
    pub fn app_id(&self) -> &str {
        &self.inner.creds.app_id
    }

    pub(crate) fn credentials(&self) -> &Credentials {
        &self.inner.creds
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// A valid tenant_access_token (cached); also verifies the credentials at login.
    pub async fn tenant_token(&self) -> Result<Secret, Error> {
        self.inner
            .tokens
            .get(&self.inner.http, &self.inner.base, &self.inner.creds)
            .await
    }

    /// Sends a message; `uuid` is the caller's idempotency key (same uuid within 1 h = sent once).
    pub async fn send(
        &self,
        to: &ReceiveId,
        content: &MessageContent,
        uuid: &str,
    ) -> Result<SentMessage, Error> {
        let (id_type, id) = to.parts();
        let body = json!({
            "receive_id": id,
            "msg_type": content.msg_type(),
            "content": content.content_string(),
            "uuid": uuid,
        });
        let path = format!("/open-apis/im/v1/messages?receive_id_type={id_type}");
        let data = self.call(Method::POST, &path, Some(body)).await?;
        sent_message(data)
    }

    /// Replies to `message_id` (in its topic thread when `in_thread`), with idempotency key `uuid`.
    pub async fn reply(
        &self,
        message_id: &str,
        content: &MessageContent,
        in_thread: bool,
        uuid: &str,
    ) -> Result<SentMessage, Error> {
        let body = json!({
            "msg_type": content.msg_type(),
            "content": content.content_string(),
            "reply_in_thread": in_thread,
            "uuid": uuid,
        });
        let path = format!(
            "/open-apis/im/v1/messages/{}/reply",
            path_segment(message_id)?
        );
        let data = self.call(Method::POST, &path, Some(body)).await?;
        sent_message(data)
    }

    /// Replaces a sent card (the card must declare `config.update_multi: true`).
    pub async fn patch_card(&self, message_id: &str, card: &Value) -> Result<(), Error> {
        let body = json!({ "content": card.to_string() });
        let path = format!("/open-apis/im/v1/messages/{}", path_segment(message_id)?);
        self.call(Method::PATCH, &path, Some(body))
            .await
            .map(|_| ())
    }

    /// Delayed card update with a `c-…` callback token (within 30 min of the click).
    pub async fn update_card_by_token(&self, token: &str, card: &Value) -> Result<(), Error> {
        let body = json!({ "token": token, "card": card });
        self.call(
            Method::POST,
            "/open-apis/interactive/v1/card/update",
            Some(body),
        )
        .await
        .map(|_| ())
    }

    /// The bot's identity; fetch once per start, never poll.
    pub async fn bot_info(&self) -> Result<BotInfo, Error> {
        let whole = self
            .call_envelope(Method::GET, "/open-apis/bot/v3/info", None)
            .await?;
        // `bot` is top-level on the real API; accept it under `data` too.
        let bot = whole
            .get("bot")
            .or_else(|| whole.get("data").and_then(|d| d.get("bot")))
            .cloned()
            .ok_or_else(|| Error::Decode("bot info without `bot`".into()))?;
        serde_json::from_value(bot).map_err(|e| Error::Decode(format!("bot info: {e}")))
    }

    /// The app's owner (needs scope `application:application:self_manage`).
    pub async fn app_owner(&self) -> Result<AppOwner, Error> {
        let path = format!(
            "/open-apis/application/v6/applications/{}?lang=zh_cn",
            path_segment(&self.inner.creds.app_id)?
        );
        let data = self.call(Method::GET, &path, None).await?;
        let app = data.get("app").cloned().unwrap_or(Value::Null);
        let owner = app.get("owner");
        Ok(AppOwner {
            owner_id: owner
                .and_then(|o| o.get("owner_id"))
                .and_then(Value::as_str)
                .map(String::from),
            owner_type: owner
                .and_then(|o| o.get("owner_type"))
                .and_then(Value::as_i64),
            creator_id: app
                .get("creator_id")
                .and_then(Value::as_str)
                .map(String::from),
        })
    }

    /// Drops `token` from the cache (the media calls' own token-invalid retry).
    pub(crate) async fn drop_token(&self, token: &Secret) {
        self.inner.tokens.invalidate(token).await;
    }

    /// Calls an OpenAPI path and returns `data` (or `null`).
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Error> {
        let mut whole = self.call_envelope(method, path, body).await?;
        Ok(whole
            .get_mut("data")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }

    /// Calls an OpenAPI path and returns the whole envelope; on a token-invalid code drops the
    /// token, fetches a new one and retries exactly once.
    async fn call_envelope(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Error> {
        let mut retried = false;
        loop {
            let token = self.tenant_token().await?;
            let url = format!("{}{}", self.inner.base, path);
            let mut req = self
                .inner
                .http
                .request(method.clone(), url)
                .bearer_auth(token.expose());
            if let Some(b) = &body {
                req = req
                    .header("Content-Type", "application/json; charset=utf-8")
                    .json(b);
            }
            let (status, value, retry_after) = read_json(req.send().await?).await?;
            let code = value
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(if status == 429 { 99991400 } else { -1 });
            if code == 0 {
                return Ok(value);
            }
            if TOKEN_INVALID_CODES.contains(&code) && !retried {
                tracing::debug!(code, "tenant token rejected; refetching once");
                self.inner.tokens.invalidate(&token).await;
                retried = true;
                continue;
            }
            let msg = value
                .get("msg")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            return Err(Error::Api {
                code,
                msg,
                http_status: status,
                retry_after,
            });
        }
    }
}

pub(crate) fn sent_message(data: Value) -> Result<SentMessage, Error> {
    let s = |k: &str| data.get(k).and_then(Value::as_str).map(String::from);
    let message_id =
        s("message_id").ok_or_else(|| Error::Decode("send response without message_id".into()))?;
    Ok(SentMessage {
        message_id,
        chat_id: s("chat_id"),
        thread_id: s("thread_id"),
    })
}

/// Refuses ids that would change the request path.
pub(crate) fn path_segment(id: &str) -> Result<&str, Error> {
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(Error::Invalid(format!("bad id {id:?}")));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_a_json_string() {
        let t = MessageContent::Text("a\"b".into());
        assert_eq!(t.msg_type(), "text");
        let back: Value = serde_json::from_str(&t.content_string()).unwrap();
        assert_eq!(back["text"], "a\"b");
        let p = MessageContent::post_markdown("T", "**x**");
        assert_eq!(p.msg_type(), "post");
        assert!(p.content_string().contains("\"md\""));
    }

    #[tokio::test]
    async fn a_refused_connection_says_so() {
        // Bound and closed again: nothing listens there now.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let domain: Domain = format!("http://127.0.0.1:{port}").parse().expect("domain");
        let client = Client::new(ClientOptions::new(domain, Credentials::new("cli_a", "s")))
            .expect("client");
        let e = client.tenant_token().await.expect_err("nothing listens");
        let text = e.to_string();
        assert!(text.contains("connection refused"), "{text}");
        assert!(!text.contains("os error"), "{text}");
    }

    #[test]
    fn owner_rule() {
        let o = AppOwner {
            owner_id: Some("ou_o".into()),
            owner_type: Some(2),
            creator_id: Some("ou_c".into()),
        };
        assert_eq!(o.open_id(), Some("ou_o"));
        let o = AppOwner {
            owner_type: Some(1),
            ..o
        };
        assert_eq!(o.open_id(), Some("ou_c"));
    }

    #[test]
    fn ids_cannot_escape_the_path() {
        assert!(path_segment("om_abc-1").is_ok());
        assert!(path_segment("../x").is_err());
        assert!(path_segment("a?b").is_err());
        assert!(path_segment("").is_err());
    }
}
