//! `scv-bridge login feishu ACCOUNT [--app-id ID]`: verify the app's credentials (token and bot
//! info), store them, and start pairing the owner with a one-time code.
//!
//! The code is stored with the credentials (valid 10 minutes); the running daemon picks it up
//! on reload, and the first person who sends exactly that code to the bot in a private chat
//! becomes the owner. With `owner = ...` in the configuration there is nothing to pair.

use std::time::Duration;

use scv_feishu::{Client, ClientOptions, Domain, ErrorClass, classify};

use crate::adapters::feishu::pairing::{
    CODE_FIELD, CODE_TTL_SECS, EXPIRES_FIELD, OWNER_FIELD, new_code,
};
use crate::adapters::feishu::{ENCRYPT_KEY_FIELD, TOKEN_FIELD};
use crate::config::{
    AccountKey, Channel, ChannelSettings, Config, FeishuMode, FeishuSettings, valid_account_name,
};
use crate::secrets::{CredentialStore, Credentials};
use crate::supervisor::unix_now;

/// How often the command looks whether the code was used.
const PAIRING_POLL: Duration = Duration::from_secs(2);

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

/// Runs the login flow for `account`; the error is for people.
pub async fn run(config: &Config, account: &str, args: &super::LoginArgs) -> Result<(), String> {
    if !valid_account_name(account) {
        return Err(format!("'{account}' is not a valid account name"));
    }
    let key = AccountKey::new(Channel::Feishu, account);
    let settings = settings_of(config, &key);
    eprintln!("{}", guide_line());
    let app_id = match &args.app_id {
        Some(id) => id.trim().to_string(),
        None => read_line("App ID (cli_…)", false).await?,
    };
    let secret = read_line("App secret", true).await?;
    if app_id.is_empty() || secret.is_empty() {
        return Err("the app ID and secret must not be empty".into());
    }
    let callbacks = if settings.mode == FeishuMode::Webhook {
        let key = read_line(
            "Encrypt Key (Events & Callbacks > Encryption Strategy)",
            true,
        )
        .await?;
        if key.is_empty() {
            return Err(
                "callback mode needs the Encrypt Key, so that callbacks are signed; set one in the Feishu console".into(),
            );
        }
        let token = read_line("Verification Token (empty to skip)", true).await?;
        Some((key, token))
    } else {
        None
    };
    let store = super::credential_store(config).await?;
    let out = store_credentials(&store, &key, &settings, &app_id, &secret, unix_now()).await?;
    if let Some((encrypt_key, token)) = callbacks {
        store_callback_secrets(&store, &key, &encrypt_key, &token).await?;
    }
    println!(
        "Verified: bot \"{}\" ({}); credentials stored for {key}.",
        out.bot_name, out.bot_open_id
    );
    let (daemon, line) = super::tell_daemon(config).await;
    println!("{line}");
    let Some(code) = out.code else {
        println!("The owner comes from `owner` in the configuration; nothing to pair.");
        return Ok(());
    };
    println!(
        "\nTo become the owner, send this code to the bot in a private chat within {} minutes:\n\n    {code}\n",
        CODE_TTL_SECS / 60
    );
    if let Some(o) = &out.previous_owner {
        println!("The current owner ({o}) stays the owner until someone pairs with this code.");
    }
    if !daemon {
        // Only a running daemon receives what is sent to the bot: waiting here would wait for
        // a code nobody can receive. The daemon reads the stored code when it starts.
        println!(
            "Start the daemon first (`{}`, or the user service): only a running daemon receives the code. Then send it to the bot; `{}` shows the owner once paired.",
            crate::config::CommandLine::for_config(&config.path).command("run"),
            crate::config::CommandLine::for_config(&config.path).command("status"),
        );
        return Ok(());
    }
    println!("Waiting for it (Ctrl-C stops waiting; the code stays valid).");
    match wait_for_pairing(&store, &key).await {
        Some(owner) => {
            println!("Paired: {owner} is the owner of {key}.");
            Ok(())
        }
        None => Err(format!(
            "the code expired unused; run `{}` again",
            crate::config::CommandLine::for_config(&config.path)
                .command(&format!("login feishu {account}"))
        )),
    }
}

