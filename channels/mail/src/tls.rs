//! TLS client configuration (system roots, webpki fallback, an optional extra CA) and the
//! loopback rule for unencrypted connections.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::{
    self, ClientConfig, RootCertStore,
    pki_types::{CertificateDer, ServerName, pem::PemObject},
};

use crate::error::{MailError, Result};
use crate::settings::Security;

/// The trusted roots and whether they came from the system, loaded once: reading /etc/ssl
/// on every reconnect is wasteful.
fn roots() -> &'static (RootCertStore, bool) {
    static ROOTS: OnceLock<(RootCertStore, bool)> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots = RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        let (added, _ignored) = roots.add_parsable_certificates(native.certs);
        if added == 0 {
            // Minimal containers ship no CA bundle; the Mozilla set keeps public servers working.
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        (roots, added > 0)
    })
}

/// Whether the system has a CA bundle (otherwise the webpki roots stand in for it).
pub(crate) fn system_roots_available() -> bool {
    roots().1
}

/// Reads every certificate in a PEM file; an empty or unreadable file is a settings error.
pub(crate) fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let shown = path.display();
    let iter = CertificateDer::pem_file_iter(path)
        .map_err(|e| MailError::Config(format!("tls_ca {shown}: {e}")))?;
    let certs = iter
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| MailError::Config(format!("tls_ca {shown}: {e}")))?;
    if certs.is_empty() {
        return Err(MailError::Config(format!(
            "tls_ca {shown}: no certificate in file"
        )));
    }
    Ok(certs)
}

/// Builds a rustls client configuration trusting the system roots plus `tls_ca`.
pub(crate) fn client_config(tls_ca: Option<&Path>) -> Result<Arc<ClientConfig>> {
    let mut roots = roots().0.clone();
    if let Some(path) = tls_ca {
        for cert in read_ca_file(path)? {
            roots
                .add(cert)
                .map_err(|e| MailError::Config(format!("tls_ca {}: {e}", path.display())))?;
        }
    }
    // An explicit provider: the workspace may enable both ring and aws-lc-rs, and then
    // rustls cannot pick a process default on its own.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| MailError::Config(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Resolves `host` and enforces the loopback rule for [`Security::Plain`].
pub(crate) async fn resolve(host: &str, port: u16, security: Security) -> Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| MailError::Network {
            op: "resolve",
            source,
        })?
        .collect();
    if addrs.is_empty() {
        return Err(MailError::Config(format!("host {host} has no address")));
    }
    if security == Security::Plain && !addrs.iter().all(|a| a.ip().is_loopback()) {
        return Err(MailError::Config(format!(
            "unencrypted connections are allowed only to loopback addresses; \
             use tls or starttls for {host}"
        )));
    }
    Ok(addrs)
}

/// Connects TCP to the first address that answers.
pub(crate) async fn connect_tcp(addrs: &[SocketAddr]) -> Result<TcpStream> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                // Mail commands are small request/response exchanges; Nagle only adds latency.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = Some(e),
        }
    }
    let source = last.unwrap_or_else(|| std::io::Error::other("no address to connect to"));
    Err(MailError::Network {
        op: "connect",
        source,
    })
}

/// Runs the TLS handshake over an open TCP stream, verifying `host`.
pub(crate) async fn handshake(
    tcp: TcpStream,
    host: &str,
    config: Arc<ClientConfig>,
) -> Result<TlsStream<TcpStream>> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|_| MailError::Config(format!("{host} is not a valid TLS server name")))?;
    TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| MailError::from_io("tls handshake", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn plain_is_refused_to_non_loopback() {
        let err = resolve("192.0.2.1", 143, Security::Plain)
            .await
            .unwrap_err();
        assert!(matches!(err, MailError::Config(_)), "{err}");
        assert!(err.to_string().contains("loopback"));
        assert_eq!(err.classify(), crate::ErrorClass::Fatal { auth: false });
        assert!(resolve("192.0.2.1", 993, Security::Tls).await.is_ok());
        assert!(resolve("127.0.0.1", 143, Security::Plain).await.is_ok());
        assert!(resolve("::1", 143, Security::Plain).await.is_ok());
    }

    #[test]
    fn unreadable_or_empty_ca_file_is_a_config_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        assert!(matches!(
            client_config(Some(&missing)),
            Err(MailError::Config(_))
        ));
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        assert!(matches!(
            client_config(Some(&empty)),
            Err(MailError::Config(_))
        ));
        assert!(client_config(None).is_ok());
    }
}
