//! Feishu's login steps: the app's ID and secret (and, in callback mode, the keys that sign
//! callbacks), verified by fetching a tenant token and the bot's info. With no app ID given, a
//! new app is created by scanning a QR code instead (`scan`), and its ID and secret are
//! verified and stored the same way. The owner then pairs with a one-time code sent to the bot
//! in a private chat, unless the configuration names them.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_feishu::registration::Brand;
use scv_feishu::{Client, ClientOptions, Domain, ErrorClass, classify};

use super::pending_owner;
use super::scan::{self, ACCOUNTS};
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

/// Optional: left empty, the login creates a new app by scanning (`scan`).
const APP_ID: Field = Field::asked(
    APP_ID_FIELD,
    "App ID (cli_…; leave empty to create a new app by scanning a QR code)",
    "",
)
.flag("app-id")
.optional();
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
        // The secret is asked in `verify`, only when an app ID was given.
        let mut fields = vec![APP_ID, ACCOUNTS];
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
        let unset = |f: &str| stored.get(f).is_none_or(|v| v.expose().is_empty());
        if unset(APP_ID_FIELD) || unset(APP_SECRET_FIELD) {
            return Some((
                format!("{} has no app ID and secret stored", input.key),
                format!("run `{login}`"),
            ));
        }
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
        ui: &'a mut dyn LoginUi,
    ) -> BoxFuture<'a, Result<Checked, String>> {
        async move {
            let settings = settings_of(input.settings);
            let mut answers = answers.clone();
            let configured = domain_of(&settings)?;
            let typed = answers.contains_key(APP_ID_FIELD);
            let mut candidate = None;
            let domain = match typed {
                true => {
                    let secret = ui.ask(&APP_SECRET).await?.trim().to_string();
                    if secret.is_empty() {
                        return Err(APP_SECRET.missing.to_string());
                    }
                    answers.insert(APP_SECRET_FIELD, secret);
                    configured.clone()
                }
                false => {
                    // The flag wins; else the table's host (a proxy, a test's fake).
                    if let Some(url) = settings.accounts_url.clone() {
                        answers.entry(scan::ACCOUNTS_FIELD).or_insert(url);
                    }
                    let created = scan::create_app(input, &answers, ui).await?;
                    answers.insert(APP_ID_FIELD, created.credentials.app_id.clone());
                    let secret = created.credentials.app_secret.expose().to_string();
                    answers.insert(APP_SECRET_FIELD, secret);
                    candidate = created.open_id;
                    scanned_domain(&configured, created.brand)
                }
            };
            let (mut verified, bot) =
                verify_app(&domain, &settings, &answers)
                    .await
                    .map_err(|e| match typed {
                        true => e,
                        // The platform hands the secret out once: say which app to look at.
                        false => scan::unverified(&e, &answers[APP_ID_FIELD], input),
                    })?;
            if !typed {
                scanned_notes(&mut verified, &domain, &configured, candidate, &bot, input);
            }
            let answers = &answers;
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
    let (verified, bot) = verify_app(&domain_of(settings)?, settings, &answers).await?;
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
    domain: &Domain,
    settings: &FeishuSettings,
    answers: &Answers,
) -> Result<(Verified, scv_feishu::rest::BotInfo), String> {
    let field = |f: &str| answers.get(f).cloned().unwrap_or_default();
    let (app_id, secret) = (field(APP_ID_FIELD), field(APP_SECRET_FIELD));
    let base = domain.base_url().to_string();
    let client = Client::new(ClientOptions::new(
        domain.clone(),
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

/// What a scanned login adds: the note to set `domain` when the app lives on the other brand's
/// platform, and the scanner as a pending owner where the owner pairs.
fn scanned_notes(
    verified: &mut Verified,
    domain: &Domain,
    configured: &Domain,
    candidate: Option<String>,
    bot: &scv_feishu::rest::BotInfo,
    input: &LoginInput<'_>,
) {
    if domain != configured {
        // The secret is handed out once: store the app, and say how to point the account at
        // the open platform it lives on.
        verified.said = format!(
            "{}; the app is on {}: set domain = \"{domain}\" in [feishu.{}] so the daemon reaches it",
            verified.said,
            domain.base_url(),
            input.key.account
        );
    }
    if verified.owner != OwnerBy::Pairing {
        return;
    }
    let entry = std::mem::take(&mut verified.entry);
    let now = crate::supervisor::unix_now();
    verified.entry = pending_owner::with_candidate(entry, candidate.as_deref(), &bot.open_id, now);
    if verified.entry.get(pending_owner::FIELD).is_some() {
        verified.said = format!(
            "{}; the Feishu account that scanned becomes the owner with its first private message to the bot (within 24 hours), or anyone with the code below",
            verified.said
        );
    }
}

/// The account's configured open platform (Feishu unless it says otherwise).
fn domain_of(settings: &FeishuSettings) -> Result<Domain, String> {
    settings
        .domain
        .as_deref()
        .unwrap_or("feishu")
        .parse()
        .map_err(|e: scv_feishu::domain::DomainError| e.to_string())
}

/// Where a scanned app lives: the scanner's tenant brand picks Feishu or Lark (A1.6); a base
/// URL (a proxy, a test's fake) is kept as configured.
fn scanned_domain(configured: &Domain, brand: Brand) -> Domain {
    match (configured, brand) {
        (Domain::Custom(_), _) => configured.clone(),
        (Domain::Feishu | Domain::Lark, Brand::Feishu) => Domain::Feishu,
        (Domain::Feishu | Domain::Lark, Brand::Lark) => Domain::Lark,
    }
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
