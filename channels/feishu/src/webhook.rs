//! The HTTP callback (webhook) mode as pure functions: url_verification, AES-256-CBC
//! decryption, the SHA-256 signature check and the verification token check.
//!
//! A server calls [`handle`] with the request headers and raw body and answers with what it
//! returns; this crate runs no HTTP server for it.

use aes::cipher::block_padding::Pkcs7;
use aes::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::secret::Secret;

/// Header carrying the request timestamp.
pub const HEADER_TIMESTAMP: &str = "X-Lark-Request-Timestamp";
/// Header carrying the request nonce.
pub const HEADER_NONCE: &str = "X-Lark-Request-Nonce";
/// Header carrying the signature.
pub const HEADER_SIGNATURE: &str = "X-Lark-Signature";

/// The app's callback settings from the developer console.
#[derive(Debug, Clone, Default)]
pub struct WebhookConfig {
    /// Encrypt Key: bodies are encrypted and signed when set.
    pub encrypt_key: Option<Secret>,
    /// Verification Token: compared with the token in every body when set.
    pub verification_token: Option<Secret>,
}

/// Why a callback request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// Body is not JSON (or decrypts to non-JSON).
    #[error("callback body is not a JSON object")]
    NotJson,
    /// `encrypt` is not valid base64 / AES-CBC / PKCS#7.
    #[error("callback body does not decrypt")]
    BadCiphertext,
    /// Signature headers missing.
    #[error("callback signature headers missing")]
    MissingSignature,
    /// Signature does not match.
    #[error("callback signature does not match")]
    BadSignature,
    /// The verification token does not match.
    #[error("callback verification token does not match")]
    BadToken,
    /// Encrypted body while no Encrypt Key is configured, or the reverse.
    #[error("callback encryption does not match the configuration")]
    EncryptionMismatch,
    /// The signed timestamp is further than [`MAX_CLOCK_SKEW_SECS`] from this machine's clock: a
    /// replayed request (a correct signature does not make an old request new), or a clock that
    /// is wrong here.
    #[error(
        "callback timestamp is {0} s away from this machine's clock (more than 5 minutes): replayed, or this machine's clock is wrong"
    )]
    StaleTimestamp(i64),
}

/// How far a signed callback's timestamp may be from this machine's clock, either way. The
/// platform stamps a request when it sends it and retries within minutes; anything older is a
/// replay. Five minutes is the usual bound for signed webhooks (the platform documents none:
/// unconfirmed, so the safe side is to refuse what is old rather than accept it for ever).
pub const MAX_CLOCK_SKEW_SECS: i64 = 300;

/// What a valid callback request asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum WebhookRequest {
    /// Answer HTTP 200 with [`url_verification_response`] within 1 s.
    UrlVerification {
        /// The challenge to echo.
        challenge: String,
    },
    /// An event: the plaintext envelope JSON, for [`crate::event::parse_event`].
    /// Answer HTTP 200 within 3 s (a card callback answers with its response JSON).
    Event(Vec<u8>),
}

