//! Counts the fake's open client connections, so a test can tell when a killed client's
//! sockets are all gone: a request it wrote just before dying may still sit unread in one,
//! and the fake would read it and hand that dead poll the next messages (lost, as on the real
//! platform). A connection stops counting when the server drops it, after its last request.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::Shared;

/// The fake's listener: every accepted stream counts in `Shared::connections` while it lives.
pub(crate) struct Counted {
    pub(crate) listener: TcpListener,
    pub(crate) shared: Arc<Shared>,
}

impl axum::serve::Listener for Counted {
    type Io = CountedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (CountedStream, SocketAddr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.listener).await;
        self.shared.connections.fetch_add(1, Ordering::SeqCst);
        self.shared.bump();
        let stream = CountedStream {
            stream,
            shared: self.shared.clone(),
        };
        (stream, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// An accepted connection; dropping it (the server is done with it) uncounts it.
pub(crate) struct CountedStream {
    stream: TcpStream,
    shared: Arc<Shared>,
}

impl Drop for CountedStream {
    fn drop(&mut self) {
        self.shared.connections.fetch_sub(1, Ordering::SeqCst);
        self.shared.bump();
    }
}

impl AsyncRead for CountedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for CountedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Waits (up to `timeout`) until the server has closed every connection opened before the call,
/// having read what they carried; false if it has not by then.
///
/// A connection the kernel completed but the server has not accepted yet does not count, so the
/// count alone could read 0 with a dead client's request still queued. A request of our own on a
/// fresh connection goes through the same queue, and the server accepts in order: once it is
/// answered, every earlier connection was accepted and counts until the server is done with it.
pub(crate) async fn closed(shared: &Shared, timeout: Duration) -> bool {
    let mut changed = shared.changed.subscribe();
    let work = async {
        probe(shared.addr).await;
        loop {
            changed.borrow_and_update();
            if shared.connections.load(Ordering::SeqCst) == 0 {
                return;
            }
            if changed.changed().await.is_err() {
                return;
            }
        }
    };
    tokio::time::timeout(timeout, work).await.is_ok()
        && shared.connections.load(Ordering::SeqCst) == 0
}

/// One request on a fresh connection that asks the server to close it, read to its end.
async fn probe(addr: SocketAddr) {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return;
    };
    let request = format!("GET /probe HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_ok() {
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    }
}
