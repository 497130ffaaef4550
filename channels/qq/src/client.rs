//! [`Client`]: the OpenAPI calls of one bot, with its token cache, the refresh-and-retry-once
//! rule for a stale token (§1.2) and the rate-limit wait (§6). Sending is in [`crate::send`],
//! media in [`crate::media`]; both are methods of this type.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;

use crate::answer::{parse_answer, read_capped};
use crate::classify::TOKEN_STALE;
use crate::error::{Call, Error};
use crate::limits::{API_TIMEOUT, RATE_LIMIT_FIRST_WAIT, RATE_LIMIT_MAX_WAIT};
use crate::secret::{Credentials, Secret};
use crate::token::TokenCache;

/// Kept here too: callers knew the cap as `client::MAX_API_BODY`.
pub use crate::answer::MAX_API_BODY;

/// The production OpenAPI host (§1.1).
pub const API_BASE: &str = "https://api.sgroup.qq.com";
/// The sandbox OpenAPI host (§1.1).
pub const SANDBOX_API_BASE: &str = "https://sandbox.api.sgroup.qq.com";
/// The token host (§1.1).
pub const TOKEN_BASE: &str = "https://bots.qq.com";

/// Where a [`Client`] talks to and as whom. Every base URL is configurable so tests point at the
/// fake (`fake::FakeQq::options`).
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// OpenAPI base, e.g. [`API_BASE`].
    pub api_base: String,
    /// Token host, e.g. [`TOKEN_BASE`].
    pub token_base: String,
    /// The bot's credentials.
    pub credentials: Credentials,
    /// Scheme put in front of an attachment URL that arrives without one (§2.1 says `https`).
    pub attachment_scheme: String,
}

impl ClientOptions {
    /// Production hosts for these credentials.
    pub fn new(credentials: Credentials) -> Self {
        Self {
            api_base: API_BASE.into(),
            token_base: TOKEN_BASE.into(),
            credentials,
            attachment_scheme: "https".into(),
        }
    }
}

/// The bot's own identity: what the login check returns and READY repeats.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BotIdentity {
    /// The bot's user id.
    pub id: String,
    /// Its display name.
    #[serde(default)]
    pub username: String,
}

/// One bot's OpenAPI client. Cheap to clone; clones share the token and the rate-limit state.
#[derive(Clone, Debug)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) options: Arc<ClientOptions>,
    tokens: Arc<TokenCache>,
    /// Consecutive rate-limit answers: the next wait is 1 s doubled this many times.
    rate_streak: Arc<AtomicU32>,
}

impl Client {
    /// A client; does no IO.
    pub fn new(options: ClientOptions) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| Error::network(Call::Token, e))?;
        Ok(Self {
            http,
            options: Arc::new(options),
            tokens: Arc::new(TokenCache::default()),
            rate_streak: Arc::new(AtomicU32::new(0)),
        })
    }

    /// The options this client was made with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// The login check for `login qq ACCOUNT`: fetches a token with the credentials (a refusal
    /// is `Fatal(BadCredentials)`) and reads the bot's identity with it.
    pub async fn check_login(&self) -> Result<BotIdentity, Error> {
        let value = self.call(Call::Me, Method::GET, "/users/@me", None).await?;
        serde_json::from_value::<BotIdentity>(value)
            .ok()
            .filter(|b| !b.id.is_empty())
            .ok_or_else(|| Error::Malformed {
                call: Call::Me,
                detail: "users/@me without an id".into(),
            })
    }

    /// The current access token (fetched if needed); the gateway identifies with it.
    pub(crate) async fn token(&self) -> Result<Secret, Error> {
        let o = &self.options;
        self.tokens
            .get(&self.http, &o.token_base, &o.credentials)
            .await
    }

    /// Drops `stale` from the cache so the next call fetches a new token.
    pub(crate) async fn drop_token(&self, stale: &Secret) {
        self.tokens.invalidate(stale).await;
    }

    /// Drops the cached token, whichever it is.
    pub(crate) async fn drop_current_token(&self) {
        self.tokens.clear().await;
    }

    /// One OpenAPI call with the token; on 401/`11244` the token is dropped and the call made
    /// once more with a fresh one (§1.2). A rate-limit answer carries the wait to hold.
    pub(crate) async fn call(
        &self,
        call: Call,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Error> {
        let token = self.token().await?;
        let mut result = self.once(call, method.clone(), path, body, &token).await;
        if result.as_ref().is_err_and(is_stale_token) {
            self.drop_token(&token).await;
            let token = self.token().await?;
            result = self.once(call, method, path, body, &token).await;
        }
        self.pace(result)
    }

    /// Keeps the rate-limit streak: a success resets it, a rate-limit answer gets the next wait.
    fn pace(&self, result: Result<Value, Error>) -> Result<Value, Error> {
        match result {
            Ok(v) => {
                self.rate_streak.store(0, Ordering::Relaxed);
                Ok(v)
            }
            Err(Error::Api {
                call,
                http_status,
                code,
                message,
                retry_after: None,
            }) if is_rate_limited(http_status, code) => {
                let streak = self.rate_streak.fetch_add(1, Ordering::Relaxed).min(16);
                let wait = (RATE_LIMIT_FIRST_WAIT * 2u32.pow(streak)).min(RATE_LIMIT_MAX_WAIT);
                Err(Error::Api {
                    call,
                    http_status,
                    code,
                    message,
                    retry_after: Some(wait),
                })
            }
            Err(e) => Err(e),
        }
    }

    async fn once(
        &self,
        call: Call,
        method: Method,
        path: &str,
        body: Option<&Value>,
        token: &Secret,
    ) -> Result<Value, Error> {
        let url = format!("{}{path}", self.options.api_base.trim_end_matches('/'));
        let mut req = self
            .http
            .request(method, url)
            .header("Authorization", format!("QQBot {}", token.expose()))
            .header("X-Union-Appid", &self.options.credentials.app_id)
            .timeout(API_TIMEOUT);
        if let Some(b) = body {
            req = req
                .header("Content-Type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.map_err(|e| Error::network(call, e))?;
        let status = resp.status().as_u16();
        let bytes = read_capped(call, resp, MAX_API_BODY).await?;
        parse_answer(call, status, &bytes)
    }
}

fn is_stale_token(e: &Error) -> bool {
    matches!(e, Error::Api { http_status, code, .. } if *http_status == 401 || *code == TOKEN_STALE)
}

fn is_rate_limited(status: u16, code: i64) -> bool {
    status == 429 || code == 22009 || code == 100001
}

/// Whether an id may go into a URL path: the platform's ids are letters, digits, `_` and `-`
/// (openids are 32 hex characters); anything else (a `/`, `..`) is refused before the wire.
pub(crate) fn path_safe(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
        && !id.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_may_go_into_a_path() {
        assert!(path_safe("E4F1A0B2C3D4E5F60718293A4B5C6D7E"));
        assert!(path_safe("ROBOT1.0_abc-1"));
        for bad in ["", "a/b", "..", "a?b", "a b", "%2e%2e"] {
            assert!(!path_safe(bad), "{bad}");
        }
    }
}
