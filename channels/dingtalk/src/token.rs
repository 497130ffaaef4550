//! The access-token cache (spec §1.2): one token per client, refreshed
//! [`TOKEN_REFRESH_MARGIN`] early; concurrent callers share one fetch.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::call::Call;
use crate::error::Error;
use crate::http::{self, field};
use crate::limits::{TOKEN_LIFETIME, TOKEN_REFRESH_MARGIN};
use crate::secret::{Credentials, Secret};

/// Path of the token endpoint on the API base.
pub const TOKEN_PATH: &str = "/v1.0/oauth2/accessToken";

/// Caches one access token. Made by [`crate::Client`]; not shared between clients.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    slot: Mutex<Option<(Secret, Instant)>>,
}

impl TokenCache {
    /// The cached token, or a fresh one when none is cached or it is near expiry.
    pub async fn get(
        &self,
        http: &reqwest::Client,
        api: &str,
        creds: &Credentials,
        timeout: Duration,
    ) -> Result<Secret, Error> {
        let mut slot = self.slot.lock().await;
        if let Some((t, refresh_at)) = slot.as_ref()
            && Instant::now() < *refresh_at
        {
            return Ok(t.clone());
        }
        let (token, life) = fetch(http, api, creds, timeout).await?;
        // A lifetime shorter than the margin: half of it, rather than never caching.
        let ahead = life.checked_sub(TOKEN_REFRESH_MARGIN).unwrap_or(life / 2);
        *slot = Some((token.clone(), Instant::now() + ahead));
        Ok(token)
    }

    /// Drops the cached token if it is still `stale` (another caller may have refreshed it).
    pub async fn invalidate(&self, stale: &Secret) {
        let mut slot = self.slot.lock().await;
        if slot.as_ref().is_some_and(|(t, _)| t == stale) {
            *slot = None;
        }
    }
}

/// Fetches a token and its lifetime. The body is JSON (a form body gets 400, spec §1.2).
pub(crate) async fn fetch(
    http: &reqwest::Client,
    api: &str,
    creds: &Credentials,
    timeout: Duration,
) -> Result<(Secret, Duration), Error> {
    let body = json!({"appKey": creds.client_id, "appSecret": creds.client_secret.expose()});
    let req = http.post(format!("{api}{TOKEN_PATH}")).json(&body);
    let v = http::new_api(Call::Token, http::send(Call::Token, req, timeout).await?)?;
    let token = field(Call::Token, &v, "accessToken")?;
    // Missing `expireIn`: the documented 7200 s (observed default, spec §1.2).
    let life = v
        .get("expireIn")
        .and_then(Value::as_u64)
        .map(Duration::from_secs)
        .unwrap_or(TOKEN_LIFETIME);
    Ok((Secret::new(token), life))
}
