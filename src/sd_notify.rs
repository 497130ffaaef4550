//! systemd readiness and watchdog notifications (`Type=notify`, `WatchdogSec=`), without a library.
//!
//! The watchdog is fed only after the daemon proves it still works (the store answers a call),
//! so a stuck daemon stops feeding it and systemd restarts it.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::Store;

/// Sends one notification (`READY=1`, `WATCHDOG=1`, `STOPPING=1`) when run under systemd; a no-op otherwise.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = UnixDatagram::unbound() else {
        return;
    };
    let bytes = path.as_encoded_bytes();
    let sent = if let Some(abstract_name) = bytes.strip_prefix(b"@") {
        send_abstract(&sock, abstract_name, state)
    } else {
        sock.send_to(state.as_bytes(), std::path::Path::new(&path))
            .map(drop)
    };
    if let Err(e) = sent {
        tracing::debug!(error = %e, "sd_notify failed");
    }
}

#[cfg(target_os = "linux")]
fn send_abstract(sock: &UnixDatagram, name: &[u8], state: &str) -> std::io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
    sock.send_to_addr(state.as_bytes(), &addr).map(drop)
}

#[cfg(not(target_os = "linux"))]
fn send_abstract(_sock: &UnixDatagram, _name: &[u8], _state: &str) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "abstract sockets exist only on Linux",
    ))
}

/// The watchdog interval systemd asked for (`WATCHDOG_USEC`), if any.
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

/// Feeds the watchdog at half its interval while the store answers within that time.
pub async fn feed_watchdog(store: Store, interval: Duration, shutdown: CancellationToken) {
    let every = interval / 2;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let probe = store.call(|t| t.query_row("SELECT 1", [], |r| r.get::<_, i64>(0)));
        match tokio::time::timeout(every, probe).await {
            Ok(Ok(_)) => notify("WATCHDOG=1"),
            _ => {
                tracing::warn!("the store did not answer in time; not feeding the systemd watchdog")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_reach_the_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notify.sock");
        let server = UnixDatagram::bind(&path).expect("bind");
        // SAFETY: the test sets a variable only it reads; no other thread in this test binary uses NOTIFY_SOCKET.
        unsafe { std::env::set_var("NOTIFY_SOCKET", &path) };
        notify("READY=1");
        let mut buf = [0u8; 64];
        let n = server.recv(&mut buf).expect("recv");
        assert_eq!(&buf[..n], b"READY=1");
        unsafe { std::env::remove_var("NOTIFY_SOCKET") };
    }
}
