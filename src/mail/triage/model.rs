//! The triage model: an OpenAI-compatible `/chat/completions` call for a batch of mails, strict
//! JSON out (the prompt and parse are in [`super::batch`]).
//!
//! The mails are framed as untrusted data inside a JSON object; the answer must hold exactly one
//! valid decision per mail id. The mails a call left undecided (missing, invalid) are asked once
//! more, on their own; a mail still undecided then is reported without a summary, because failing
//! towards telling the owner is cheaper than losing a mail.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::json;

use super::Urgency;
use super::batch::{self, SYSTEM};
use super::budget::{ANSWER_TOKENS, estimate_tokens};
use crate::config::AgentConfig;
use scv_mail::MailItem;

/// Tokens reserved per decision in a batched answer (`{"id":"3","report":...,"summary":...}`).
const DECISION_TOKENS: u64 = 50;

/// The model's decision about one mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Tell the owner.
    pub report: bool,
    /// How soon.
    pub urgency: Urgency,
    /// The summary; `None` when the model failed to decide it.
    pub summary: Option<String>,
    /// This mail's share of the tokens its calls spent (from the answers' `usage`, estimated
    /// where missing), so the day's counter adds up to what was spent.
    pub tokens: u64,
}

/// Anything that triages mail; the daemon uses [`OpenAiTriage`], benches a fake.
pub trait TriageModel: Send + Sync + 'static {
    /// Tokens a call for `items` is expected to cost, checked against the budget first.
    fn estimate(&self, items: &[MailItem]) -> u64;

    /// Triages `items`, one verdict per item in the same order. Never fails: a broken model
    /// yields reports without a summary.
    fn triage<'a>(&'a self, items: &'a [MailItem]) -> BoxFuture<'a, Vec<Verdict>>;
}

/// The triage model over an OpenAI-compatible HTTP endpoint.
pub struct OpenAiTriage {
    http: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
    /// Cleared when the server refused `response_format`; later calls leave it out.
    json_mode: AtomicBool,
}

impl OpenAiTriage {
    /// A client for `agent`'s endpoint, or `None` when no base URL or model is configured.
    pub fn from_config(agent: &AgentConfig) -> Option<Self> {
        let base = agent.base_url.as_deref()?.trim_end_matches('/');
        let model = agent.model.clone()?;
        // The chat backend's key (a missing one leaves triage to fail with 401 and be counted).
        let api_key = crate::agent::key::resolve(agent)
            .ok()
            .flatten()
            .map(|k| k.secret.expose().to_string());
        let timeout = Duration::from_secs(agent.timeout_seconds.unwrap_or(60).clamp(5, 600));
        let http = reqwest::Client::builder().timeout(timeout).build().ok()?;
        Some(OpenAiTriage {
            http,
            url: format!("{base}/chat/completions"),
            model,
            api_key,
            json_mode: AtomicBool::new(true),
        })
    }

    /// One request for `n` mails; returns the answer text (if any) and the tokens it cost.
    async fn call(&self, user: &str, n: usize) -> (Option<String>, u64) {
        let estimate = estimate_tokens(SYSTEM.len() + user.len()) + ANSWER_TOKENS;
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "max_tokens": answer_tokens(n),
        });
        let json_mode = self.json_mode.load(Ordering::Relaxed);
        if json_mode {
            body["response_format"] = json!({"type": "json_object"});
        }
        let mut req = self.http.post(&self.url).json(&body);
        if let Some(k) = &self.api_key {
            req = req.bearer_auth(k);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e.without_url(), "triage model unreachable");
                return (None, 0);
            }
        };
        let status = resp.status();
        if status == reqwest::StatusCode::BAD_REQUEST && json_mode {
            // Servers without JSON mode reject the field; the prompt alone asks for JSON.
            self.json_mode.store(false, Ordering::Relaxed);
            tracing::info!("triage model refused response_format; asking without it");
            return Box::pin(self.call(user, n)).await;
        }
        if !status.is_success() {
            tracing::warn!(
                status = status.as_u16(),
                "triage model answered with an error"
            );
            return (None, 0);
        }
        let v: serde_json::Value = match resp.json().await {
            Ok(v) => v,
            Err(_) => return (None, estimate),
        };
        let text = v["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_string);
        let tokens = v["usage"]["total_tokens"].as_u64().unwrap_or_else(|| {
            estimate_tokens(SYSTEM.len() + user.len() + text.as_deref().map_or(0, str::len))
        });
        (text, tokens)
    }
}

