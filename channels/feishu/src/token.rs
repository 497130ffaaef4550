//! The tenant_access_token cache: one token per app, refreshed ahead of expiry.

use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::error::Error;
use crate::response::read_json;
use crate::secret::{Credentials, Secret};

/// Path of the classic internal-app token endpoint.
pub const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";

/// Refresh margin used by the Go and Node SDKs.
pub const DEFAULT_MARGIN: Duration = Duration::from_secs(180);

/// Caches one tenant_access_token; concurrent callers share one fetch.
#[derive(Debug)]
pub struct TokenCache {
    margin: Duration,
    slot: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    token: Secret,
    refresh_at: Instant,
}

#[derive(Deserialize)]
struct TokenResponse {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    msg: String,
    tenant_access_token: Option<String>,
    expire: Option<u64>,
}

impl TokenCache {
    /// A cache that treats a token as stale `margin` before the server's expiry.
    pub fn new(margin: Duration) -> Self {
        Self {
            margin,
            slot: Mutex::new(None),
        }
    }

    /// Returns the cached token, fetching a new one if none is cached or it is near expiry.
    pub async fn get(
        &self,
        http: &reqwest::Client,
        base: &str,
        creds: &Credentials,
    ) -> Result<Secret, Error> {
        let mut slot = self.slot.lock().await;
        if let Some(c) = slot.as_ref()
            && Instant::now() < c.refresh_at
        {
            return Ok(c.token.clone());
        }
        let (token, expire) = fetch_tenant_token(http, base, creds).await?;
        let ahead = if expire > self.margin {
            expire - self.margin
        } else {
            // A lifetime shorter than the margin: use half of it rather than never caching.
            expire / 2
        };
        *slot = Some(Cached {
            token: token.clone(),
            refresh_at: Instant::now() + ahead,
        });
        Ok(token)
    }

    /// Drops the cached token if it is still `stale` (another caller may have refreshed it).
    pub async fn invalidate(&self, stale: &Secret) {
        let mut slot = self.slot.lock().await;
        if slot.as_ref().is_some_and(|c| &c.token == stale) {
            *slot = None;
        }
    }
}

/// Fetches a tenant_access_token and its lifetime.
pub async fn fetch_tenant_token(
    http: &reqwest::Client,
    base: &str,
    creds: &Credentials,
) -> Result<(Secret, Duration), Error> {
    let body = serde_json::json!({
        "app_id": creds.app_id,
        "app_secret": creds.app_secret.expose(),
    });
    let resp = http
        .post(format!("{base}{TOKEN_PATH}"))
        .header("Content-Type", "application/json; charset=utf-8")
        .json(&body)
        .send()
        .await?;
    let (_, value, _) = read_json(resp).await?;
    let parsed: TokenResponse =
        serde_json::from_value(value).map_err(|e| Error::Decode(format!("token response: {e}")))?;
    if parsed.code != 0 {
        return Err(Error::Token {
            code: parsed.code,
            msg: parsed.msg,
        });
    }
    match (parsed.tenant_access_token, parsed.expire) {
        (Some(t), Some(e)) if !t.is_empty() => Ok((Secret::new(t), Duration::from_secs(e))),
        _ => Err(Error::Decode(
            "token response without tenant_access_token/expire".into(),
        )),
    }
}
