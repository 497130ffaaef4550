//! Echo's login steps: a token asked without echo and checked with the server before anything
//! is stored. The owner then pairs with the one-time code (the port's pairing), unless the
//! configuration names them (`owner = "…"`).

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::EchoSettings;
use super::wire::whoami;
use crate::config::ChannelSettings;
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Verified,
};
use crate::secrets::Credentials;

/// The stored login's secret.
pub(super) const TOKEN_FIELD: &str = "echo_token";
/// The bot the token belongs to, for the same-bot check.
pub(super) const BOT_FIELD: &str = "echo_bot";

const TOKEN: Field = Field::asked(
    TOKEN_FIELD,
    "Echo token",
    "no token given: the Echo server's operator gives it",
)
.secret();

/// Echo's login.
pub(super) struct EchoLogin;

impl LoginFlow for EchoLogin {
    fn fields(&self, _input: &LoginInput<'_>) -> Vec<Field> {
        vec![TOKEN]
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        _ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        async move {
            let settings = settings_of(input.settings);
            let address = address(&settings);
            let token = answers.get(TOKEN_FIELD).cloned().unwrap_or_default();
            let bot = whoami(&address, &token)
                .await
                .map_err(|e| format!("{e}; check the token and `address` (asked {address})"))?;
            Ok(Checked::Verified(Verified {
                entry: Credentials::default()
                    .with(TOKEN_FIELD, &token)
                    .with(BOT_FIELD, &bot),
                said: format!("Echo bot {bot}"),
                owner: if settings.owner.is_some() {
                    OwnerBy::Configured
                } else {
                    OwnerBy::Pairing
                },
            }))
        }
        .boxed()
    }
}

/// The server the account talks to.
pub(super) fn address(settings: &EchoSettings) -> String {
    settings.address.clone().unwrap_or_default()
}

/// The account's Echo settings (defaults when it is not configured yet).
fn settings_of(settings: Option<&ChannelSettings>) -> EchoSettings {
    settings.map(EchoSettings::of).unwrap_or_default()
}
