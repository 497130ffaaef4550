//! QQ's doctor probes: with the stored AppID and AppSecret, the token endpoint and `users/@me`
//! answer for this bot (the credentials work), then `gateway/bot` shows session starts left
//! (none left would keep the account from connecting today). Neither takes events or spends a
//! reply.

use scv_qq::{Client, ErrorClass};

use super::QqSettings;
use super::login::{APP_ID_FIELD, SECRET_FIELD, options};
use crate::probe::http::reachable;
use crate::probe::{Check, CheckId};
use crate::secrets::Credentials;

/// The credentials probe's id in `doctor --json`.
pub(super) const BOT: &str = "qq.bot";
/// The gateway probe's id.
pub(super) const GATEWAY: &str = "qq.gateway";

/// Token + `users/@me`, then `gateway/bot`; without a stored login only the host.
pub(super) async fn probe(
    id: &str,
    s: &QqSettings,
    creds: Option<&Credentials>,
    login: &str,
) -> Vec<Check> {
    let field = |n| creds.and_then(|c| c.get(n)).map(|v| v.expose().to_string());
    let (Some(app_id), Some(secret)) = (field(APP_ID_FIELD), field(SECRET_FIELD)) else {
        // Without a login the credentials check has already failed with its fix.
        let o = options(s, "", "");
        return vec![reachable(CheckId::Platform(BOT), id, &o.api_base).await];
    };
    let o = options(s, &app_id, &secret);
    let client = match Client::new(o) {
        Ok(c) => c,
        Err(e) => {
            return vec![Check::fail(
                CheckId::Platform(BOT),
                format!("{id}: {e}"),
                "report this",
            )];
        }
    };
    let bot = match client.check_login().await {
        Ok(bot) => Check::pass(
            CheckId::Platform(BOT),
            format!(
                "{id}: QQ takes the AppID and AppSecret of bot \"{}\"",
                bot.username
            ),
        ),
        Err(e) => {
            let fix = match e.class() {
                ErrorClass::Fatal(f) if f.relogin() => format!(
                    "copy the AppID and AppSecret again from q.qq.com (Development → Settings), then run `{login}`"
                ),
                _ => "check the network and any proxy; the account backs off and retries meanwhile"
                    .to_string(),
            };
            return vec![Check::fail(
                CheckId::Platform(BOT),
                format!("{id}: the login check failed: {e}"),
                fix,
            )];
        }
    };
    let gateway = match client.gateway_info().await {
        Ok(g) if g.remaining == Some(0) => Check::fail(
            CheckId::Platform(GATEWAY),
            format!(
                "{id}: QQ allows no more gateway sessions today (next in {} min)",
                g.reset_after.as_secs().div_ceil(60)
            ),
            "stop other programs connecting as this bot; the account waits and connects by itself",
        ),
        Ok(_) => Check::pass(
            CheckId::Platform(GATEWAY),
            format!("{id}: the gateway takes new sessions"),
        ),
        Err(e) => Check::fail(
            CheckId::Platform(GATEWAY),
            format!("{id}: gateway/bot failed: {e}"),
            "check the network and any proxy",
        ),
    };
    vec![bot, gateway]
}
