//! Secrets (the AppSecret, access tokens) wrapped so they never reach a log line or a `Debug` dump.

use std::fmt;

/// A secret string: an AppSecret or an `access_token`. Made by the caller (AppSecret, read from
/// the credential store) or by [`crate::token`] (access tokens). `Debug` and `Display` print
/// `[redacted]`; [`Secret::expose`] is the one way to the raw value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret, trimming surrounding whitespace (a pasted secret often ends in a newline).
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        let trimmed = value.trim();
        if trimmed.len() == value.len() {
            Secret(value)
        } else {
            Secret(trimmed.to_owned())
        }
    }

    /// The raw value; call only where it goes on the wire or into the credential store.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret::new(value)
    }
}

/// The credentials of one bot, as `login qq ACCOUNT` asks for them. The AppID is not secret
/// (it is in every request's `X-Union-Appid` header); the AppSecret is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The bot's AppID, a string of digits; sent as a JSON **string** (spec §1.2).
    pub app_id: String,
    /// The AppSecret.
    pub app_secret: Secret,
}

impl Credentials {
    /// Credentials from an AppID and AppSecret (both trimmed).
    pub fn new(app_id: impl Into<String>, app_secret: impl Into<Secret>) -> Self {
        Self {
            app_id: app_id.into().trim().to_owned(),
            app_secret: app_secret.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let c = Credentials::new(" 102000001 ", "hunter2-secret\n");
        let shown = format!("{c:?} {} {:?} {:?}", c.app_secret, c.app_secret, Some(&c));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("[redacted]"));
        assert_eq!(c.app_secret.expose(), "hunter2-secret");
        assert_eq!(c.app_id, "102000001");
    }
}