/// The answer room a call for `n` mails asks for: one decision each, and the wrapper.
fn answer_tokens(n: usize) -> u64 {
    ANSWER_TOKENS + DECISION_TOKENS * n as u64
}

impl TriageModel for OpenAiTriage {
    fn estimate(&self, items: &[MailItem]) -> u64 {
        let refs: Vec<&MailItem> = items.iter().collect();
        estimate_tokens(SYSTEM.len() + batch::prompt(&refs).len()) + answer_tokens(items.len())
    }

    fn triage<'a>(&'a self, items: &'a [MailItem]) -> BoxFuture<'a, Vec<Verdict>> {
        Box::pin(async move {
            let mut decided: HashMap<usize, batch::Decided> = HashMap::new();
            let mut spent = vec![0u64; items.len()];
            for attempt in 0..2 {
                let open: Vec<usize> = (0..items.len())
                    .filter(|i| !decided.contains_key(i))
                    .collect();
                if open.is_empty() {
                    break;
                }
                let asked: Vec<&MailItem> = open.iter().map(|&i| &items[i]).collect();
                let (text, tokens) = self.call(&batch::prompt(&asked), asked.len()).await;
                share(&mut spent, &open, tokens);
                let got = text
                    .as_deref()
                    .map(|t| batch::parse(t, asked.len()))
                    .unwrap_or_default();
                if got.len() < open.len() {
                    tracing::debug!(
                        attempt,
                        asked = open.len(),
                        valid = got.len(),
                        "triage model left mail undecided"
                    );
                }
                for (pos, d) in got {
                    decided.insert(open[pos], d);
                }
            }
            (0..items.len())
                .map(|i| match decided.remove(&i) {
                    Some(d) => Verdict {
                        report: d.report,
                        urgency: d.urgency,
                        summary: Some(d.summary).filter(|s| !s.is_empty()),
                        tokens: spent[i],
                    },
                    None => Verdict {
                        report: true,
                        urgency: Urgency::Normal,
                        summary: None,
                        tokens: spent[i],
                    },
                })
                .collect()
        })
    }
}

/// Spreads a call's `tokens` over the mails it asked about (the first take the remainder).
fn share(spent: &mut [u64], asked: &[usize], tokens: u64) {
    let n = asked.len() as u64;
    if n == 0 {
        return;
    }
    for (k, &i) in asked.iter().enumerate() {
        spent[i] += tokens / n + u64::from((k as u64) < tokens % n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_shared_so_the_day_adds_up() {
        let mut spent = vec![0; 4];
        share(&mut spent, &[0, 1, 3], 100);
        assert_eq!(spent, vec![34, 33, 0, 33]);
        share(&mut spent, &[3], 7);
        assert_eq!(spent.iter().sum::<u64>(), 107);
    }

    #[test]
    fn a_bigger_batch_costs_less_per_mail() {
        let item = MailItem {
            subject: "Lunch on Friday?".into(),
            excerpt: "Are you free for lunch on Friday at noon?".into(),
            ..MailItem::default()
        };
        let model = OpenAiTriage::from_config(&AgentConfig {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            ..AgentConfig::default()
        })
        .expect("model");
        let one = model.estimate(std::slice::from_ref(&item));
        let ten = model.estimate(&vec![item; 10]);
        assert!(
            ten / 10 <= one * 6 / 10,
            "one alone {one}, ten together {ten}"
        );
    }
}
