//! A TCP proxy in front of a fake that can freeze a transfer half way, so a test can `kill -9`
//! the daemon while a download or an upload is in flight: a connection whose request bytes
//! contain a chosen pattern forwards that request's first chunk and the answer's first chunk,
//! then nothing more either way. Everything else passes through untouched. (The Feishu fake
//! has no knob to hang its resource or upload endpoints; this holds them from the outside.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Shared {
    /// What a request must contain to be held (`None`: nothing is held).
    pattern: Mutex<Option<Vec<u8>>>,
    /// Connections held so far.
    held: AtomicUsize,
    /// Bumped when a connection is held, so a wait on [`HoldingProxy::held`] wakes then.
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for Shared {
    fn default() -> Shared {
        Shared {
            pattern: Mutex::default(),
            held: AtomicUsize::new(0),
            changed: tokio::sync::watch::channel(0).0,
        }
    }
}

/// The proxy; it stops with the test's runtime.
pub struct HoldingProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl HoldingProxy {
    /// Listens on loopback and forwards to `upstream` (`http://127.0.0.1:PORT`).
    pub async fn start(upstream: &str) -> HoldingProxy {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("an http://IP:PORT upstream");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        relay(client, server, s).await;
                    }
                });
            }
        });
        HoldingProxy { addr, shared }
    }

    /// The base URL to give the daemon instead of the fake's.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Holds every later request containing `pattern` (`None`: holds nothing more; connections
    /// already held stay frozen until their client goes away).
    pub fn hold(&self, pattern: Option<&str>) {
        if let Ok(mut p) = self.shared.pattern.lock() {
            *p = pattern.map(|p| p.as_bytes().to_vec());
        }
    }

    /// Requests held so far.
    pub fn held(&self) -> usize {
        self.shared.held.load(Ordering::SeqCst)
    }
}

impl super::changes::Changes for HoldingProxy {
    fn change(&self) -> super::changes::Change<'_> {
        let mut changed = self.shared.changed.subscribe();
        Box::pin(async move {
            // The sender lives in the proxy; gone, nothing is held any more.
            if changed.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

async fn relay(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let frozen = Arc::new(AtomicBool::new(false));
    let f = frozen.clone();
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if f.load(Ordering::SeqCst) {
                // Held: read and drop until the client goes away.
                continue;
            }
            let hit = shared
                .pattern
                .lock()
                .ok()
                .and_then(|p| p.clone())
                .is_some_and(|p| buf[..n].windows(p.len()).any(|w| w == p));
            if hit {
                f.store(true, Ordering::SeqCst);
                shared.held.fetch_add(1, Ordering::SeqCst);
                shared.changed.send_modify(|n| *n = n.wrapping_add(1));
            }
            if sw.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 16 * 1024];
        let mut after_hold = 0usize;
        loop {
            let n = match sr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if frozen.load(Ordering::SeqCst) {
                after_hold += 1;
                if after_hold > 1 {
                    continue;
                }
            }
            if cw.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::join!(up, down);
}
