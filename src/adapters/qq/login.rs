//! QQ's login steps: the AppID and AppSecret from the QQ open platform (q.qq.com), the secret
//! asked without echo, both checked with the token endpoint and `users/@me` before anything is
//! stored. The owner then pairs by sending the one-time code to the bot in a one-to-one chat
//! (the port's pairing; never from a group, spec §3.3), unless the configuration names them
//! (`owner = "<user_openid>"`).
//!
//! The QR bind of spec §3.3.1 is not offered: it is an observed, undocumented interface.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_qq::{Client, ClientOptions, ErrorClass};

use super::QqSettings;
use crate::config::ChannelSettings;
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Shown, Verified,
};
use crate::secrets::Credentials;

/// The stored AppID (also what the same-bot check compares).
pub(crate) const APP_ID_FIELD: &str = "app_id";
/// The stored AppSecret.
pub(super) const SECRET_FIELD: &str = "app_secret";
/// The bot's user id from `users/@me`.
pub(super) const BOT_ID_FIELD: &str = "bot_id";
/// The bot's name, for people.
pub(super) const BOT_NAME_FIELD: &str = "bot_name";

const APP_ID: Field = Field::asked(
    APP_ID_FIELD,
    "AppID (q.qq.com → your bot → Development → Settings)",
    "no AppID given: q.qq.com shows it under your bot's Development → Settings",
);

const SECRET: Field = Field::asked(
    SECRET_FIELD,
    "AppSecret (same page; generate one if none is shown)",
    "no AppSecret given: q.qq.com generates it under your bot's Development → Settings",
)
.secret();

/// QQ's login.
pub(super) struct QqLogin;

impl LoginFlow for QqLogin {
    fn intro(&self) -> Option<String> {
        Some(
            "Create the bot on the QQ open platform (q.qq.com) and copy its AppID and AppSecret; \
             `scv-bridge guide` explains the steps (`scv-bridge guide --lang zh-CN` in Chinese)."
                .to_string(),
        )
    }

    fn fields(&self, _input: &LoginInput<'_>) -> Vec<Field> {
        vec![APP_ID, SECRET]
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        async move {
            let settings = settings_of(input.settings);
            let app_id = answers.get(APP_ID_FIELD).cloned().unwrap_or_default();
            let secret = answers.get(SECRET_FIELD).cloned().unwrap_or_default();
            let verified = verify(&settings, &app_id, &secret).await?;
            if verified.owner == OwnerBy::Pairing {
                ui.show(Shown::Line(
                    "The owner pairs by sending the code shown below to the bot in a one-to-one \
                     QQ chat (not in a group)."
                        .to_string(),
                ));
            }
            Ok(Checked::Verified(verified))
        }
        .boxed()
    }
}

/// Checks an AppID and AppSecret at the account's hosts: what to store, and whether the owner
/// pairs. The error says what failed and what to do.
pub(super) async fn verify(
    settings: &QqSettings,
    app_id: &str,
    secret: &str,
) -> Result<Verified, String> {
    let (app_id, secret) = (app_id.trim(), secret.trim());
    if app_id.is_empty() || !app_id.chars().all(|c| c.is_ascii_digit()) {
        return Err("the AppID is a number (q.qq.com → your bot → Development → Settings)".into());
    }
    let options = options(settings, app_id, secret);
    let client = Client::new(options.clone()).map_err(|e| e.to_string())?;
    let bot = client.check_login().await.map_err(|e| match e.class() {
        ErrorClass::Fatal(f) if f.relogin() => format!(
            "QQ refused the AppID or AppSecret ({e}): copy both again from q.qq.com (Development → Settings)"
        ),
        _ => format!(
            "could not reach QQ ({e}; asked {} and {}): check the network and any proxy, then log in again",
            options.token_base, options.api_base
        ),
    })?;
    let entry = Credentials::default()
        .with(APP_ID_FIELD, app_id)
        .with(SECRET_FIELD, secret)
        .with(BOT_ID_FIELD, &bot.id)
        .with(BOT_NAME_FIELD, &bot.username);
    Ok(Verified {
        entry,
        said: format!("bot \"{}\" (AppID {app_id})", bot.username),
        owner: if settings.owner.is_some() {
            OwnerBy::Configured
        } else {
            OwnerBy::Pairing
        },
    })
}

/// The client options for the account's hosts: the configured ones, else QQ's.
pub(super) fn options(settings: &QqSettings, app_id: &str, secret: &str) -> ClientOptions {
    let mut o = ClientOptions::new(scv_qq::Credentials::new(app_id, secret));
    let set = |v: &Option<String>| v.clone().filter(|u| !u.trim().is_empty());
    if let Some(api) = set(&settings.api_base) {
        o.api_base = api.trim_end_matches('/').to_string();
    }
    if let Some(token) = set(&settings.token_base) {
        o.token_base = token.trim_end_matches('/').to_string();
    }
    // A scheme-less attachment URL gets the API's scheme: https in production, http only when
    // the API itself is configured on plain http (a local fake or proxy).
    if o.api_base.starts_with("http://") {
        o.attachment_scheme = "http".into();
    }
    o
}

/// The account's QQ settings (defaults when it is not configured yet).
pub(super) fn settings_of(settings: Option<&ChannelSettings>) -> QqSettings {
    settings.map(QqSettings::of).unwrap_or_default()
}
