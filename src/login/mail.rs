//! `scv-bridge login mail ACCOUNT`: read the password (prompted without echo on a terminal, or
//! one line from stdin), check it by logging in to IMAP when the account is configured, store it.

use std::io::{BufRead, IsTerminal, Write};

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
        match scv_mail::ImapSession::connect(&imap).await {
            Ok(session) => session.logout().await,
            Err(e) => match e.classify() {
                scv_mail::ErrorClass::Fatal { auth: true } => {
                    return Err(format!("{key}: the mail server rejected the password"));
                }
                _ => {
                    eprintln!("warning: could not check the password now ({e}); storing it anyway")
                }
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

/// Prompts on a terminal (echo off), or reads one line from stdin when piped.
fn read_password() -> Result<String, String> {
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    if tty {
        eprint!("Mail password (or app password): ");
        let _ = std::io::stderr().flush();
    }
    let _echo = tty.then(EchoOff::new);
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the password: {e}"))?;
    if tty {
        eprintln!();
    }
    let password = line.trim_end_matches(['\r', '\n']).to_string();
    if password.is_empty() {
        return Err("no password given".to_string());
    }
    Ok(password)
}

/// Turns terminal echo off until dropped.
struct EchoOff(Option<libc::termios>);

impl EchoOff {
    fn new() -> Self {
        // SAFETY: tcgetattr/tcsetattr on stdin with a zeroed, then filled, termios we own.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return EchoOff(None);
            }
            let old = t;
            t.c_lflag &= !libc::ECHO;
            libc::tcsetattr(0, libc::TCSANOW, &t);
            EchoOff(Some(old))
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: restores the settings read in `new`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, old);
            }
        }
    }
}
