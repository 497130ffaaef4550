//! Secrets handed out by the platform, wrapped so they never reach a log by accident.

use std::fmt;

/// A bot token (`bot_token` from QR login). `Debug` and `Display` print `[redacted]`; call
/// [`BotToken::expose`] where the raw value is really needed (the `Authorization` header, the
/// credential store).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BotToken(String);

impl BotToken {
    /// Wraps a raw token, trimming surrounding whitespace as the plugin does.
    pub fn new(raw: impl Into<String>) -> Self {
        let raw = raw.into();
        let trimmed = raw.trim();
        if trimmed.len() == raw.len() {
            BotToken(raw)
        } else {
            BotToken(trimmed.to_owned())
        }
    }

    /// The raw token. Keep it out of logs.
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
    fn token_never_prints() {
        let t = BotToken::new("  abc@im.bot:secret \n");
        assert_eq!(t.expose(), "abc@im.bot:secret");
        assert_eq!(format!("{t}"), "[redacted]");
        assert!(!format!("{t:?}").contains("secret"));
        assert!(!format!("{:?}", Some(t)).contains("secret"));
    }
}
