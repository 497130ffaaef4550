//! Feishu's doctor probes: the open platform's host answers over verified TLS, then (with
//! stored app credentials) the app gets a tenant token. Nothing that spends platform quota.

use super::FeishuSettings;
use super::login::{APP_ID_FIELD, APP_SECRET_FIELD};
use crate::probe::http::{http_client, reachable, transport};
use crate::probe::{Check, CheckId};
use crate::secrets::Credentials;

/// The host probe's id in `doctor --json`.
pub(super) const ENDPOINT: &str = "feishu.endpoint";
/// The app probe's id.
pub(super) const APP: &str = "feishu.app";

/// The open platform's host, then (with stored app credentials) a tenant token.
pub(super) async fn probe(
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
                CheckId::Platform(ENDPOINT),
                format!("{id}: {e}"),
                "set domain to feishu, lark or an https:// base URL",
            )];
        }
    };
    let base = domain.base_url().to_string();
    let host = reachable(CheckId::Platform(ENDPOINT), id, &base).await;
    let field = |k: &str| creds.and_then(|c| c.get(k)).map(|v| v.expose().to_string());
    let (Some(app_id), Some(secret)) = (field(APP_ID_FIELD), field(APP_SECRET_FIELD)) else {
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
                CheckId::Platform(APP),
                format!("{id}: {e}"),
                "report this",
            )];
        }
    };
    let app = scv_feishu::Credentials::new(app_id.clone(), secret);
    let token = scv_feishu::token::fetch_tenant_token(&client, &base, &app).await;
    let check = match token {
        Ok(_) => Check::pass(
            CheckId::Platform(APP),
            format!(
                "{id}: {base} accepted app {app_id} (tenant token fetched {})",
                transport(&base)
            ),
        ),
        Err(scv_feishu::Error::Token { code, msg }) => Check::fail(
            CheckId::Platform(APP),
            format!("{id}: Feishu refused app {app_id}: code {code}: {msg}"),
            format!("check the app ID and secret in the developer console, then run `{login}`"),
        ),
        Err(e) => Check::fail(
            CheckId::Platform(APP),
            format!("{id}: the token request to {base} failed: {e}"),
            "check the network and the Feishu status page; the account backs off and retries meanwhile",
        ),
    };
    vec![host, check]
}
