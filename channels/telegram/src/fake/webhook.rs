//! The fake's webhook mode (spec §1.4, §8.6): `setWebhook` refuses what the platform refuses
//! (not HTTPS, another port, a bad secret, a connection count outside 1–100); while a webhook
//! is set, updates are POSTed one at a time with the secret header to where the test says
//! (the real URL must be HTTPS on a public port, which a loopback test cannot serve), and a
//! non-2xx answer is retried [`WEBHOOK_ATTEMPTS`] times a second apart, then given up with
//! `last_error_message` set.

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use serde_json::{Value, json};

use super::Shared;
use super::answer::{error, ok};
use super::params::Params;
use super::state::State;
use crate::webhook::{ALLOWED_PORTS, MAX_SECRET_LEN, SECRET_HEADER};

/// Deliveries of one update before it is given up ("a reasonable number", unconfirmed).
pub const WEBHOOK_ATTEMPTS: u32 = 3;
/// The pause between two attempts.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

pub(crate) fn set_webhook(st: &mut State, p: &Params) -> Response {
    let url = p.text("url").unwrap_or_default();
    if url.is_empty() {
        st.webhook_url = None;
        return ok(json!(true));
    }
    if let Err(why) = check(&url, p) {
        return error(400, &format!("Bad Request: bad webhook: {why}"));
    }
    if let Some(Value::Array(kinds)) = p.json("allowed_updates") {
        st.allowed = Some(
            kinds
                .iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect(),
        );
    }
    if p.flag("drop_pending_updates") {
        st.queue.clear();
    }
    st.webhook_url = Some(url);
    st.webhook_secret = p.text("secret_token");
    ok(json!(true))
}

fn check(url: &str, p: &Params) -> Result<(), &'static str> {
    let parsed = url::Url::parse(url).map_err(|_| "invalid webhook URL specified")?;
    if parsed.scheme() != "https" {
        return Err("HTTPS url must be provided for webhook");
    }
    if !ALLOWED_PORTS.contains(&parsed.port_or_known_default().unwrap_or(0)) {
        return Err("Webhook can be set up only on ports 80, 88, 443 or 8443");
    }
    if let Some(secret) = p.text("secret_token") {
        let charset = secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if secret.is_empty() || secret.len() > MAX_SECRET_LEN || !charset {
            return Err("secret token contains unallowed characters or has a wrong length");
        }
    }
    if p.int("max_connections")
        .is_some_and(|n| !(1..=100).contains(&n))
    {
        return Err("max_connections must be between 1 and 100");
    }
    Ok(())
}

/// Delivers queued updates while a webhook is set and the test gave a target; runs until the
/// server shuts down.
pub(crate) async fn deliver(shared: Arc<Shared>) {
    let http = reqwest::Client::new();
    let mut changed = shared.changed.subscribe();
    let mut down = shared.shutdown.subscribe();
    loop {
        changed.borrow_and_update();
        let next = next_delivery(&shared.lock());
        let Some((id, body, target, secret)) = next else {
            tokio::select! {
                _ = changed.changed() => continue,
                _ = down.wait_for(|d| *d) => return,
            }
        };
        let mut request = http.post(&target).json(&body);
        if let Some(s) = secret {
            request = request.header(SECRET_HEADER, s);
        }
        let outcome = match request.send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(format!("Wrong response from the webhook: {}", r.status())),
            Err(_) => Err("Connection refused".to_owned()),
        };
        let retry = settle(&mut shared.lock(), id, outcome);
        shared.bump();
        if retry {
            tokio::select! {
                _ = tokio::time::sleep(RETRY_PAUSE) => {}
                _ = down.wait_for(|d| *d) => return,
            }
        }
    }
}

/// The oldest deliverable update: (id, body, target, secret).
fn next_delivery(st: &State) -> Option<(i64, Value, String, Option<String>)> {
    st.webhook_url.as_ref()?;
    let target = st.webhook_target.clone()?;
    let q = st.queue.iter().find(|q| st.allows(&q.kind))?;
    Some((q.id, q.body.clone(), target, st.webhook_secret.clone()))
}

/// Records one attempt; true when the update stays queued for another.
fn settle(st: &mut State, id: i64, outcome: Result<(), String>) -> bool {
    let attempts = st.webhook_attempts.entry(id).or_insert(0);
    *attempts += 1;
    let gave_up = *attempts >= WEBHOOK_ATTEMPTS;
    let failed = outcome.is_err();
    if let Err(e) = outcome {
        st.webhook_last_error = Some(e);
    }
    if !failed || gave_up {
        st.queue.retain(|q| q.id != id);
        st.webhook_attempts.remove(&id);
        return false;
    }
    true
}
