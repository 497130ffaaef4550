//! The access-token cache (§1.2): one token per bot, fetched again only in the last minute of
//! its life (earlier, the endpoint returns the same token), shared by every call of a [`Client`].
//!
//! [`Client`]: crate::Client

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::answer::{MAX_API_BODY, read_capped, short_message, status_error};
use crate::error::{Call, Error};
use crate::limits::{TOKEN_LIFETIME, TOKEN_NEW_WINDOW, TOKEN_REFRESH_AHEAD};
use crate::secret::{Credentials, Secret};

/// Path of the token endpoint under the token host.
pub const TOKEN_PATH: &str = "/app/getAppAccessToken";

/// Caches one access token; concurrent callers share one fetch (the lock is held across it).
#[derive(Debug, Default)]
pub struct TokenCache {
    slot: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    token: Secret,
    refresh_at: Instant,
}

impl TokenCache {
    /// The cached token, or a new one when none is cached or it is inside the refresh margin.
    pub async fn get(
        &self,
        http: &reqwest::Client,
        token_base: &str,
        creds: &Credentials,
    ) -> Result<Secret, Error> {
        let mut slot = self.slot.lock().await;
        if let Some(c) = slot.as_ref()
            && Instant::now() < c.refresh_at
        {
            return Ok(c.token.clone());
        }
        let (token, lifetime) = fetch_token(http, token_base, creds).await?;
        *slot = Some(Cached {
            token: token.clone(),
            refresh_at: Instant::now() + refresh_after(lifetime),
        });
        Ok(token)
    }

    /// Drops whatever token is cached (the gateway refused it: close 4004, op 9 `false`).
    pub async fn clear(&self) {
        *self.slot.lock().await = None;
    }

    /// Drops the cached token if it is still `stale` (another caller may have replaced it).
    pub async fn invalidate(&self, stale: &Secret) {
        let mut slot = self.slot.lock().await;
        if slot.as_ref().is_some_and(|c| &c.token == stale) {
            *slot = None;
        }
    }
}

/// When to fetch again: [`TOKEN_REFRESH_AHEAD`] before expiry, or half-way for a lifetime
/// shorter than that margin (a test fake's, or a token fetched inside the last minute).
fn refresh_after(lifetime: Duration) -> Duration {
    if lifetime > TOKEN_REFRESH_AHEAD {
        lifetime - TOKEN_REFRESH_AHEAD
    } else {
        lifetime / 2
    }
}

/// Fetches a token and its lifetime. The body is JSON with `appId` as a **string** (a form body
/// or a number is refused, §1.2); an answer without `access_token` is a failure whatever its
/// HTTP status.
pub async fn fetch_token(
    http: &reqwest::Client,
    token_base: &str,
    creds: &Credentials,
) -> Result<(Secret, Duration), Error> {
    let body = json!({"appId": creds.app_id, "clientSecret": creds.app_secret.expose()});
    let resp = http
        .post(format!("{}{TOKEN_PATH}", token_base.trim_end_matches('/')))
        .header("Content-Type", "application/json")
        .timeout(crate::limits::API_TIMEOUT)
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| Error::network(Call::Token, e))?;
    let status = resp.status().as_u16();
    let bytes = read_capped(Call::Token, resp, MAX_API_BODY).await?;
    parse_token_answer(status, &bytes)
}

/// Reads the token endpoint's answer (separate from IO so every shape is tested).
pub(crate) fn parse_token_answer(status: u16, bytes: &[u8]) -> Result<(Secret, Duration), Error> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| {
        if status >= 500 {
            status_error(Call::Token, status)
        } else {
            Error::Malformed {
                call: Call::Token,
                detail: format!("HTTP {status}, body is not JSON"),
            }
        }
    })?;
    let token = value
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty());
    let Some(token) = token else {
        if status >= 500 {
            return Err(status_error(Call::Token, status));
        }
        return Err(Error::Token {
            code: value.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: short_message(&value),
        });
    };
    Ok((
        Secret::new(token),
        parse_expires_in(value.get("expires_in")),
    ))
}

/// `expires_in` is a string in the doc example and a number in its table: both are read. A
/// missing or unreadable value is taken as two minutes, so the cache asks again soon (the
/// endpoint returns the same token until its last minute, so asking early costs nothing).
fn parse_expires_in(v: Option<&Value>) -> Duration {
    let secs = match v {
        Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    };
    secs.map(Duration::from_secs)
        .unwrap_or(TOKEN_NEW_WINDOW * 2)
        // A hostile huge value would overflow the clock; the documented lifetime is the most
        // we believe.
        .min(TOKEN_LIFETIME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_in_as_string_or_number() {
        let (t, d) = parse_token_answer(200, br#"{"access_token":"T1","expires_in":"7200"}"#)
            .expect("string form");
        assert_eq!((t.expose(), d), ("T1", Duration::from_secs(7200)));
        let (_, d) = parse_token_answer(200, br#"{"access_token":"T1","expires_in":55}"#)
            .expect("number form");
        assert_eq!(d, Duration::from_secs(55));
        let (_, d) = parse_token_answer(200, br#"{"access_token":"T1","expires_in":[1]}"#)
            .expect("odd form");
        assert_eq!(d, TOKEN_NEW_WINDOW * 2);
        let huge = format!(r#"{{"access_token":"T1","expires_in":"{}"}}"#, u64::MAX);
        let (_, d) = parse_token_answer(200, huge.as_bytes()).expect("huge form");
        assert_eq!(d, TOKEN_LIFETIME);
    }

    #[test]
    fn no_token_is_a_failure_whatever_the_status() {
        let e = parse_token_answer(200, br#"{"code":100016,"message":"invalid appsecret"}"#)
            .expect_err("no token");
        assert!(matches!(e, Error::Token { code: 100016, .. }), "{e}");
        let e = parse_token_answer(200, br#"{"access_token":"  "}"#).expect_err("blank");
        assert!(matches!(e, Error::Token { code: 0, .. }), "{e}");
        let e = parse_token_answer(502, b"<html>").expect_err("gateway page");
        assert_eq!(e.class(), crate::ErrorClass::Transient);
        let e = parse_token_answer(200, b"\xff\xfe").expect_err("not JSON");
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
    }

    #[test]
    fn refresh_lands_inside_the_new_token_window() {
        assert_eq!(
            refresh_after(Duration::from_secs(7200)),
            Duration::from_secs(7170)
        );
        assert_eq!(
            refresh_after(Duration::from_secs(20)),
            Duration::from_secs(10)
        );
    }
}
