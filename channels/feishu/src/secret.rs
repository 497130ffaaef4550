//! Secrets that must never reach a log line or a `Debug` dump.

use std::fmt;

/// A secret string (app secret, encrypt key, verification token, access token).
///
/// `Debug` and `Display` print `[redacted]`; read the value with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

/// The app secret of a Feishu / Lark app.
pub type AppSecret = Secret;

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Returns the secret value; call only where it goes on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

/// The credentials of one self-built app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// `cli_…` app id (not secret).
    pub app_id: String,
    /// The app secret.
    pub app_secret: AppSecret,
}

impl Credentials {
    /// Builds credentials from an app id and secret.
    pub fn new(app_id: impl Into<String>, app_secret: impl Into<Secret>) -> Self {
        Self {
            app_id: app_id.into(),
            app_secret: app_secret.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let c = Credentials::new("cli_a", "hunter2");
        let shown = format!("{c:?} {} {:?}", c.app_secret, c.app_secret);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("[redacted]"));
        assert_eq!(c.app_secret.expose(), "hunter2");
    }
}