/// Verifies the credentials against the platform and stores them with a fresh pairing code.
pub async fn store_credentials(
    store: &CredentialStore,
    key: &AccountKey,
    settings: &FeishuSettings,
    app_id: &str,
    app_secret: &str,
    now_unix: u64,
) -> Result<LoginOutcome, String> {
    let domain: Domain = settings
        .domain
        .as_deref()
        .unwrap_or("feishu")
        .parse()
        .map_err(|e: scv_feishu::domain::DomainError| e.to_string())?;
    let base = domain.base_url().to_string();
    let client = Client::new(ClientOptions::new(
        domain,
        scv_feishu::Credentials::new(app_id, app_secret),
    ))
    .map_err(|e| explain(&e, &base))?;
    client
        .tenant_token()
        .await
        .map_err(|e| explain(&e, &base))?;
    let bot = client.bot_info().await.map_err(|e| explain(&e, &base))?;

    let previous = load(store, key).await?;
    let previous_owner = previous
        .as_ref()
        .and_then(|c| c.get(OWNER_FIELD))
        .map(|s| s.expose().to_string());
    let mut creds = Credentials::default()
        .with("app_id", app_id)
        .with("app_secret", app_secret);
    if let Some(o) = &previous_owner {
        creds = creds.with(OWNER_FIELD, o);
    }
    let configured_owner = settings
        .owner
        .as_deref()
        .is_some_and(|o| !o.trim().is_empty());
    let code = if configured_owner {
        None
    } else {
        let c = new_code();
        creds = creds
            .with(CODE_FIELD, &c)
            .with(EXPIRES_FIELD, (now_unix + CODE_TTL_SECS).to_string());
        Some(c)
    };
    let (s, id) = (store.clone(), key.to_string());
    tokio::task::spawn_blocking(move || s.save(&id, &creds))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot store the credentials: {e}"))?;
    Ok(LoginOutcome {
        bot_open_id: bot.open_id,
        bot_name: bot.app_name,
        code,
        previous_owner,
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

/// The account's Feishu settings (defaults when it is not configured yet).
fn settings_of(config: &Config, key: &AccountKey) -> FeishuSettings {
    match config.accounts.get(key).map(|s| &s.settings) {
        Some(ChannelSettings::Feishu(f)) => f.clone(),
        _ => FeishuSettings::default(),
    }
}

/// Where the app's console set-up is explained (the guide is built into the binary).
pub fn guide_line() -> String {
    "The Feishu app (bot capability, scopes, events over the long connection, card callbacks, a \
     published version) is set up as `scv-bridge guide` explains (docs/setup.md; \
     `scv-bridge guide --lang zh-CN` in Chinese)."
        .to_string()
}

/// A failure in words a person can act on.
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

async fn load(store: &CredentialStore, key: &AccountKey) -> Result<Option<Credentials>, String> {
    let (s, id) = (store.clone(), key.to_string());
    tokio::task::spawn_blocking(move || s.load(&id))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Waits until the code was used (the owner it paired) or expired (`None`).
async fn wait_for_pairing(store: &CredentialStore, key: &AccountKey) -> Option<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(CODE_TTL_SECS);
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(PAIRING_POLL).await;
        let Ok(Some(c)) = load(store, key).await else {
            continue;
        };
        // The daemon drops the code when it pairs someone (possibly the previous owner again).
        let owner = c.get(OWNER_FIELD).map(|s| s.expose().to_string());
        if c.get(CODE_FIELD).is_none() && owner.is_some() {
            return owner;
        }
    }
    None
}

/// One answer, trimmed: a prompt on a terminal (`hidden`: echo off), else a line of stdin.
async fn read_line(prompt: &'static str, hidden: bool) -> Result<String, String> {
    tokio::task::spawn_blocking(move || {
        super::prompt::line(prompt, hidden).map(|l| l.trim().to_string())
    })
    .await
    .map_err(|e| e.to_string())?
}
