//! WeCom's login steps: the AI bot's id and secret from the admin console, the secret asked
//! without echo, both checked by subscribing once on the long connection before anything is
//! stored (spec §1.3; there is no other identity call). The owner then pairs by sending the
//! one-time code to the bot in a direct chat (the port's pairing), unless the configuration
//! names their userid (`owner = "…"`).

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_wecom::{Credentials as BotCredentials, Error, Options};

use super::WecomSettings;
use crate::config::ChannelSettings;
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Shown, Verified,
};
use crate::secrets::Credentials;

/// The stored bot id (also the same-bot check's field, as WeChat's and Telegram's).
pub(crate) const BOT_ID_FIELD: &str = "bot_id";
/// The stored secret.
pub(super) const SECRET_FIELD: &str = "secret";

const BOT_ID: Field = Field::asked(
    BOT_ID_FIELD,
    "Bot ID of the WeCom AI bot (aib…)",
    "no bot id given: the WeCom admin console shows it under 应用管理 → 智能机器人 → the bot → API mode (long connection)",
)
.flag("bot-id");

const SECRET: Field = Field::asked(
    SECRET_FIELD,
    "Secret of the WeCom AI bot",
    "no secret given: the WeCom admin console shows it once when API mode (long connection) is turned on; reset it there if it was lost",
)
.secret()
.exact();

/// WeCom's login.
pub(super) struct WecomLogin;

impl LoginFlow for WecomLogin {
    fn intro(&self) -> Option<String> {
        Some(
            "Create an AI bot (智能机器人) in the WeCom admin console, turn on API mode with the \
             long connection, and paste its bot id and secret; `scv-bridge guide` explains the \
             steps (`scv-bridge guide --lang zh-CN` in Chinese)."
                .to_string(),
        )
    }

    fn fields(&self, _input: &LoginInput<'_>) -> Vec<Field> {
        vec![BOT_ID, SECRET]
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        async move {
            let settings = settings_of(input.settings);
            let bot_id = answers.get(BOT_ID_FIELD).cloned().unwrap_or_default();
            let secret = answers.get(SECRET_FIELD).cloned().unwrap_or_default();
            // A successful check takes the bot's one connection (§1.5): say so before it does.
            ui.show(Shown::Line(format!(
                "Checking by connecting once as the bot; a running account of this bot stops \
                 meanwhile and starts again after this login (else `{}`).",
                input
                    .commands
                    .command(&format!("channel enable wecom {}", input.key.account))
            )));
            let verified = verify(&settings, bot_id.trim(), &secret).await?;
            if verified.owner == OwnerBy::Pairing {
                ui.show(Shown::Line(
                    "The owner pairs by sending the code shown below to the bot in a direct chat \
                     (never in a group)."
                        .to_string(),
                ));
            }
            Ok(Checked::Verified(verified))
        }
        .boxed()
    }
}

/// Checks `bot_id` and `secret` by subscribing once at the account's URL: what to store, and
/// whether the owner pairs. The error says what failed and what to do.
pub(super) async fn verify(
    settings: &WecomSettings,
    bot_id: &str,
    secret: &str,
) -> Result<Verified, String> {
    let url = url(settings);
    let creds = BotCredentials::new(bot_id, secret);
    let identity = scv_wecom::login::check(&Options::with_url(&url), &creds)
        .await
        .map_err(|e| match e {
            Error::CredentialsInvalid { code, .. } => format!(
                "WeCom refused the bot id or secret (errcode {code}): copy both again from the admin console (智能机器人 → API mode → long connection); the bot must be published and you in its visible range"
            ),
            Error::Invalid(why) => why,
            other => format!(
                "{other} (asked {url}): check this machine's network and any proxy, then log in again"
            ),
        })?;
    let entry = Credentials::default()
        .with(BOT_ID_FIELD, &identity.bot_id)
        .with(SECRET_FIELD, secret);
    Ok(Verified {
        entry,
        said: format!("WeCom AI bot {}", identity.bot_id),
        owner: if settings
            .owner
            .as_deref()
            .is_some_and(|o| !o.trim().is_empty())
        {
            OwnerBy::Configured
        } else {
            OwnerBy::Pairing
        },
    })
}

/// The long-connection URL the account dials: the configured one, else WeCom's.
pub(super) fn url(settings: &WecomSettings) -> String {
    settings
        .url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| scv_wecom::limits::DEFAULT_WS_URL.to_string())
}

/// The account's WeCom settings (defaults when it is not configured yet).
pub(super) fn settings_of(settings: Option<&ChannelSettings>) -> WecomSettings {
    settings.map(WecomSettings::of).unwrap_or_default()
}
