//! The bot token, wrapped so it never reaches a log by accident.

use std::fmt;

/// A bot token from BotFather (`<bot id>:<secret>`, spec §1.1). Made by
/// [`BotToken::parse`] from what the owner pasted at `login telegram`; `Debug` and `Display`
/// print `[redacted]`. Every request URL carries it, so the client never logs a URL either.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BotToken(String);

/// Why a pasted token cannot be a bot token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenFormatError {
    /// Nothing was pasted.
    #[error("the bot token is empty: paste the token BotFather gave you")]
    Empty,
    /// Not `<digits>:<secret>` with URL-safe characters.
    #[error(
        "this is not a bot token: BotFather's token looks like 123456789:AAE... (digits, a colon, letters)"
    )]
    Shape,
}

impl BotToken {
    /// Checks the shape and wraps a pasted token (surrounding whitespace dropped). The token
    /// goes into every URL path, so anything but `[0-9]+:[A-Za-z0-9_-]+` is refused here rather
    /// than producing a request to some other path.
    pub fn parse(raw: &str) -> Result<BotToken, TokenFormatError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(TokenFormatError::Empty);
        }
        let (id, secret) = raw.split_once(':').ok_or(TokenFormatError::Shape)?;
        let id_ok = !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit());
        let secret_ok = !secret.is_empty()
            && secret.len() <= 256
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if id_ok && secret_ok {
            Ok(BotToken(raw.to_owned()))
        } else {
            Err(TokenFormatError::Shape)
        }
    }

    /// The bot's user id, the number before the colon (also `getMe.id`, spec §3).
    pub fn bot_id(&self) -> Option<i64> {
        self.0.split_once(':').and_then(|(id, _)| id.parse().ok())
    }

    /// The raw token. Keep it out of logs; only the URL builder and the credential store use it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BotToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BotToken([redacted])")
    }
}

impl fmt::Display for BotToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_never_prints_and_its_shape_is_checked() {
        let t = BotToken::parse(" 123456:AAE-secret_x \n").expect("valid");
        assert_eq!(t.expose(), "123456:AAE-secret_x");
        assert_eq!(t.bot_id(), Some(123456));
        assert_eq!(format!("{t}"), "[redacted]");
        assert!(!format!("{t:?}").contains("secret"));
        assert!(!format!("{:?}", Some(t)).contains("secret"));
        assert_eq!(BotToken::parse("  "), Err(TokenFormatError::Empty));
        for bad in ["abc", "12:", ":x", "12:a/b", "12:a?b", "x1:abc", "12:a b"] {
            assert_eq!(BotToken::parse(bad), Err(TokenFormatError::Shape), "{bad}");
        }
    }
}
