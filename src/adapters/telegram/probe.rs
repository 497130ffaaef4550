//! Telegram's doctor probes: with the stored token, `getMe` answers for this bot (the token
//! works), then `getWebhookInfo` shows no webhook (one would make every poll a 409). Neither
//! spends quota that matters; neither takes updates.

use scv_telegram::{BotToken, Client, ErrorClass};

use super::TelegramSettings;
use super::login::{TOKEN_FIELD, base_url};
use crate::probe::http::reachable;
use crate::probe::{Check, CheckId};
use crate::secrets::Credentials;

/// The token probe's id in `doctor --json`.
pub(super) const BOT: &str = "telegram.bot";
/// The webhook probe's id.
pub(super) const WEBHOOK: &str = "telegram.webhook";

/// `getMe`, then `getWebhookInfo`; without a stored token only the host.
pub(super) async fn probe(
    id: &str,
    s: &TelegramSettings,
    creds: Option<&Credentials>,
    login: &str,
) -> Vec<Check> {
    let base = base_url(s);
    let Some(token) = creds.and_then(|c| c.get(TOKEN_FIELD)) else {
        // Without a token the credentials check has already failed with its fix.
        return vec![reachable(CheckId::Platform(BOT), id, &base).await];
    };
    let relogin =
        format!("copy the token again from @BotFather (/mybots → API Token), then run `{login}`");
    let token = match BotToken::parse(token.expose()) {
        Ok(t) => t,
        Err(e) => {
            return vec![Check::fail(
                CheckId::Platform(BOT),
                format!("{id}: {e}"),
                relogin,
            )];
        }
    };
    let client = match Client::new(&base, token) {
        Ok(c) => c,
        Err(e) => {
            let table = id.replace(':', ".");
            return vec![Check::fail(
                CheckId::Platform(BOT),
                format!("{id}: {e}"),
                format!("fix base_url under [{table}]"),
            )];
        }
    };
    let bot = match client.get_me().await {
        Ok(bot) => Check::pass(
            CheckId::Platform(BOT),
            format!(
                "{id}: {base} knows the token of bot @{} ({})",
                bot.username, bot.id
            ),
        ),
        Err(e) => {
            let fix = match e.class() {
                ErrorClass::Fatal { relogin: true, .. } => relogin,
                _ => "check the network and any proxy; the account backs off and retries meanwhile"
                    .to_string(),
            };
            return vec![Check::fail(
                CheckId::Platform(BOT),
                format!("{id}: getMe failed: {e}"),
                fix,
            )];
        }
    };
    let webhook = match client.webhook_info().await {
        Ok(info) if info.url.is_empty() => Check::pass(
            CheckId::Platform(WEBHOOK),
            format!("{id}: no webhook is set, so polling works"),
        ),
        // The URL may carry a secret path: never printed.
        Ok(_) => Check::fail(
            CheckId::Platform(WEBHOOK),
            format!("{id}: a webhook is set on this bot, so polling gets 409"),
            "the running account deletes it once at start; if it comes back, stop the service that sets it",
        ),
        Err(e) => Check::fail(
            CheckId::Platform(WEBHOOK),
            format!("{id}: getWebhookInfo failed: {e}"),
            "check the network and any proxy",
        ),
    };
    vec![bot, webhook]
}
