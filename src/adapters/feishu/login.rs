//! Feishu's login steps: the app's ID and secret (and, in callback mode, the keys that sign
//! callbacks), verified by fetching a tenant token and the bot's info. The owner then pairs with
//! a one-time code sent to the bot in a private chat, unless the configuration names them.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_feishu::{Client, ClientOptions, Domain, ErrorClass, classify};

use super::{ENCRYPT_KEY_FIELD, TOKEN_FIELD};
use super::{FeishuMode, FeishuSettings};
use crate::config::{AccountKey, ChannelSettings};
use crate::port::login_flow::{
    Answers, Checked, Field, LoginFlow, LoginInput, LoginUi, OwnerBy, Verified,
};
use crate::port::login_store::{load, store_verified};
use crate::secrets::{CredentialStore, Credentials};

/// The stored login's field naming the app (the same-bot check reads it).
pub(crate) const APP_ID_FIELD: &str = "app_id";
/// The stored login's secret.
pub(super) const APP_SECRET_FIELD: &str = "app_secret";

const APP_ID: Field = Field::asked(
    APP_ID_FIELD,
    "App ID (cli_…)",
    "no app ID given: it is on the app's page in the Feishu developer console (cli_…)",
)
.flag("app-id");
const APP_SECRET: Field = Field::asked(
    APP_SECRET_FIELD,
    "App secret",
    "no app secret given: it is on the app's page in the Feishu developer console",
)
.secret();
const ENCRYPT_KEY: Field = Field::asked(
    ENCRYPT_KEY_FIELD,
    "Encrypt Key (Events & Callbacks > Encryption Strategy)",
    "callback mode needs the Encrypt Key, so that callbacks are signed; set one in the Feishu console",
)
.secret();
const VERIFICATION_TOKEN: Field =
    Field::asked(TOKEN_FIELD, "Verification Token (empty to skip)", "")
        .secret()
        .optional();

/// What a successful login stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOutcome {
    /// The bot's open_id.
    pub bot_open_id: String,
    /// The app's name.
    pub bot_name: String,
    /// The pairing code to send to the bot, unless the configuration names the owner.
    pub code: Option<String>,
    /// The owner already stored (kept until someone pairs with the new code).
    pub previous_owner: Option<String>,
}

/// Feishu's login.
pub(super) struct FeishuLogin;

impl LoginFlow for FeishuLogin {
    fn intro(&self) -> Option<String> {
        Some(guide_line())
    }

    fn fields(&self, input: &LoginInput<'_>) -> Vec<Field> {
        let mut fields = vec![APP_ID, APP_SECRET];
        if settings_of(input.settings).mode == FeishuMode::Webhook {
            fields.extend([ENCRYPT_KEY, VERIFICATION_TOKEN]);
        }
        fields
    }

    /// Callback mode refuses to start without the key that signs callbacks.
    fn lacks(
        &self,
        input: &LoginInput<'_>,
        stored: &Credentials,
        login: &str,
    ) -> Option<(String, String)> {
        let callbacks = settings_of(input.settings).mode == FeishuMode::Webhook;
        let key = stored.get(ENCRYPT_KEY_FIELD);
        (callbacks && key.is_none_or(|k| k.expose().is_empty())).then(|| {
            (
                format!(
                    "{} is in callback mode but has no Encrypt Key stored",
                    input.key
                ),
                format!("set an Encrypt Key in the Feishu console, then run `{login}`"),
            )
        })
    }

    fn verify<'a>(
        &'a self,
        input: &'a LoginInput<'a>,
        answers: &'a Answers,
        _ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        async move {
            let (mut verified, _) = verify_app(&settings_of(input.settings), answers).await?;
            for field in [ENCRYPT_KEY_FIELD, TOKEN_FIELD] {
                if let Some(v) = answers.get(field) {
                    verified.entry = verified.entry.with(field, v);
                }
            }
            Ok(Checked::Verified(verified))
        }
        .boxed()
    }
}

