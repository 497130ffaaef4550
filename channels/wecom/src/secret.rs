//! The bot's credentials, wrapped so the secret never reaches a log line or a `Debug` dump.

use std::fmt;

/// The AI bot's secret from the admin console (shown there only once).
///
/// `Debug` and `Display` print `[redacted]`; [`BotSecret::expose`] is called only where the
/// value goes on the wire (the subscribe frame) or into the credential store.
#[derive(Clone, PartialEq, Eq)]
pub struct BotSecret(String);

impl BotSecret {
    /// Wraps a raw secret, trimming the whitespace a paste often brings along.
    pub fn new(raw: impl Into<String>) -> Self {
        let raw = raw.into();
        match raw.trim() {
            t if t.len() == raw.len() => BotSecret(raw),
            t => BotSecret(t.to_owned()),
        }
    }

    /// The raw secret. Keep it out of logs.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BotSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BotSecret([redacted])")
    }
}

impl fmt::Display for BotSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// What `login wecom` asks for and the account stores: the bot id (`aib…`, not secret) and
/// its secret. Made by the login step; stable until the operator rotates them in the console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The bot id, as the console shows it (case-sensitive).
    pub bot_id: String,
    /// The bot's secret.
    pub secret: BotSecret,
}

impl Credentials {
    /// Builds credentials; the bot id is trimmed like the secret.
    pub fn new(bot_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            bot_id: bot_id.into().trim().to_owned(),
            secret: BotSecret::new(secret),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_never_prints() {
        let c = Credentials::new(" aibXYZ ", " hunter2\n");
        assert_eq!(c.bot_id, "aibXYZ");
        assert_eq!(c.secret.expose(), "hunter2");
        let shown = format!("{c:?} {} {:?}", c.secret, Some(&c.secret));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("[redacted]"));
    }
}
