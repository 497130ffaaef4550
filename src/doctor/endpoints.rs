//! HTTPS endpoints (WeChat iLink, Feishu open platform, the model): a request whose TLS handshake
//! verifies the certificate, and for Feishu the app's token. Nothing that spends platform quota.

use std::time::Duration;

use super::{Check, CheckId};
use crate::config::{FeishuSettings, WechatSettings};
use crate::secrets::Credentials;

/// How long one network check may take.
pub(super) const NET_TIMEOUT: Duration = Duration::from_secs(5);

/// A client that verifies certificates (rustls, the system's roots) and gives up after 5 s.
pub(super) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(NET_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// ", over TLS (certificate verified)" or ", over plain HTTP (no TLS)", for the pass line.
pub(super) fn transport(url: &str) -> &'static str {
    if url.starts_with("https://") {
        "over TLS (certificate verified)"
    } else {
        "over plain HTTP (no TLS)"
    }
}

/// Any HTTP answer from `url`: for https it proves the handshake and the certificate.
pub(super) async fn reachable(check: CheckId, id: &str, url: &str) -> Check {
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
pub(super) fn request_failure(check: CheckId, id: &str, url: &str, e: &reqwest::Error) -> Check {
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

/// The iLink host the account talks to: configured, else the one its login stored, else the default.
pub(super) async fn wechat(id: &str, s: &WechatSettings, creds: Option<&Credentials>) -> Check {
    let url = s
        .base_url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| {
            creds
                .and_then(|c| c.get("base_url"))
                .map(|u| u.expose().to_string())
        })
        .unwrap_or_else(|| scv_wechat::types::DEFAULT_BASE_URL.to_string());
    reachable(CheckId::WechatEndpoint, id, &url).await
}

/// The open platform's host, then (with stored app credentials) a tenant token.
pub(super) async fn feishu(
    id: &str,
    s: &FeishuSettings,
    creds: Option<&Credentials>,
    login: &str,
) -> Vec<Check> {
    let domain: scv_feishu::Domain = match s.domain.as_deref().unwrap_or("feishu").parse() {
        Ok(d) => d,
        Err(e) => {
            let e: scv_feishu::domain::DomainError = e;
            return vec![Check::fail(
                CheckId::FeishuEndpoint,
                format!("{id}: {e}"),
                "set domain to feishu, lark or an https:// base URL",
            )];
        }
    };
    let base = domain.base_url().to_string();
    let host = reachable(CheckId::FeishuEndpoint, id, &base).await;
    let field = |k: &str| creds.and_then(|c| c.get(k)).map(|v| v.expose().to_string());
    let (Some(app_id), Some(secret)) = (field("app_id"), field("app_secret")) else {
        // Without credentials the credentials check has already failed with its fix.
        return vec![host];
    };
    if host.fix.is_some() {
        return vec![host];
    }
    let client = match http_client() {
        Ok(c) => c,
        Err(e) => {
            return vec![Check::fail(
                CheckId::FeishuApp,
                format!("{id}: {e}"),
                "report this",
            )];
        }
    };
    let app = scv_feishu::Credentials::new(app_id.clone(), secret);
    let token = scv_feishu::token::fetch_tenant_token(&client, &base, &app).await;
    let check = match token {
        Ok(_) => Check::pass(
            CheckId::FeishuApp,
            format!(
                "{id}: {base} accepted app {app_id} (tenant token fetched {})",
                transport(&base)
            ),
        ),
        Err(scv_feishu::Error::Token { code, msg }) => Check::fail(
            CheckId::FeishuApp,
            format!("{id}: Feishu refused app {app_id}: code {code}: {msg}"),
            format!("check the app ID and secret in the developer console, then run `{login}`"),
        ),
        Err(e) => Check::fail(
            CheckId::FeishuApp,
            format!("{id}: the token request to {base} failed: {e}"),
            "check the network and the Feishu status page; the account backs off and retries meanwhile",
        ),
    };
    vec![host, check]
}

/// The innermost cause of a request error, short.
fn innermost(e: &reqwest::Error) -> String {
    let mut s: &dyn std::error::Error = e;
    while let Some(next) = s.source() {
        s = next;
    }
    s.to_string().chars().take(160).collect()
}
