//! WeChat's doctor probe: the iLink host the account talks to answers over verified TLS.

use super::WechatSettings;
use super::login::BASE_URL_FIELD;
use crate::probe::http::reachable;
use crate::probe::{Check, CheckId};
use crate::secrets::Credentials;

/// The probe's id in `doctor --json`.
pub(super) const ENDPOINT: &str = "wechat.endpoint";

/// The iLink host the account talks to: configured, else the one its login stored, else the default.
pub(super) async fn probe(id: &str, s: &WechatSettings, creds: Option<&Credentials>) -> Check {
    let url = s
        .base_url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| {
            creds
                .and_then(|c| c.get(BASE_URL_FIELD))
                .map(|u| u.expose().to_string())
        })
        .unwrap_or_else(|| scv_wechat::types::DEFAULT_BASE_URL.to_string());
    reachable(CheckId::Platform(ENDPOINT), id, &url).await
}
