//! `scv-bridge login wechat ACCOUNT [--base-url URL]`: the QR login, shown in the terminal.
//!
//! The scanner becomes the account's owner. Credentials (bot token, bot id, base URL, owner id)
//! are saved as one entry, replacing an earlier login as a whole; the running daemon is then
//! told to reload, which restarts only this account (its credentials' fingerprint changed).
//! The account's component never writes credentials, so a task stopping after this login
//! cannot put the old token back.

use std::io::Write;

use scv_wechat::login::{LoginEvent, LoginOptions, LoginOutcome, LoginUi, run_login};
use scv_wechat::types::DEFAULT_BASE_URL;
use scv_wechat::{BotToken, Client, LoginCredentials, render_qr_terminal};

use crate::config::{AccountKey, Channel, ChannelSettings, Config};
use crate::secrets::Credentials;

/// Runs the login flow for `account` in the terminal; the error is for people.
pub async fn run(config: &Config, account: &str, args: &super::LoginArgs) -> Result<(), String> {
    let mut ui = TerminalUi;
    let line = run_with(config, account, args, &LoginOptions::default(), &mut ui).await?;
    println!("{line}");
    Ok(())
}

/// The login flow with any user interface (the terminal, or a test's script).
///
/// Returns the closing line for people: saved, and whether the daemon picked it up.
pub async fn run_with(
    config: &Config,
    account: &str,
    args: &super::LoginArgs,
    options: &LoginOptions,
    ui: &mut (impl LoginUi + Send),
) -> Result<String, String> {
    let key = AccountKey::parse(&format!("wechat:{account}")).ok_or_else(|| {
        format!("expected an account name of letters, digits, '-' or '_', found '{account}'")
    })?;
    let id = key.to_string();
    let store = super::credential_store(config).await?;
    let previous = {
        let (s, id) = (store.clone(), id.clone());
        tokio::task::spawn_blocking(move || s.load(&id))
            .await
            .map_err(|e| e.to_string())?
            .ok()
            .flatten()
    };
    // The stored token lets the server recognise a bot already bound to this client.
    let recent: Vec<BotToken> = previous
        .as_ref()
        .and_then(|c| c.get("bot_token"))
        .map(|t| BotToken::new(t.expose()))
        .into_iter()
        .collect();
    let base = base_url(config, &key, args);
    let client = Client::new(&base, None).map_err(|e| {
        format!("cannot log in against {base}: {e}; correct base_url in [wechat.{account}]")
    })?;
    let outcome = run_login(&client, &recent, options, ui)
        .await
        .map_err(|e| {
            format!(
                "the WeChat login against {base} failed: {e}; check this machine's network to that host, or correct base_url in [wechat.{account}] (or --base-url)"
            )
        })?;
    let creds = match outcome {
        LoginOutcome::Confirmed(c) => c,
        LoginOutcome::AlreadyBound if previous.is_some() => {
            return Ok(format!(
                "{id} is already bound to this bridge; the stored login is kept"
            ));
        }
        LoginOutcome::AlreadyBound => {
            return Err(format!(
                "WeChat says this bot is already bound, but {id} has no stored login; log in again with another bot"
            ));
        }
    };
    let owner = creds.owner_user_id.clone();
    let (s, id2, entry) = (store.clone(), id.clone(), credentials(&creds));
    tokio::task::spawn_blocking(move || s.save(&id2, &entry))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot save the login: {e}"))?;
    let mut lines = vec![format!(
        "logged in: {id} is bot {}{}",
        creds.bot_id,
        match &owner {
            Some(o) => format!(", owner {o}"),
            None => ", no owner reported (nobody is the owner)".to_string(),
        }
    )];
    if !config
        .accounts
        .keys()
        .any(|k| k.channel == Channel::Wechat && k.account == account)
    {
        lines.push(format!(
            "note: [wechat.{account}] is not in {}; add it so the daemon runs this account",
            config.path.display()
        ));
    }
    lines.push(super::notify_daemon(config).await);
    Ok(lines.join("\n"))
}

/// Where to log in: `--base-url`, else the account's configured `base_url` (the host its
/// daemon polls, so the fix `status` prints logs in where the account lives), else iLink's.
fn base_url(config: &Config, key: &AccountKey, args: &super::LoginArgs) -> String {
    let configured = config
        .accounts
        .get(key)
        .and_then(|spec| match &spec.settings {
            ChannelSettings::Wechat(w) => w.base_url.clone(),
            _ => None,
        });
    args.base_url
        .clone()
        .or(configured)
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
}

/// The credential entry of a login: every field, saved as one (a second login replaces it).
fn credentials(c: &LoginCredentials) -> Credentials {
    let mut entry = Credentials::default()
        .with("bot_token", c.bot_token.expose())
        .with("bot_id", c.bot_id.as_str())
        .with("base_url", c.base_url());
    if let Some(o) = &c.owner_user_id {
        entry = entry.with("owner_id", o.as_str());
    }
    entry
}

/// Shows the login in the terminal: the QR code as half blocks plus its URL, and each status.
struct TerminalUi;

impl LoginUi for TerminalUi {
    fn event(&mut self, event: LoginEvent) {
        let mut out = std::io::stdout().lock();
        let _ = match event {
            LoginEvent::ShowQr {
                image_url,
                number,
                of,
            } => {
                let art = render_qr_terminal(&image_url, true).unwrap_or_default();
                writeln!(
                    out,
                    "\nScan with WeChat (code {number} of {of}):\n{art}\nor open: {image_url}"
                )
            }
            LoginEvent::Waiting => writeln!(out, "waiting for a scan..."),
            LoginEvent::Scanned => writeln!(out, "scanned; confirm the login on your phone"),
            LoginEvent::Expired => writeln!(out, "the code expired"),
            LoginEvent::VerifyCodeBlocked => {
                writeln!(
                    out,
                    "too many wrong verification codes; this code is blocked"
                )
            }
            LoginEvent::Redirected { .. } => writeln!(out, "moved to another login server"),
            LoginEvent::WrongVerifyCode => writeln!(out, "that verification code was wrong"),
        };
        let _ = out.flush();
    }

    async fn verify_code(&mut self) -> Option<String> {
        print!("enter the digits shown on your phone: ");
        let _ = std::io::stdout().flush();
        tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).ok()?;
            let code = line.trim().to_string();
            (!code.is_empty()).then_some(code)
        })
        .await
        .ok()
        .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_has_every_field_and_prints_none() {
        let c = LoginCredentials {
            bot_token: BotToken::new("secret-token"),
            bot_id: "b@im.bot".into(),
            base_url: None,
            owner_user_id: Some("o@im.wechat".into()),
        };
        let e = credentials(&c);
        let get = |n: &str| e.get(n).map(|s| s.expose().to_string());
        assert_eq!(get("bot_token").as_deref(), Some("secret-token"));
        assert_eq!(get("bot_id").as_deref(), Some("b@im.bot"));
        assert_eq!(get("base_url").as_deref(), Some(DEFAULT_BASE_URL));
        assert_eq!(get("owner_id").as_deref(), Some("o@im.wechat"));
        assert!(!format!("{e:?}").contains("secret-token"));
    }
}
