//! `scv-bridge login mail ACCOUNT`: read the password (prompted without echo on a terminal, or
//! one line from stdin), check it by logging in to IMAP when the account is configured, store it.

use crate::config::{AccountKey, Channel, ChannelSettings, Config};
use crate::secrets::Credentials;

/// Runs the login flow for `account`; the error is for people.
pub async fn run(config: &Config, account: &str, _args: &super::LoginArgs) -> Result<(), String> {
    let key = AccountKey::new(Channel::Mail, account);
    let settings = config.accounts.get(&key).and_then(|a| match &a.settings {
        ChannelSettings::Mail(m) => Some(m.clone()),
        _ => None,
    });
    let password = tokio::task::spawn_blocking(read_password)
        .await
        .map_err(|e| e.to_string())??;
    if let Some(s) = &settings {
        let imap = crate::mail::imap_settings(s, scv_mail::Password::new(&password));
        let server = format!("IMAP {}:{}", imap.host, imap.port);
        let again = crate::config::CommandLine::for_config(&config.path)
            .command(&format!("login mail {account}"));
        match scv_mail::ImapSession::connect(&imap).await {
            Ok(session) => session.logout().await,
            Err(e) => match e.classify() {
                scv_mail::ErrorClass::Fatal { auth: true } => {
                    return Err(format!(
                        "{key}: {server} rejected the login for {}: run `{again}` with the right password (or an app password, for a provider with two-step sign-in)",
                        s.username
                    ));
                }
                _ => eprintln!(
                    "warning: {key}: cannot check the password at {server} now ({e}); storing it anyway. Check imap_host, imap_port, tls and tls_ca under [mail.{account}], then `{}`",
                    crate::config::CommandLine::for_config(&config.path).command("doctor")
                ),
            },
        }
    } else {
        eprintln!("note: [mail.{account}] is not configured yet; storing the password unchecked");
    }
    let store = super::credential_store(config).await?;
    let creds = Credentials::default().with("password", password);
    let id = key.to_string();
    tokio::task::spawn_blocking(move || store.save(&id, &creds))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    println!(
        "{key}: password stored; {}",
        super::notify_daemon(config).await
    );
    Ok(())
}

/// The password: a no-echo prompt on a terminal, or one line from stdin when piped.
fn read_password() -> Result<String, String> {
    super::prompt::password("Mail password (or app password)")
}
