//! WeCom's doctor probe: the long-connection host answers over TLS. It never subscribes: a
//! subscribe would take the bot's one connection from whatever runs it now (spec §1.5), and
//! the login already proved the credentials the same way.

use super::WecomSettings;
use super::login::url;
use crate::probe::http::reachable;
use crate::probe::{Check, CheckId};

/// The endpoint probe's id in `doctor --json`.
pub(super) const ENDPOINT: &str = "wecom.endpoint";

/// The host of the configured URL, asked over HTTPS (plain HTTP for a `ws://` fake). The
/// stored login is not used: the credentials check already names a missing one.
pub(super) async fn probe(id: &str, s: &WecomSettings) -> Vec<Check> {
    let ws = url(s);
    let Some(http) = http_url(&ws) else {
        let table = id.replace(':', ".");
        return vec![Check::fail(
            CheckId::Platform(ENDPOINT),
            format!("{id}: {ws:?} is not a ws:// or wss:// URL"),
            format!("fix url under [{table}], then run `scv-bridge reload`"),
        )];
    };
    vec![reachable(CheckId::Platform(ENDPOINT), id, &http).await]
}

/// The same host over HTTP(S): `wss://h/p` → `https://h/p`, `ws://` → `http://`.
fn http_url(ws: &str) -> Option<String> {
    if let Some(rest) = ws.strip_prefix("wss://") {
        return Some(format!("https://{rest}"));
    }
    ws.strip_prefix("ws://")
        .map(|rest| format!("http://{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_socket_url_is_asked_over_its_http_twin() {
        assert_eq!(
            http_url("wss://openws.work.weixin.qq.com").as_deref(),
            Some("https://openws.work.weixin.qq.com")
        );
        assert_eq!(
            http_url("ws://127.0.0.1:9").as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(http_url("https://x"), None);
    }
}