/// Verifies the app's ID and secret and stores them with a fresh pairing code (tests and
/// scripts that log in without a terminal).
pub async fn store_credentials(
    store: &CredentialStore,
    key: &AccountKey,
    settings: &FeishuSettings,
    app_id: &str,
    app_secret: &str,
    now_unix: u64,
) -> Result<LoginOutcome, String> {
    let answers = Answers::from([
        (APP_ID_FIELD, app_id.to_string()),
        (APP_SECRET_FIELD, app_secret.to_string()),
    ]);
    let (verified, bot) = verify_app(settings, &answers).await?;
    let stored = store_verified(store, key, verified, now_unix).await?;
    Ok(LoginOutcome {
        bot_open_id: bot.open_id,
        bot_name: bot.app_name,
        code: stored.code,
        previous_owner: stored.previous_owner,
    })
}

/// Adds the callback mode's Encrypt Key and Verification Token to the stored credentials.
pub async fn store_callback_secrets(
    store: &CredentialStore,
    key: &AccountKey,
    encrypt_key: &str,
    token: &str,
) -> Result<(), String> {
    let mut creds = load(store, key)
        .await?
        .ok_or_else(|| format!("no credentials stored for {key}"))?
        .with(ENCRYPT_KEY_FIELD, encrypt_key);
    if !token.is_empty() {
        creds = creds.with(TOKEN_FIELD, token);
    }
    let (s, id) = (store.clone(), key.to_string());
    tokio::task::spawn_blocking(move || s.save(&id, &creds))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot store the callback secrets: {e}"))
}

/// The token and the bot's info for the answered app: what to store, and who the bot is.
async fn verify_app(
    settings: &FeishuSettings,
    answers: &Answers,
) -> Result<(Verified, scv_feishu::rest::BotInfo), String> {
    let field = |f: &str| answers.get(f).cloned().unwrap_or_default();
    let (app_id, secret) = (field(APP_ID_FIELD), field(APP_SECRET_FIELD));
    let domain: Domain = settings
        .domain
        .as_deref()
        .unwrap_or("feishu")
        .parse()
        .map_err(|e: scv_feishu::domain::DomainError| e.to_string())?;
    let base = domain.base_url().to_string();
    let client = Client::new(ClientOptions::new(
        domain,
        scv_feishu::Credentials::new(app_id.as_str(), secret.as_str()),
    ))
    .map_err(|e| explain(&e, &base))?;
    client
        .tenant_token()
        .await
        .map_err(|e| explain(&e, &base))?;
    let bot = client.bot_info().await.map_err(|e| explain(&e, &base))?;
    let configured_owner = settings
        .owner
        .as_deref()
        .is_some_and(|o| !o.trim().is_empty());
    let verified = Verified {
        entry: Credentials::default()
            .with(APP_ID_FIELD, app_id)
            .with(APP_SECRET_FIELD, secret),
        said: format!("bot \"{}\" ({})", bot.app_name, bot.open_id),
        owner: if configured_owner {
            OwnerBy::Configured
        } else {
            OwnerBy::Pairing
        },
    };
    Ok((verified, bot))
}

/// The account's Feishu settings (defaults when it is not configured yet).
fn settings_of(settings: Option<&ChannelSettings>) -> FeishuSettings {
    settings.map(FeishuSettings::of).unwrap_or_default()
}

/// Where the app's console set-up is explained (the guide is built into the binary).
pub fn guide_line() -> String {
    "The Feishu app (bot capability, scopes, events over the long connection, card callbacks, a \
     published version) is set up as `scv-bridge guide` explains (docs/setup.md; \
     `scv-bridge guide --lang zh-CN` in Chinese)."
        .to_string()
}

/// A failed verification, naming the host asked (`base`) and what to do.
fn explain(e: &scv_feishu::Error, base: &str) -> String {
    match classify(e) {
        ErrorClass::Fatal { reason } => format!(
            "{base}: {}: {e}; the app's set-up: `scv-bridge guide`",
            reason.hint()
        ),
        _ => format!(
            "cannot verify the credentials at {base} now ({e}): check the network and any proxy, and the account's domain (feishu for open.feishu.cn, lark for open.larksuite.com), then log in again"
        ),
    }
}
