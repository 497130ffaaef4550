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
    /// `usage.total_tokens` reported per answer.
    pub tokens: Arc<AtomicU64>,
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
        };
        let m = model.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let m = m.clone();
                tokio::spawn(async move {
                    while let Some(body) = read_request(&mut s).await {
                        let answer = m.answer(&body);
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

    fn answer(&self, body: &str) -> String {
        if let Ok(mut r) = self.requests.lock() {
            r.push(body.to_string());
        }
        let content = if body.contains("GARBAGE") {
            "I think you should read it".to_string()
        } else if body.contains("URGENT") {
            r#"{"report": true, "urgency": "urgent", "summary": "Needs action today"}"#.to_string()
        } else if body.contains("SKIPME") {
            r#"{"report": false, "urgency": "low", "summary": ""}"#.to_string()
        } else {
            r#"{"report": true, "urgency": "normal", "summary": "A person wrote"}"#.to_string()
        };
        serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {"total_tokens": self.tokens.load(Ordering::Relaxed)},
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
