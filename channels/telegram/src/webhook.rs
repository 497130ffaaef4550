//! The webhook alternative (spec §1.4): setting one with a secret, and checking a delivery.
//! The bridge polls; this is here for accounts that must receive by webhook (and for `doctor`,
//! which reads `getWebhookInfo` from the client). A delivery is answered 200 only after it is
//! journaled; a non-2xx answer makes the platform retry it.

use std::fmt;

use rand::Rng;
use serde_json::{Value, json};

use crate::client::Client;
use crate::error::Error;
use crate::method::Method;
use crate::update::{ALLOWED_UPDATES, Update};

/// The header every delivery carries the secret in.
pub const SECRET_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";
/// The only ports a webhook URL may use.
pub const ALLOWED_PORTS: [u16; 4] = [443, 80, 88, 8443];
/// Longest secret token.
pub const MAX_SECRET_LEN: usize = 256;

/// The webhook's secret token (1–256 of `A-Za-z0-9_-`). Made by [`WebhookSecret::generate`]
/// when the webhook is set, stored with the account; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    /// A fresh random secret of 64 characters.
    pub fn generate() -> WebhookSecret {
        const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
        let mut rng = rand::rng();
        let s = (0..64)
            .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
            .collect();
        WebhookSecret(s)
    }

    /// A stored secret; `None` if it is not 1–256 characters from the allowed set.
    pub fn from_stored(raw: &str) -> Option<WebhookSecret> {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_SECRET_LEN
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        ok.then(|| WebhookSecret(raw.to_owned()))
    }

    /// The raw secret, for the credential store and the `setWebhook` call only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether a delivery's [`SECRET_HEADER`] value is this secret, compared in constant
    /// time (a timing difference would let a forger guess it a byte at a time). Hand-written:
    /// five lines do not warrant a dependency.
    pub fn matches(&self, header: Option<&str>) -> bool {
        let Some(given) = header else {
            return false;
        };
        let (a, b) = (self.0.as_bytes(), given.as_bytes());
        let diff = a
            .iter()
            .zip(b.iter())
            .fold(a.len() ^ b.len(), |acc, (x, y)| acc | usize::from(x ^ y));
        diff == 0
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret([redacted])")
    }
}

/// Why a delivery was refused (answer it 401 or 400; the platform retries non-2xx).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The secret header is missing or wrong: a forgery, or a stale webhook.
    #[error("webhook delivery without the right secret token")]
    Forged,
    /// The body is not one update.
    #[error("webhook delivery is not an update")]
    NotAnUpdate,
}

/// Checks a delivery's secret and reads its one update (lossy UTF-8, like polls).
pub fn read_delivery(
    secret: &WebhookSecret,
    header: Option<&str>,
    body: &[u8],
) -> Result<Update, DeliveryError> {
    if !secret.matches(header) {
        return Err(DeliveryError::Forged);
    }
    let text = String::from_utf8_lossy(body);
    let value: Value = serde_json::from_str(&text).map_err(|_| DeliveryError::NotAnUpdate)?;
    Update::parse(value).ok_or(DeliveryError::NotAnUpdate)
}

impl Client {
    /// `setWebhook` to `url` (HTTPS, port 443/80/88/8443) with `secret`, asking for the
    /// bridge's update kinds and keeping pending updates. A refused URL or secret is
    /// [`crate::FatalReason::BadWebhook`]. Polling then gets 409 until
    /// [`Client::delete_webhook`].
    pub async fn set_webhook(
        &self,
        url: &str,
        secret: &WebhookSecret,
        max_connections: Option<u8>,
    ) -> Result<(), Error> {
        let mut body = json!({
            "url": url,
            "secret_token": secret.expose(),
            "allowed_updates": ALLOWED_UPDATES,
            "drop_pending_updates": false,
        });
        if let Some(n) = max_connections {
            body["max_connections"] = json!(n);
        }
        self.call::<Value>(Method::SetWebhook, &body)
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole_and_never_print() {
        let s = WebhookSecret::generate();
        assert_eq!(s.expose().len(), 64);
        assert!(WebhookSecret::from_stored(s.expose()).is_some());
        assert!(s.matches(Some(s.expose())));
        assert!(!s.matches(Some(&s.expose()[..63])));
        assert!(!s.matches(Some(&format!("{}x", s.expose()))));
        assert!(!s.matches(None));
        assert!(!format!("{s:?}").contains(s.expose()));
        assert!(WebhookSecret::from_stored("a b").is_none());
        assert!(WebhookSecret::from_stored("").is_none());
        assert!(WebhookSecret::from_stored(&"a".repeat(257)).is_none());
    }
}
