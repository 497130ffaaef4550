//! The check `login telegram` runs before storing a token: the token's shape, then `getMe`.

use crate::client::Client;
use crate::error::Error;
use crate::token::{BotToken, TokenFormatError};
use crate::types::BotInfo;

/// Why a pasted token was not stored. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The paste is not a token.
    #[error(transparent)]
    Format(#[from] TokenFormatError),
    /// Telegram does not know this token (401/404): mistyped or revoked.
    #[error(
        "Telegram refused this token (revoked or mistyped): copy it again from @BotFather (/mybots → API Token)"
    )]
    Refused,
    /// `getMe` answered, but for something that is not a bot, or a different bot than the
    /// token's number (a proxy answering for another token).
    #[error("Telegram's answer does not belong to this bot token: check the configured base URL")]
    NotThisBot,
    /// Telegram could not be asked (network, 5xx, 429): nothing was decided.
    #[error("could not reach Telegram to check the token: {0}; check the network and try again")]
    Unreachable(Error),
}

/// Checks a pasted token against the server at `base_url` and returns it with the bot's
/// identity (store both: the id is the account's stable identity, the username is what group
/// messages mention).
pub async fn check_login(base_url: &str, raw: &str) -> Result<(BotToken, BotInfo), LoginError> {
    let token = BotToken::parse(raw)?;
    let client = Client::new(base_url, token.clone()).map_err(LoginError::Unreachable)?;
    let bot = match client.get_me().await {
        Ok(bot) => bot,
        Err(e) => {
            return Err(match e.class() {
                crate::ErrorClass::Fatal { relogin: true, .. } => LoginError::Refused,
                _ => LoginError::Unreachable(e),
            });
        }
    };
    if !bot.is_bot || token.bot_id() != Some(bot.id) {
        return Err(LoginError::NotThisBot);
    }
    Ok((token, bot))
}

/// The deep link that pairs the owner (spec §3): opening `https://t.me/<bot>?start=<code>` sends
/// `/start <code>` to the bot in a private chat, where [`crate::Message::command`] reads it.
/// `None` when the code is not 1–64 characters of `A-Za-z0-9_-` (the platform would drop it).
pub fn start_link(bot_username: &str, code: &str) -> Option<String> {
    let ok = !code.is_empty()
        && code.len() <= crate::limits::MAX_START_PAYLOAD
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let user_ok = !bot_username.is_empty()
        && bot_username
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    (ok && user_ok).then(|| format!("https://t.me/{bot_username}?start={code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_links_carry_only_payloads_the_platform_keeps() {
        assert_eq!(
            start_link("scv_bot", "AbC-12_x").as_deref(),
            Some("https://t.me/scv_bot?start=AbC-12_x")
        );
        assert_eq!(start_link("scv_bot", ""), None);
        assert_eq!(start_link("scv_bot", "a b"), None);
        assert_eq!(start_link("scv_bot", &"a".repeat(65)), None);
        assert_eq!(start_link("scv bot", "abc"), None);
    }
}
