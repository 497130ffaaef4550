use std::collections::HashMap;

use super::*;

/// This machine's clock in the tests, at the signed timestamp.
const T0: i64 = 1_700_000_000;

fn key() -> Secret {
    Secret::new("encrypt-key-1")
}

fn lookup(h: &HashMap<String, String>) -> impl Fn(&str) -> Option<String> + '_ {
    move |name: &str| {
        h.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

fn signed(body: &[u8], sig: Option<String>) -> HashMap<String, String> {
    let mut h = HashMap::new();
    h.insert(
        "x-lark-request-timestamp".to_string(),
        "1700000000".to_string(),
    );
    h.insert("x-lark-request-nonce".to_string(), "n0nce".to_string());
    let sig = sig.unwrap_or_else(|| signature("1700000000", "n0nce", &key(), body));
    h.insert("x-lark-signature".to_string(), sig);
    h
}

fn encrypted_body(plain: &Value) -> Vec<u8> {
    json!({ "encrypt": encrypt(&key(), plain.to_string().as_bytes()) })
        .to_string()
        .into_bytes()
}

fn config() -> WebhookConfig {
    WebhookConfig {
        encrypt_key: Some(key()),
        verification_token: Some(Secret::new("vtok")),
    }
}

#[test]
fn official_vector_decrypts() {
    // The example from the platform's documentation.
    let got = decrypt(
        &Secret::new("test key"),
        "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=",
    )
    .unwrap();
    assert_eq!(got, b"hello world");
}

#[test]
fn encrypted_event_decrypts() {
    let plain = json!({"schema": "2.0", "header": {"event_id": "e1", "event_type": "x", "token": "vtok"}, "event": {}});
    let body = encrypted_body(&plain);
    let h = signed(&body, None);
    let got = handle(&config(), lookup(&h), &body, T0).expect("a signed event");
    let WebhookRequest::Event(bytes) = got else {
        panic!("not an event")
    };
    assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), plain);
}

#[test]
fn forged_or_missing_signature_is_refused() {
    let plain = json!({"schema": "2.0", "header": {"event_id": "e1", "event_type": "x", "token": "vtok"}, "event": {}});
    let body = encrypted_body(&plain);
    let forged = signed(&body, Some("0".repeat(64)));
    assert_eq!(
        handle(&config(), lookup(&forged), &body, T0),
        Err(WebhookError::BadSignature)
    );
    // A valid signature of other bytes does not cover this body.
    let other = signed(b"{}", None);
    assert_eq!(
        handle(&config(), lookup(&other), &body, T0),
        Err(WebhookError::BadSignature)
    );
    let none = HashMap::new();
    assert_eq!(
        handle(&config(), lookup(&none), &body, T0),
        Err(WebhookError::MissingSignature)
    );
}

#[test]
fn a_correctly_signed_request_far_from_now_is_refused_as_a_replay() {
    let plain = json!({"schema": "2.0", "header": {"event_id": "e1", "event_type": "x", "token": "vtok"}, "event": {}});
    let body = encrypted_body(&plain);
    let h = signed(&body, None);
    let at = |now: i64| handle(&config(), lookup(&h), &body, now);
    assert!(at(T0 + MAX_CLOCK_SKEW_SECS).is_ok(), "five minutes late");
    assert!(at(T0 - MAX_CLOCK_SKEW_SECS).is_ok(), "five minutes early");
    assert_eq!(at(T0 + 3600), Err(WebhookError::StaleTimestamp(3600)));
    assert_eq!(at(T0 + 86_400), Err(WebhookError::StaleTimestamp(86_400)));
    assert_eq!(at(T0 - 301), Err(WebhookError::StaleTimestamp(-301)));
    // A timestamp that is no number is never fresh.
    let mut garbled = h.clone();
    garbled.insert("x-lark-request-timestamp".into(), "soon".into());
    let sig = signature("soon", "n0nce", &key(), &body);
    garbled.insert("x-lark-signature".into(), sig);
    assert!(matches!(
        handle(&config(), lookup(&garbled), &body, T0),
        Err(WebhookError::StaleTimestamp(_))
    ));
}

#[test]
fn wrong_verification_token_is_refused() {
    let plain = json!({"schema": "2.0", "header": {"event_id": "e1", "event_type": "x", "token": "nope"}, "event": {}});
    let body = encrypted_body(&plain);
    let h = signed(&body, None);
    assert_eq!(
        handle(&config(), lookup(&h), &body, T0),
        Err(WebhookError::BadToken)
    );
}

#[test]
fn url_verification_plain_and_encrypted() {
    let plain = json!({"challenge": "ch-1", "token": "vtok", "type": "url_verification"});
    let none = HashMap::new();
    let cfg = WebhookConfig {
        encrypt_key: None,
        verification_token: Some(Secret::new("vtok")),
    };
    let got = handle(&cfg, lookup(&none), plain.to_string().as_bytes(), T0).expect("a plain event");
    assert_eq!(
        got,
        WebhookRequest::UrlVerification {
            challenge: "ch-1".into()
        }
    );
    assert_eq!(url_verification_response("ch-1"), r#"{"challenge":"ch-1"}"#);
    // Encrypted, and unsigned as the platform sends it.
    let got = handle(&config(), lookup(&none), &encrypted_body(&plain), T0)
        .expect("an unsigned url_verification");
    assert_eq!(
        got,
        WebhookRequest::UrlVerification {
            challenge: "ch-1".into()
        }
    );
}

#[test]
fn garbage_is_refused_without_panic() {
    let none = HashMap::new();
    let cases: Vec<Vec<u8>> = vec![
        b"not json".to_vec(),
        br#"{"encrypt":"!!!"}"#.to_vec(),
        br#"{"encrypt":"AAAA"}"#.to_vec(),
        json!({"encrypt": B64.encode([0u8; 48])})
            .to_string()
            .into_bytes(),
    ];
    for body in cases {
        assert!(handle(&config(), lookup(&none), &body, T0).is_err());
    }
    assert_eq!(
        handle(
            &WebhookConfig::default(),
            lookup(&none),
            br#"{"encrypt":"x"}"#,
            T0
        ),
        Err(WebhookError::EncryptionMismatch)
    );
}
