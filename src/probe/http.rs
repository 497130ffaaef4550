//! HTTPS endpoints for doctor's probes (each platform's host, the model): a request whose TLS
//! handshake verifies the certificate. Nothing that spends platform quota.

use std::time::Duration;

use super::{Check, CheckId};

/// How long one network check may take.
pub const NET_TIMEOUT: Duration = Duration::from_secs(5);

/// A client that verifies certificates (rustls, the system's roots) and gives up after 5 s.
pub fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(NET_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// ", over TLS (certificate verified)" or ", over plain HTTP (no TLS)", for the pass line.
pub fn transport(url: &str) -> &'static str {
    if url.starts_with("https://") {
        "over TLS (certificate verified)"
    } else {
        "over plain HTTP (no TLS)"
    }
}

/// Any HTTP answer from `url`: for https it proves the handshake and the certificate.
pub async fn reachable(check: CheckId, id: &str, url: &str) -> Check {
    let client = match http_client() {
        Ok(c) => c,
        Err(e) => return Check::fail(check, format!("{id}: {e}"), "report this"),
    };
    match client.get(url).send().await {
        Ok(_) => Check::pass(check, format!("{id}: {url} answers {}", transport(url))),
        Err(e) => request_failure(check, id, url, &e),
    }
}

/// Names what went wrong below HTTP: an untrusted certificate, a timeout, or no connection.
pub fn request_failure(check: CheckId, id: &str, url: &str, e: &reqwest::Error) -> Check {
    let cause = innermost(e);
    if cause.to_ascii_lowercase().contains("certificate") {
        return Check::fail(
            check,
            format!("{id}: {url}: the TLS certificate is not trusted ({cause})"),
            "the server must present a certificate for this host from a CA this machine trusts: check the URL, the system's CA certificates (ca-certificates) and any TLS-intercepting proxy",
        );
    }
    let what = if e.is_timeout() {
        format!(
            "{id}: {url} does not answer within {} s",
            NET_TIMEOUT.as_secs()
        )
    } else {
        format!("{id}: {url} cannot be reached ({cause})")
    };
    Check::fail(
        check,
        what,
        "check the URL, DNS, the network and any proxy; a running account backs off and retries meanwhile",
    )
}

/// The innermost cause of a request error, short.
fn innermost(e: &reqwest::Error) -> String {
    let mut s: &dyn std::error::Error = e;
    while let Some(next) = s.source() {
        s = next;
    }
    s.to_string().chars().take(160).collect()
}
