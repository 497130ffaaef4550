//! HTTP callback requests as the platform sends them, for testing a webhook server.

use serde_json::{Value, json};

use crate::secret::Secret;
use crate::webhook::{HEADER_NONCE, HEADER_SIGNATURE, HEADER_TIMESTAMP, encrypt, signature};

/// Builds a v2 callback for `event_type`/`event` with `token` in its header: plaintext, or
/// encrypted and signed when `encrypt_key` is set. Returns `(headers, body)`.
pub fn callback_request(
    encrypt_key: Option<&Secret>,
    token: &str,
    event_id: &str,
    event_type: &str,
    event: Value,
) -> (Vec<(String, String)>, Vec<u8>) {
    callback_request_for("cli_fake", encrypt_key, token, event_id, event_type, event)
}

/// [`callback_request`] for the app `app_id`.
pub fn callback_request_for(
    app_id: &str,
    encrypt_key: Option<&Secret>,
    token: &str,
    event_id: &str,
    event_type: &str,
    event: Value,
) -> (Vec<(String, String)>, Vec<u8>) {
    let plain = json!({
        "schema": "2.0",
        "header": {"event_id": event_id, "event_type": event_type, "create_time": super::state::now_ms().to_string(),
                   "token": token, "app_id": app_id, "tenant_key": "fake-tenant"},
        "event": event,
    });
    let Some(key) = encrypt_key else {
        return (Vec::new(), plain.to_string().into_bytes());
    };
    let body = json!({ "encrypt": encrypt(key, plain.to_string().as_bytes()) })
        .to_string()
        .into_bytes();
    let ts = (super::state::now_ms() / 1000).to_string();
    let nonce = format!("{:016x}", rand::random::<u64>());
    let sig = signature(&ts, &nonce, key, &body);
    let headers = vec![
        (HEADER_TIMESTAMP.to_string(), ts),
        (HEADER_NONCE.to_string(), nonce),
        (HEADER_SIGNATURE.to_string(), sig),
    ];
    (headers, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::{WebhookConfig, WebhookError, WebhookRequest, handle};

    #[test]
    fn built_requests_pass_and_tampered_ones_fail() {
        let key = Secret::new("k");
        let cfg = WebhookConfig {
            encrypt_key: Some(key.clone()),
            verification_token: Some(Secret::new("vt")),
        };
        let (headers, body) = callback_request(Some(&key), "vt", "e1", "x.y", json!({"a": 1}));
        let lookup = |h: &[(String, String)]| {
            let h = h.to_vec();
            move |name: &str| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.clone())
            }
        };
        // The fake stamps requests with its own clock, which is this machine's.
        let now = (super::super::state::now_ms() / 1000) as i64;
        let got =
            handle(&cfg, lookup(&headers), &body, now).expect("a request the fake built passes");
        assert!(matches!(got, WebhookRequest::Event(_)));
        let mut tampered = body.clone();
        let last = tampered.len() - 3;
        tampered[last] ^= 1;
        assert_eq!(
            handle(&cfg, lookup(&headers), &tampered, now),
            Err(WebhookError::BadSignature)
        );
    }
}
