//! Telegram's login steps: the bot token from @BotFather, asked without echo and checked with
//! `getMe` before anything is stored. The owner then pairs by sending the one-time code to the
//! bot in a private chat (the port's pairing), unless the configuration names them
//! (`owner = <user id>`).

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_telegram::login::{LoginError, check_login};

use super::TelegramSettings;
use crate::config::ChannelSettings;
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Shown, Verified,
};
use crate::secrets::Credentials;

/// The stored login's secret: the bot token.
pub(super) const TOKEN_FIELD: &str = "bot_token";
/// The bot's numeric id (the number before `:` in the token), for the same-bot check and the
/// stored offset's tag.
pub(crate) const BOT_ID_FIELD: &str = "bot_id";
/// The bot's username, for `@mention` and `/command@bot` matching and the pairing link.
pub(super) const USERNAME_FIELD: &str = "bot_username";

const TOKEN: Field = Field::asked(
    TOKEN_FIELD,
    "Bot token from @BotFather (123456:ABC…)",
    "no bot token given: @BotFather gives it when you create the bot (/newbot), or under /mybots → API Token",
)
.secret();

/// Telegram's login.
pub(super) struct TelegramLogin;

impl LoginFlow for TelegramLogin {
    fn intro(&self) -> Option<String> {
        Some(
            "Create the bot with @BotFather (/newbot) and paste its token; `scv-bridge guide` \
             explains the steps and privacy mode in groups (`scv-bridge guide --lang zh-CN` in \
             Chinese)."
                .to_string(),
        )
    }

    fn fields(&self, _input: &LoginInput<'_>) -> Vec<Field> {
        vec![TOKEN]
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        async move {
            let settings = settings_of(input.settings);
            let raw = answers.get(TOKEN_FIELD).cloned().unwrap_or_default();
            let verified = verify_token(&settings, &raw).await?;
            if verified.owner == OwnerBy::Pairing
                && let Some(user) = verified.entry.get(USERNAME_FIELD)
            {
                ui.show(Shown::Line(format!(
                    "The owner pairs by sending the code shown below to @{} in a private chat.",
                    user.expose()
                )));
            }
            Ok(Checked::Verified(verified))
        }
        .boxed()
    }
}

/// Checks `raw` (a pasted token) with `getMe` at the account's base URL: what to store, and
/// whether the owner pairs. The error says what failed and what to do.
pub(super) async fn verify_token(
    settings: &TelegramSettings,
    raw: &str,
) -> Result<Verified, String> {
    let base = base_url(settings);
    let (token, bot) = check_login(&base, raw).await.map_err(|e| match e {
        LoginError::Unreachable(_) => format!("{e} (asked {base})"),
        _ => e.to_string(),
    })?;
    let entry = Credentials::default()
        .with(TOKEN_FIELD, token.expose())
        .with(BOT_ID_FIELD, bot.id.to_string())
        .with(USERNAME_FIELD, &bot.username);
    Ok(Verified {
        entry,
        said: format!("bot @{} ({})", bot.username, bot.id),
        owner: if settings.owner.is_some() {
            OwnerBy::Configured
        } else {
            OwnerBy::Pairing
        },
    })
}

/// The Bot API base the account talks to: the configured one, else Telegram's.
pub(super) fn base_url(settings: &TelegramSettings) -> String {
    settings
        .base_url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| scv_telegram::DEFAULT_BASE_URL.to_string())
}

/// The account's Telegram settings (defaults when it is not configured yet).
pub(super) fn settings_of(settings: Option<&ChannelSettings>) -> TelegramSettings {
    settings.map(TelegramSettings::of).unwrap_or_default()
}
