//! Secrets that must never reach a log line or a `Debug` dump: the app secret, access tokens,
//! Stream tickets and session-webhook URLs (which carry a session key).

use std::fmt;

/// A secret string. `Debug` and `Display` print `[redacted]`; read it with [`Secret::expose`]
/// only where it goes on the wire or into the credential store.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value. Keep it out of logs.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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

/// The credentials of one enterprise-internal app (spec §1.1). Made by the login step from
/// what the owner types; stored by the daemon. Field names stay stable (the daemon stores them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// `clientId` (the old AppKey, `ding…`); not secret. For internal apps it is also the
    /// robot code (spec §3).
    pub client_id: String,
    /// `clientSecret` (the old AppSecret).
    pub client_secret: Secret,
}

impl Credentials {
    /// Builds credentials, trimming whitespace: a padded paste is the platform's most common
    /// `authFailed` (spec §5), and neither value can contain spaces.
    pub fn new(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into().trim().to_string(),
            client_secret: Secret::new(client_secret.into().trim().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print_and_credentials_are_trimmed() {
        let c = Credentials::new(" dingabc ", "hunter2\n");
        let shown = format!("{c:?} {} {:?}", c.client_secret, Some(&c.client_secret));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("[redacted]"));
        assert_eq!(c.client_id, "dingabc");
        assert_eq!(c.client_secret.expose(), "hunter2");
    }
}
