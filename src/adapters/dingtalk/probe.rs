//! DingTalk's doctor probe: with the stored client id and secret, the login check (the token
//! endpoint takes them and `connections/open` gives a ticket: robot on, Stream mode,
//! published). It spends no paid quota, and the ticket is never dialed (it lapses after 90 s),
//! so no second connection takes pushes from the running account (spec §1.8).

use scv_dingtalk::ErrorClass;

use super::DingtalkSettings;
use super::login::{CLIENT_ID_FIELD, CLIENT_SECRET_FIELD, client};
use crate::probe::http::reachable;
use crate::probe::{Check, CheckId};
use crate::secrets::Credentials;

/// The probe's id in `doctor --json`.
pub(super) const APP: &str = "dingtalk.app";

/// The token endpoint with the stored credentials; without them only the host.
pub(super) async fn probe(
    id: &str,
    s: &DingtalkSettings,
    creds: Option<&Credentials>,
    login: &str,
) -> Vec<Check> {
    let field = |n: &str| creds.and_then(|c| c.get(n)).map(|v| v.expose().to_string());
    let (Some(client_id), Some(secret)) = (field(CLIENT_ID_FIELD), field(CLIENT_SECRET_FIELD))
    else {
        // Without a login the credentials check has already failed with its fix.
        let base = s
            .api_base
            .clone()
            .unwrap_or_else(|| scv_dingtalk::client::DEFAULT_API_BASE.to_string());
        return vec![reachable(CheckId::Platform(APP), id, &base).await];
    };
    let client = match client(s, &client_id, &secret) {
        Ok(c) => c,
        Err(e) => return vec![Check::fail(CheckId::Platform(APP), format!("{id}: {e}"), e)],
    };
    let check = match client.check_login().await {
        Ok(_) => Check::pass(
            CheckId::Platform(APP),
            format!(
                "{id}: DingTalk takes the credentials of app {client_id} and offers it a Stream connection"
            ),
        ),
        Err(e) => {
            let fix = match e.class() {
                ErrorClass::Fatal(r) if r.relogin() => format!(
                    "copy the client id and secret again from the app's page in the DingTalk developer console, then run `{login}`"
                ),
                ErrorClass::Fatal(r) => r.hint().to_string(),
                _ => "check the network and any proxy; the account backs off and retries meanwhile"
                    .to_string(),
            };
            Check::fail(
                CheckId::Platform(APP),
                format!("{id}: the login check failed: {e}"),
                fix,
            )
        }
    };
    vec![check]
}
