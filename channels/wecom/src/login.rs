//! The credential check `login wecom ACCOUNT` runs before storing anything (§1.3): dial,
//! subscribe once, close. There is no token exchange and no identity call; a successful
//! subscribe is the proof, and the bot id is the identity.

use crate::classify::ErrorClass;
use crate::connection::Options;
use crate::error::Error;
use crate::secret::Credentials;

/// Who the credentials belong to. WeCom returns nothing about the bot on subscribe, so the
/// identity is the bot id the console showed (callbacks carry it as `aibotid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    /// The bot id, verbatim (case-sensitive).
    pub bot_id: String,
}

/// Checks `creds` against the platform by subscribing once, then closes the socket.
///
/// Beware: a successful subscribe takes the bot's one connection (§1.5), so a running account
/// of the same bot receives `disconnected_event` and stops as superseded. The login step
/// should say so, and re-enable the account afterwards.
///
/// Errors: refused credentials are [`Error::CredentialsInvalid`] (fatal, re-login); a rate
/// limit is a slow down; anything else is transient (try again).
pub async fn check(options: &Options, creds: &Credentials) -> Result<BotIdentity, Error> {
    if creds.bot_id.is_empty() || creds.secret.expose().is_empty() {
        return Err(Error::Invalid(
            "the bot id and the secret are both needed".into(),
        ));
    }
    let conn = crate::connection::Connection::new(creds.clone(), options.clone());
    let mut socket =
        crate::connection::dial_for_login(&options.url, options.max_frame_bytes).await?;
    let result = crate::connection::subscribe_for_login(&mut socket, &conn).await;
    let _ = futures_util::SinkExt::close(&mut socket).await;
    match result {
        Ok(()) => Ok(BotIdentity {
            bot_id: creds.bot_id.clone(),
        }),
        Err(e @ Error::Platform { code, .. }) => match e.class() {
            ErrorClass::Fatal { .. } => Err(Error::CredentialsInvalid {
                code,
                errmsg: e.to_string(),
            }),
            _ => Err(e),
        },
        Err(e) => Err(e),
    }
}
