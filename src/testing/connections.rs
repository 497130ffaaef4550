//! A TCP listener for the fakes that counts the connections still open, so a test that killed
//! its client can wait until the fake has read everything the dead process sent: the kernel
//! delivers a killed process's last bytes, then its hang-up, and the fake handles a request on
//! a connection before that connection ends.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Accepts like a [`TcpListener`] (with `TCP_NODELAY`, as a real server flushes each event at
/// once) and counts each connection open until the server drops it.
pub struct Counted {
    inner: TcpListener,
    open: watch::Sender<usize>,
}

impl Counted {
    /// Wraps `inner`; `open` is raised at each accept and lowered when that connection ends.
    pub fn new(inner: TcpListener, open: watch::Sender<usize>) -> Counted {
        Counted { inner, open }
    }
}

impl axum::serve::Listener for Counted {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Connection, SocketAddr) {
        let (tcp, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        // Without TCP_NODELAY the second small write of a stream waits for a delayed ACK
        // (40 ms), which no real server adds.
        let _ = tcp.set_nodelay(true);
        self.open.send_modify(|n| *n += 1);
        let open = self.open.clone();
        (Connection { tcp, open }, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// One accepted connection; lowers the count when dropped (the server is done with it).
pub struct Connection {
    tcp: TcpStream,
    open: watch::Sender<usize>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.open.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}
