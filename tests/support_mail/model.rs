//! A fake OpenAI-compatible `/chat/completions` endpoint: decides from marker words in the mail.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The fake model's state, shared with its server task.
#[derive(Clone)]
pub struct FakeModel {
    port: u16,
    /// Every request body received.
    pub requests: Arc<Mutex<Vec<String>>>,
    /// `usage.total_tokens` reported per answer; 0 reports what the call's text measures
    /// (characters / 4 of the request's messages and of the answer), like a real tokenizer would.
    pub tokens: Arc<AtomicU64>,
    /// Milliseconds to think before each answer (0: at once), to measure triage at model speed.
    pub delay_ms: Arc<AtomicU64>,
    /// When set, each request waits (at most 10 s) until this many are in flight at once.
    pub gate: Arc<AtomicU64>,
    /// The most requests that were in flight at once.
    pub max_in_flight: Arc<AtomicU64>,
    in_flight: Arc<AtomicU64>,
    arrived: Arc<tokio::sync::Notify>,
}

impl FakeModel {
    /// Listens on a free loopback port.
    pub async fn start() -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let model = FakeModel {
            port,
            requests: Arc::default(),
            tokens: Arc::new(AtomicU64::new(100)),
            delay_ms: Arc::default(),
            gate: Arc::default(),
            max_in_flight: Arc::default(),
            in_flight: Arc::default(),
            arrived: Arc::default(),
        };
        let m = model.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let m = m.clone();
                tokio::spawn(async move {
                    while let Some(body) = read_request(&mut s).await {
                        m.wait_at_gate().await;
                        let delay = m.delay_ms.load(Ordering::Relaxed);
                        if delay > 0 {
                            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                        }
                        let answer = m.answer(&body);
                        m.in_flight.fetch_sub(1, Ordering::SeqCst);
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                        if s.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        model
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.requests.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// Whether any request contained `text`.
    pub fn saw(&self, text: &str) -> bool {
        self.requests
            .lock()
            .map(|r| r.iter().any(|b| b.contains(text)))
            .unwrap_or(false)
    }

    async fn wait_at_gate(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.arrived.notify_waiters();
        let gate = self.gate.load(Ordering::Relaxed);
        if gate == 0 {
            return;
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            loop {
                let notified = self.arrived.notified();
                if self.max_in_flight.load(Ordering::SeqCst) >= gate {
                    return;
                }
                notified.await;
            }
        })
        .await;
    }

    /// How many requests asked about an email containing `text`.
    pub fn asked_about(&self, text: &str) -> usize {
        self.requests
            .lock()
            .map(|r| r.iter().filter(|b| b.contains(text)).count())
            .unwrap_or(0)
    }

    /// Answers a batched triage request: one decision per email, chosen by marker words in it.
    /// `GARBAGE` makes that email's decision invalid (the whole answer when it is alone);
    /// `FORGETME` leaves its decision out while other emails share the call.
    fn answer(&self, body: &str) -> String {
        if let Ok(mut r) = self.requests.lock() {
            r.push(body.to_string());
        }
        let request: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let user = request["messages"][1]["content"].as_str().unwrap_or("");
        let emails: Vec<serde_json::Value> = serde_json::from_str::<serde_json::Value>(user)
            .ok()
            .and_then(|v| v["untrusted_emails"].as_array().cloned())
            .unwrap_or_default();
        let alone = emails.len() == 1;
        let mut decisions = Vec::new();
        for e in &emails {
            let id = e["id"].as_str().unwrap_or("");
            let text = e.to_string();
            let d = if text.contains("GARBAGE") {
                if alone {
                    decisions.clear();
                    break;
                }
                serde_json::json!({"id": id, "report": "maybe"})
            } else if text.contains("FORGETME") && !alone {
                continue;
            } else if text.contains("URGENT") {
                serde_json::json!({"id": id, "report": true, "urgency": "urgent", "summary": "Needs action today"})
            } else if text.contains("SKIPME") {
                serde_json::json!({"id": id, "report": false, "urgency": "low", "summary": ""})
            } else {
                serde_json::json!({"id": id, "report": true, "urgency": "normal", "summary": "A person wrote"})
            };
            decisions.push(d);
        }
        let content = if decisions.is_empty() {
            "I think you should read it".to_string()
        } else {
            serde_json::json!({ "decisions": decisions }).to_string()
        };
        let fixed = self.tokens.load(Ordering::Relaxed);
        let total = if fixed > 0 {
            fixed
        } else {
            let asked: usize = request["messages"]
                .as_array()
                .map(|ms| {
                    ms.iter()
                        .filter_map(|m| m["content"].as_str())
                        .map(str::len)
                        .sum()
                })
                .unwrap_or(0);
            (asked + content.len()).div_ceil(4) as u64
        };
        serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {"total_tokens": total},
        })
        .to_string()
    }
}

async fn read_request(s: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
            return Some(body);
        }
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}
