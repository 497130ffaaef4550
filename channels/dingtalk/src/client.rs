//! [`Client`]: the HTTP side of one app (token cache, new and old API bases, the login check).
//! Made once per account by the daemon's account task; cheap to clone (shared inside).

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use crate::call::Call;
use crate::error::Error;
use crate::http;
use crate::secret::{Credentials, Secret};
use crate::token::TokenCache;

/// The production new-API base (spec §0).
pub const DEFAULT_API_BASE: &str = "https://api.dingtalk.com";
/// The production old-API base (spec §0).
pub const DEFAULT_OAPI_BASE: &str = "https://oapi.dingtalk.com";
/// Default timeout of one HTTP call. Card streaming calls take 3–10 s (spec §4.6), so the
/// bound sits well above them.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// What a [`Client`] is built from. The daemon fills it from the account's configuration.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The app's credentials.
    pub credentials: Credentials,
    /// New-API base (`https://api.dingtalk.com`; a loopback fake in tests).
    pub api_base: String,
    /// Old-API base (`https://oapi.dingtalk.com`).
    pub oapi_base: String,
    /// Timeout of one HTTP call.
    pub timeout: Duration,
    /// Robot code, when it differs from the client id (spec §3: for internal apps it does not).
    pub robot_code: Option<String>,
}

impl ClientOptions {
    /// Production bases and defaults.
    pub fn new(credentials: Credentials) -> Self {
        Self {
            credentials,
            api_base: DEFAULT_API_BASE.into(),
            oapi_base: DEFAULT_OAPI_BASE.into(),
            timeout: DEFAULT_TIMEOUT,
            robot_code: None,
        }
    }
}

/// Who the credentials belong to, as the login step shows and stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    /// The app's client id.
    pub client_id: String,
    /// The robot code used for sends and downloads (= client id for internal apps).
    pub robot_code: String,
}

/// The HTTP client of one app.
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub http: reqwest::Client,
    pub options: ClientOptions,
    pub tokens: TokenCache,
}

impl Client {
    /// Builds a client; does no IO. Fails on a base that is not an http(s) URL.
    pub fn new(mut options: ClientOptions) -> Result<Self, Error> {
        for base in [&mut options.api_base, &mut options.oapi_base] {
            let trimmed = base.trim_end_matches('/').to_string();
            let ok = url::Url::parse(&trimmed)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                return Err(Error::Invalid(format!(
                    "not an http(s) base URL: {trimmed:?}"
                )));
            }
            *base = trimmed;
        }
        let http = reqwest::Client::builder()
            // No redirects: a redirect would carry the token header to another host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Invalid(format!("HTTP client: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                options,
                tokens: TokenCache::default(),
            }),
        })
    }

    /// The options in force.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// The robot code sends and downloads use.
    pub fn robot_code(&self) -> &str {
        let o = &self.inner.options;
        o.robot_code
            .as_deref()
            .filter(|r| !r.is_empty())
            .unwrap_or(&o.credentials.client_id)
    }

    /// The current access token (cached).
    pub(crate) async fn token(&self) -> Result<Secret, Error> {
        let i = &self.inner;
        i.tokens
            .get(
                &i.http,
                &i.options.api_base,
                &i.options.credentials,
                i.options.timeout,
            )
            .await
    }

    /// A new-API call with the token header; on a refused token, one refetch and one retry.
    pub(crate) async fn api(
        &self,
        call: Call,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, Error> {
        let token = self.token().await?;
        match self
            .api_once(call, method.clone(), path, body, &token)
            .await
        {
            Err(e) if e.is_token_invalid() => {
                self.inner.tokens.invalidate(&token).await;
                let token = self.token().await?;
                self.api_once(call, method, path, body, &token).await
            }
            r => r,
        }
    }

    async fn api_once(
        &self,
        call: Call,
        method: Method,
        path: &str,
        body: &Value,
        token: &Secret,
    ) -> Result<Value, Error> {
        let i = &self.inner;
        let req = i
            .http
            .request(method, format!("{}{path}", i.options.api_base))
            .header("x-acs-dingtalk-access-token", token.expose())
            .header("Accept", "application/json")
            .json(body);
        http::new_api(call, http::send(call, req, i.options.timeout).await?)
    }

    /// An old-API call (token in the query); on a refused token, one refetch and one retry.
    /// `build` makes the request afresh for each attempt (a multipart body is consumed). A
    /// plain closure, not an async one: the future of an async closure is not provably `Send`
    /// for every lifetime, so callers in a `Send` context (the daemon's sender) could not await it.
    pub(crate) async fn oapi<F>(&self, call: Call, path: &str, build: F) -> Result<Value, Error>
    where
        F: Fn(reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, Error>,
    {
        let token = self.token().await?;
        match self.oapi_once(call, path, &build, &token).await {
            Err(e) if e.is_token_invalid() => {
                self.inner.tokens.invalidate(&token).await;
                let token = self.token().await?;
                self.oapi_once(call, path, &build, &token).await
            }
            r => r,
        }
    }

    async fn oapi_once<F>(
        &self,
        call: Call,
        path: &str,
        build: &F,
        token: &Secret,
    ) -> Result<Value, Error>
    where
        F: Fn(reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, Error>,
    {
        let i = &self.inner;
        let mut url = url::Url::parse(&format!("{}{path}", i.options.oapi_base))
            .map_err(|_| Error::Invalid(format!("bad old-API URL for {call}")))?;
        url.query_pairs_mut()
            .append_pair("access_token", token.expose());
        let req = build(i.http.post(url))?;
        http::old_api(call, http::send(call, req, i.options.timeout).await?)
    }
}