/// Checks, decrypts and classifies one callback request. `header` looks a header up by name
/// (case-insensitively, as HTTP requires); `now_unix` is this machine's time in seconds, which
/// a signed request's timestamp must be near.
pub fn handle(
    config: &WebhookConfig,
    header: impl Fn(&str) -> Option<String>,
    body: &[u8],
    now_unix: i64,
) -> Result<WebhookRequest, WebhookError> {
    let outer: Value = serde_json::from_slice(body).map_err(|_| WebhookError::NotJson)?;
    let encrypted = outer.get("encrypt").and_then(Value::as_str);
    let plain: Value = match (encrypted, &config.encrypt_key) {
        (Some(ct), Some(key)) => {
            // Check a signature before decrypting; only url_verification comes unsigned.
            let signed = header(HEADER_SIGNATURE).is_some();
            if signed {
                check_signature(key, &header, body, now_unix)?;
            }
            let bytes = decrypt(key, ct)?;
            let v: Value = serde_json::from_slice(&bytes).map_err(|_| WebhookError::NotJson)?;
            if !signed && v.get("type").and_then(Value::as_str) != Some("url_verification") {
                return Err(WebhookError::MissingSignature);
            }
            v
        }
        (Some(_), None) => return Err(WebhookError::EncryptionMismatch),
        (None, Some(_)) => return Err(WebhookError::EncryptionMismatch),
        (None, None) => outer,
    };
    if !plain.is_object() {
        return Err(WebhookError::NotJson);
    }
    if let Some(expected) = &config.verification_token {
        let got = plain
            .pointer("/header/token")
            .or_else(|| plain.get("token"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !constant_time_eq(got.as_bytes(), expected.expose().as_bytes()) {
            return Err(WebhookError::BadToken);
        }
    }
    if plain.get("type").and_then(Value::as_str) == Some("url_verification") {
        let challenge = plain
            .get("challenge")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Ok(WebhookRequest::UrlVerification {
            challenge: challenge.to_string(),
        });
    }
    serde_json::to_vec(&plain)
        .map(WebhookRequest::Event)
        .map_err(|_| WebhookError::NotJson)
}

/// The 200 body answering a url_verification.
pub fn url_verification_response(challenge: &str) -> String {
    json!({ "challenge": challenge }).to_string()
}

/// The 200 body acknowledging an event.
pub const EVENT_OK_BODY: &str = r#"{"msg":"success"}"#;

/// Decrypts an `encrypt` field: base64, IV = first 16 bytes, key = SHA-256(encrypt_key).
pub fn decrypt(encrypt_key: &Secret, encrypted_b64: &str) -> Result<Vec<u8>, WebhookError> {
    let raw = B64
        .decode(encrypted_b64.trim())
        .map_err(|_| WebhookError::BadCiphertext)?;
    if raw.len() < 32 || raw.len() % 16 != 0 {
        return Err(WebhookError::BadCiphertext);
    }
    let (iv, ct) = raw.split_at(16);
    let key = Sha256::digest(encrypt_key.expose().as_bytes());
    cbc::Decryptor::<aes::Aes256>::new_from_slices(&key, iv)
        .map_err(|_| WebhookError::BadCiphertext)?
        .decrypt_padded_vec::<Pkcs7>(ct)
        .map_err(|_| WebhookError::BadCiphertext)
}

/// Encrypts a body the way the platform does (for fakes and tests).
pub fn encrypt(encrypt_key: &Secret, plaintext: &[u8]) -> String {
    let iv: [u8; 16] = rand::random();
    let key = Sha256::digest(encrypt_key.expose().as_bytes());
    let mut out = iv.to_vec();
    match cbc::Encryptor::<aes::Aes256>::new_from_slices(&key, &iv) {
        Ok(enc) => out.extend(enc.encrypt_padded_vec::<Pkcs7>(plaintext)),
        // Unreachable: the key and IV lengths are fixed above.
        Err(_) => return String::new(),
    }
    B64.encode(out)
}

/// Lowercase hex SHA-256(timestamp ‖ nonce ‖ encrypt_key ‖ body).
pub fn signature(timestamp: &str, nonce: &str, encrypt_key: &Secret, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(timestamp.as_bytes());
    h.update(nonce.as_bytes());
    h.update(encrypt_key.expose().as_bytes());
    h.update(body);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn check_signature(
    key: &Secret,
    header: &impl Fn(&str) -> Option<String>,
    body: &[u8],
    now_unix: i64,
) -> Result<(), WebhookError> {
    let (Some(ts), Some(nonce), Some(sig)) = (
        header(HEADER_TIMESTAMP),
        header(HEADER_NONCE),
        header(HEADER_SIGNATURE),
    ) else {
        return Err(WebhookError::MissingSignature);
    };
    let want = signature(&ts, &nonce, key, body);
    if !constant_time_eq(want.as_bytes(), sig.trim().to_ascii_lowercase().as_bytes()) {
        return Err(WebhookError::BadSignature);
    }
    // Checked after the signature, so only a request the platform really signed is told apart
    // as old; an unreadable timestamp counts as infinitely old.
    let skew = ts
        .trim()
        .parse::<i64>()
        .map_or(i64::MAX, |t| now_unix.saturating_sub(t));
    if skew.saturating_abs() > MAX_CLOCK_SKEW_SECS {
        return Err(WebhookError::StaleTimestamp(skew));
    }
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
