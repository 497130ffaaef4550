//! Webhook mode (§1.5), the fallback to the gateway: the platform POSTs signed frames to an HTTPS
//! callback. Every request's signature (`X-Signature-Ed25519` over `X-Signature-Timestamp ‖ raw
//! body`) is checked **before** the body is read as JSON; a forged, malformed or stale request
//! is refused. The validation request (op 13) is answered with the signed `plain_token`.
//! The HTTP listener belongs to the daemon: it passes the two headers and the raw body to
//! [`WebhookKey::open`], journals an event, and only then answers 200 with [`ack_body`].

use std::fmt;
use std::time::Duration;

use ed25519_dalek::{Signature, Signer, SigningKey};
use serde_json::{Value, json};

use crate::event::{self, Event, EventError};
use crate::secret::Secret;

/// How old a signed timestamp may be. The platform's retry schedule is **unconfirmed**; ten
/// minutes refuses old replays, and the daemon's 24 h dedupe catches replays inside it.
pub const WEBHOOK_MAX_AGE: Duration = Duration::from_secs(10 * 60);

/// The Ed25519 key derived from the AppSecret (seed = the secret repeated to 32 bytes). Made
/// by the daemon from the stored secret; never prints.
pub struct WebhookKey(SigningKey);

impl fmt::Debug for WebhookKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookKey([redacted])")
    }
}

/// Why a webhook request was refused; answer it with 401 and read nothing of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// A signature header is missing, not hex, not 64 bytes, or has the high bits of its last
    /// byte set (§1.5).
    #[error("qq webhook: malformed signature header")]
    MalformedSignature,
    /// The signature does not match the timestamp and body.
    #[error("qq webhook: signature does not verify")]
    Forged,
    /// The timestamp is not a number or is older (or newer) than [`WEBHOOK_MAX_AGE`].
    #[error("qq webhook: timestamp outside the accepted window")]
    Stale,
    /// Signed correctly but not a frame this client knows (answer 200, count it).
    #[error("qq webhook: signed body is not a known frame")]
    UnknownFrame,
}

/// What a verified request holds.
#[derive(Debug)]
pub enum WebhookRequest {
    /// Op 13: answer 200 with this JSON body.
    Validation(Value),
    /// Op 0: journal it, then answer [`ack_body`].
    Dispatch {
        /// `t`.
        kind: String,
        /// The frame `id`.
        frame_id: Option<String>,
        /// The parsed event.
        event: Result<Event, EventError>,
    },
}

impl WebhookKey {
    /// The key of this AppSecret.
    pub fn from_secret(secret: &Secret) -> Self {
        let raw = secret.expose().as_bytes();
        let mut seed = [0u8; 32];
        if !raw.is_empty() {
            for (i, b) in seed.iter_mut().enumerate() {
                *b = raw[i % raw.len()];
            }
        }
        WebhookKey(SigningKey::from_bytes(&seed))
    }

    /// Hex Ed25519 signature of `message` (the fake signs with it; the validation answer too).
    pub fn sign_hex(&self, message: &[u8]) -> String {
        hex(&self.0.sign(message).to_bytes())
    }

    /// Checks a request and reads it. `now_unix` is the caller's clock in seconds.
    pub fn open(
        &self,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
        now_unix: u64,
    ) -> Result<WebhookRequest, WebhookError> {
        let (Some(ts), Some(sig)) = (timestamp, signature) else {
            return Err(WebhookError::MalformedSignature);
        };
        let sig = unhex(sig.trim())
            .filter(|b| b.len() == 64 && b[63] & 0xE0 == 0)
            .ok_or(WebhookError::MalformedSignature)?;
        let sig = Signature::from_slice(&sig).map_err(|_| WebhookError::MalformedSignature)?;
        let mut signed = ts.as_bytes().to_vec();
        signed.extend_from_slice(body);
        self.0
            .verifying_key()
            .verify_strict(&signed, &sig)
            .map_err(|_| WebhookError::Forged)?;
        let at: u64 = ts.trim().parse().map_err(|_| WebhookError::Stale)?;
        if now_unix.abs_diff(at) > WEBHOOK_MAX_AGE.as_secs() {
            return Err(WebhookError::Stale);
        }
        self.read(body)
    }

