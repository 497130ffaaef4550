//! The Echo server for tests, on loopback: it refuses a wrong token, pushes messages to the
//! listening connection, pushes the unacknowledged ones again on the next connection, and
//! records what is said (once per key).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

/// A running fake; stops when dropped.
pub struct EchoServer {
    address: String,
    state: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

struct Shared {
    token: String,
    bot: String,
    inner: Mutex<Inner>,
    pushed: Notify,
    said_count: watch::Sender<usize>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    queue: VecDeque<Value>,
    unacked: Vec<Value>,
    acked: Vec<String>,
    said: Vec<(String, String)>,
    keys: HashSet<String>,
}

impl EchoServer {
    /// A server that knows one `token`, belonging to bot `bot`.
    pub async fn start(token: &str, bot: &str) -> std::io::Result<EchoServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        let state = Arc::new(Shared {
            token: token.to_string(),
            bot: bot.to_string(),
            inner: Mutex::new(Inner::default()),
            pushed: Notify::new(),
            said_count: watch::channel(0).0,
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(shared.clone(), stream));
            }
        });
        Ok(EchoServer {
            address,
            state,
            task,
        })
    }

    /// `host:port`, for `[echo.ACCOUNT] address`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Pushes a message from `from` in their direct chat; returns its id.
    pub fn push(&self, from: &str, text: &str) -> String {
        let id = {
            let mut s = self.inner();
            s.next_id += 1;
            let id = format!("m{}", s.next_id);
            let msg = json!({"msg": {"id": id, "from": from, "chat": from, "text": text}});
            s.queue.push_back(msg);
            id
        };
        self.state.pushed.notify_waiters();
        id
    }

    /// What was said, in order: (chat, text).
    pub fn said(&self) -> Vec<(String, String)> {
        self.inner().said.clone()
    }

    /// The ids acknowledged so far.
    pub fn acked(&self) -> Vec<String> {
        self.inner().acked.clone()
    }

    /// Waits until at least `n` messages were said.
    pub async fn wait_said(&self, n: usize) -> Vec<(String, String)> {
        let mut rx = self.state.said_count.subscribe();
        let _ = rx.wait_for(|c| *c >= n).await;
        self.said()
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.state.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Shared {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One connection: the hello, then a listen, a say, or nothing more.
async fn serve(s: Arc<Shared>, stream: TcpStream) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let Ok(Some(line)) = lines.next_line().await else {
        return;
    };
    let Ok(req) = serde_json::from_str::<Value>(&line) else {
        return;
    };
    if req.get("hello").and_then(Value::as_str) != Some(s.token.as_str()) {
        let _ = write.write_all(b"{\"refused\":\"unknown token\"}\n").await;
        return;
    }
    if let Some(say) = req.get("say") {
        let id = said(&s, say);
        let _ = write
            .write_all(format!("{}\n", json!({"sent": id})).as_bytes())
            .await;
        return;
    }
    let hello = format!("{}\n", json!({"bot": s.bot}));
    if write.write_all(hello.as_bytes()).await.is_err() || req.get("listen").is_none() {
        return;
    }
    listen(&s, lines, write).await;
}

/// Records one said message, once per key; its id.
fn said(s: &Shared, say: &Value) -> String {
    let field = |k: &str| {
        say.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut inner = s.inner();
    if inner.keys.insert(field("key")) {
        inner.said.push((field("chat"), field("text")));
        s.said_count.send_replace(inner.said.len());
    }
    format!("s{}", inner.said.len())
}

/// Pushes queued messages (the unacknowledged ones first) and takes acknowledgements.
async fn listen(
    s: &Shared,
    mut lines: tokio::io::Lines<BufReader<tokio::net::tcp::OwnedReadHalf>>,
    mut write: tokio::net::tcp::OwnedWriteHalf,
) {
    {
        let mut inner = s.inner();
        let again: Vec<Value> = inner.unacked.drain(..).collect();
        for m in again.into_iter().rev() {
            inner.queue.push_front(m);
        }
    }
    loop {
        let pushed = s.pushed.notified();
        let next = {
            let mut inner = s.inner();
            let next = inner.queue.pop_front();
            if let Some(m) = &next {
                inner.unacked.push(m.clone());
            }
            next
        };
        if let Some(m) = next {
            if write.write_all(format!("{m}\n").as_bytes()).await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            _ = pushed => {}
            line = lines.next_line() => match line {
                Ok(Some(line)) => ack(s, &line),
                _ => return,
            },
        }
    }
}

/// Takes an acknowledgement line.
fn ack(s: &Shared, line: &str) {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return;
    };
    let Some(id) = v.get("ack").and_then(Value::as_str) else {
        return;
    };
    let mut inner = s.inner();
    inner
        .unacked
        .retain(|m| m["msg"]["id"].as_str() != Some(id));
    inner.acked.push(id.to_string());
}