    fn read(&self, body: &[u8]) -> Result<WebhookRequest, WebhookError> {
        let v: Value = serde_json::from_slice(body).map_err(|_| WebhookError::UnknownFrame)?;
        match v.get("op").and_then(Value::as_i64) {
            Some(13) => {
                let d = &v["d"];
                let token = d.get("plain_token").and_then(Value::as_str);
                let ts = d.get("event_ts").and_then(Value::as_str);
                let (Some(token), Some(ts)) = (token, ts) else {
                    return Err(WebhookError::UnknownFrame);
                };
                let signature = self.sign_hex(format!("{ts}{token}").as_bytes());
                Ok(WebhookRequest::Validation(
                    json!({"plain_token": token, "signature": signature}),
                ))
            }
            Some(0) => {
                let kind = v.get("t").and_then(Value::as_str).unwrap_or("").to_owned();
                Ok(WebhookRequest::Dispatch {
                    event: event::parse(&kind, v.get("d").unwrap_or(&Value::Null)),
                    frame_id: v.get("id").and_then(Value::as_str).map(str::to_owned),
                    kind,
                })
            }
            _ => Err(WebhookError::UnknownFrame),
        }
    }
}

/// The answer to a dispatch: `{"op":12,"d":0}` once journaled, `d: 1` when journaling failed
/// so the platform retries (botgo's convention; the platform's retry policy is unconfirmed).
pub fn ack_body(journaled: bool) -> Value {
    json!({"op": 12, "d": if journaled { 0 } else { 1 }})
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_key() -> WebhookKey {
        WebhookKey::from_secret(&Secret::new("DG5g3B4j9X2KOErG"))
    }

    #[test]
    fn the_validation_answer_matches_the_documented_vector() {
        let key = doc_key();
        let body =
            br#"{"op":13,"d":{"plain_token":"Arq0D5A61EgUu4OxUvOp","event_ts":"1725442341"}}"#;
        let ts = "1725442341";
        let sig = key.sign_hex(&[ts.as_bytes(), &body[..]].concat());
        let Ok(WebhookRequest::Validation(answer)) =
            key.open(Some(ts), Some(&sig), body, 1725442341)
        else {
            panic!("validation")
        };
        assert_eq!(answer["plain_token"], "Arq0D5A61EgUu4OxUvOp");
        let s = answer["signature"].as_str().unwrap();
        assert!(s.starts_with("87befc99c42c651b"), "{s}");
    }

    #[test]
    fn forged_malformed_and_stale_requests_are_refused_before_reading() {
        let key = doc_key();
        let body = br#"{"op":0,"t":"C2C_MESSAGE_CREATE","id":"e","d":{"id":"m","author":{"user_openid":"U"}}}"#;
        let ts = "1000";
        let good = key.sign_hex(&[ts.as_bytes(), &body[..]].concat());
        assert!(matches!(
            key.open(Some(ts), Some(&good), body, 1000),
            Ok(WebhookRequest::Dispatch { .. })
        ));
        let mut flipped = body.to_vec();
        flipped[10] ^= 1;
        assert_eq!(
            key.open(Some(ts), Some(&good), &flipped, 1000).unwrap_err(),
            WebhookError::Forged
        );
        assert_eq!(
            key.open(Some("1001"), Some(&good), body, 1000).unwrap_err(),
            WebhookError::Forged
        );
        let other = WebhookKey::from_secret(&Secret::new("another-secret"));
        let forged = other.sign_hex(&[ts.as_bytes(), &body[..]].concat());
        assert_eq!(
            key.open(Some(ts), Some(&forged), body, 1000).unwrap_err(),
            WebhookError::Forged
        );
        for bad in ["", "zz", &good[..126], &format!("{}ff", &good[..126])] {
            assert_eq!(
                key.open(Some(ts), Some(bad), body, 1000).unwrap_err(),
                WebhookError::MalformedSignature,
                "{bad}"
            );
        }
        assert_eq!(
            key.open(None, Some(&good), body, 1000).unwrap_err(),
            WebhookError::MalformedSignature
        );
        let late = 1000 + WEBHOOK_MAX_AGE.as_secs() + 1;
        assert_eq!(
            key.open(Some(ts), Some(&good), body, late).unwrap_err(),
            WebhookError::Stale
        );
        assert_eq!(ack_body(true), json!({"op": 12, "d": 0}));
    }

    #[test]
    fn the_key_never_prints() {
        assert!(!format!("{:?}", doc_key()).contains("DG5g"));
    }
}
